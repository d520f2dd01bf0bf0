"""The sidecar never gates a Kafka broker's pod: in the sidecar mode (the named container template,
and every example meant for a broker's pod) no probe asks /-/ready, which answers 503 until the
first complete poll; a pod of its own (standalone, cluster) keeps its readiness on /-/ready."""
from __future__ import annotations

import helm_python
import pytest
import yaml

from tests.deploy.helm.chart import CHART, Umbrella, ci_values, one, render

EXAMPLES = CHART / "examples"
PROBES = ("readinessProbe", "startupProbe", "livenessProbe")
STANDALONE = {"jmx": {"hostPort": "kafka-0.kafka-headless.kafka.svc:9999"}}
SIDECAR = {"mode": "sidecar", "jmx": {"hostPort": "127.0.0.1:5555"}}


def containers(node) -> list[dict]:
    """Every container (a mapping with a name and an image or probes) anywhere in a document."""
    found = []
    if isinstance(node, dict):
        if "name" in node and ("image" in node or any(p in node for p in PROBES)):
            found.append(node)
        for value in node.values():
            found.extend(containers(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(containers(value))
    return found


def gating(container_list: list[dict]) -> list[str]:
    """The probes that would hold a pod back on the sidecar's poll: a readiness probe of the
    sidecar's, or any probe asking /-/ready."""
    found = []
    for c in container_list:
        for probe in PROBES:
            spec = c.get(probe)
            if spec is None:
                continue
            if spec.get("httpGet", {}).get("path") == "/-/ready":
                found.append(f"{c['name']}.{probe} on /-/ready")
            elif probe == "readinessProbe" and c["name"] == "kafka-jmx-sidecar":
                found.append(f"{c['name']}.{probe}")
    return found


def sidecar_mode_values() -> dict[str, dict]:
    """Every values file (examples/ and ci/) that puts the container into a broker's pod."""
    files = {f"examples/{p.name}": yaml.safe_load(p.read_text()) or {} for p in sorted(EXAMPLES.glob("*values.yaml"))}
    files.update({f"ci/{name}": v for name, v in ci_values().items()})
    return {name: v for name, v in files.items() if v.get("mode") == "sidecar"}


@pytest.fixture(scope="module")
def umbrella():
    chart = Umbrella()
    try:
        yield chart
    finally:
        chart.remove()


def test_the_check_finds_a_probe_on_ready():
    # the check below can fail: the standalone Deployment's container is one it flags
    deployment = one(render(STANDALONE), "Deployment")
    assert gating(containers(deployment)) == ["kafka-jmx-sidecar.readinessProbe on /-/ready"]
    assert gating([{"name": "kafka", "startupProbe": {"httpGet": {"path": "/-/ready"}}}]) == \
        ["kafka.startupProbe on /-/ready"]


def test_there_are_sidecar_mode_values_to_check():
    assert {"examples/sidecar-values.yaml", "ci/sidecar-only-values.yaml"} <= set(sidecar_mode_values())


@pytest.mark.parametrize("name", sorted(sidecar_mode_values()))
def test_the_named_container_in_the_sidecar_mode_has_no_readiness(umbrella, name):
    values = sidecar_mode_values()[name]
    for extra in ({}, {"startupProbe": {"enabled": True}}):
        [container] = umbrella.pod_parts({**values, **extra}, "kafka-metrics")["containers"]
        assert gating([container]) == []
        assert "readinessProbe" not in container
        assert container["livenessProbe"]["httpGet"]["path"] == "/-/healthy"
        assert container.get("startupProbe", {"httpGet": {"path": "/-/healthy"}})["httpGet"]["path"] == "/-/healthy"


@pytest.mark.parametrize("path", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_no_example_gates_a_pod_on_the_sidecars_poll(path):
    # the examples written out for a broker's pod, and any other: no probe on /-/ready in them
    for doc in yaml.safe_load_all((EXAMPLES / path).read_text()):
        assert gating(containers(doc)) == [], path


def test_the_broker_pod_examples_carry_the_sidecar_with_liveness_on_healthy():
    # what the walk above must find for it to mean anything
    bitnami = yaml.safe_load((EXAMPLES / "bitnami-values.yaml").read_text())
    statefulset = yaml.safe_load((EXAMPLES / "statefulset.yaml").read_text())
    for found in (containers(bitnami["controller"]), containers(bitnami["broker"]), containers(statefulset)):
        sidecar = [c for c in found if c["name"] == "kafka-jmx-sidecar"]
        assert len(sidecar) == 1 and sidecar[0]["livenessProbe"]["httpGet"]["path"] == "/-/healthy"


@pytest.mark.parametrize("values", [SIDECAR, {**SIDECAR, "rules": {"existingConfigMap": "mine"}}])
def test_asking_for_readiness_in_the_sidecar_mode_is_refused_with_why(umbrella, values):
    with pytest.raises(helm_python.HelmError) as e:
        render({**values, "readinessProbe": {"enabled": True}})
    assert "readinessProbe.enabled: the sidecar mode puts the container into the BROKER's pod" in str(e.value)
    assert "rolling restart" in str(e.value)
    with pytest.raises(helm_python.HelmError, match="readinessProbe.enabled"):
        umbrella.pod_parts({**values, "readinessProbe": {"enabled": True}}, "kafka-metrics")
    # false says what the sidecar mode does anyway
    [container] = umbrella.pod_parts({**values, "readinessProbe": {"enabled": False}}, "kafka-metrics")["containers"]
    assert "readinessProbe" not in container


@pytest.mark.parametrize("values_file", ["default-values.yaml", "standalone-values.yaml", "cluster-wide-values.yaml",
                                         "all-options-values.yaml"])
def test_a_pod_of_its_own_keeps_readiness_on_ready(values_file):
    values = ci_values()[values_file]
    assert values.get("mode", "standalone") in ("standalone", "cluster")
    [container] = one(render(values), "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/-/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/-/healthy"


def test_a_pod_of_its_own_may_turn_readiness_off():
    [container] = one(render({**STANDALONE, "readinessProbe": {"enabled": False}}),
                      "Deployment")["spec"]["template"]["spec"]["containers"]
    assert "readinessProbe" not in container
