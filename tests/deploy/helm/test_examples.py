"""The worked examples under helm/kafka-jmx-sidecar/examples/: each parsed or rendered, its sidecar
container and volumes equal to what the named templates render today, and the resulting Pod spec
valid for Kubernetes 1.27 and 1.33."""
from __future__ import annotations

import pytest
import yaml

from tests.deploy.helm.chart import (
    CHART, KUBE_VERSIONS, Umbrella, config_file, k8s_errors, manifest_errors, one, render,
)

EXAMPLES = CHART / "examples"
SIDECAR_RELEASE = "kafka-metrics"  # the release name examples/sidecar-values.yaml is installed as


def load(name: str):
    return yaml.safe_load((EXAMPLES / name).read_text())


@pytest.fixture(scope="module")
def named():
    """What "kafka-jmx-sidecar.container" and "kafka-jmx-sidecar.volumes" render for the examples'
    sidecar values, included from a chart that depends on this one."""
    umbrella = Umbrella()
    try:
        yield umbrella.pod_parts(load("sidecar-values.yaml"), SIDECAR_RELEASE)
    finally:
        umbrella.remove()


def pod(containers: list[dict], volumes: list[dict]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kafka-0", "namespace": "kafka"},
            "spec": {"containers": containers, "volumes": volumes}}


def test_the_sidecar_values_render_the_configmap_the_examples_mount(named):
    docs = render(load("sidecar-values.yaml"), release=SIDECAR_RELEASE)
    assert sorted(d["kind"] for d in docs) == ["ConfigMap", "PodMonitor"]
    assert [e for d in docs for e in manifest_errors(d)] == []
    configmap = one(docs, "ConfigMap")["metadata"]["name"]
    assert {"name": "kafka-jmx-sidecar-config", "configMap": {"name": configmap}} in named["volumes"]
    assert yaml.safe_load(config_file(docs, SIDECAR_RELEASE))["hostPort"] == "127.0.0.1:5555"
    # the PodMonitor selects the broker pods of examples/statefulset.yaml (and Bitnami's)
    statefulset = load("statefulset.yaml")
    selector = one(docs, "PodMonitor")["spec"]["selector"]["matchLabels"]
    assert selector.items() <= statefulset["spec"]["template"]["metadata"]["labels"].items()


def test_the_named_template_renders_a_hardened_sidecar(named):
    [container] = named["containers"]
    assert container["name"] == "kafka-jmx-sidecar"
    assert container["args"] == ["--config", "/etc/kafka-jmx-sidecar/config.yml"]
    assert container["securityContext"]["runAsUser"] == 10001
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert [p["containerPort"] for p in container["ports"]] == [9404]


@pytest.mark.parametrize("section", ["controller", "broker"])
def test_bitnami_values_carry_the_named_templates_output(named, section):
    values = load("bitnami-values.yaml")
    assert values["metrics"]["jmx"]["enabled"] is False
    part = values[section]
    assert part["sidecars"] == named["containers"]
    assert part["extraVolumes"] == named["volumes"]
    env = {e["name"]: e["value"] for e in part["extraEnvVars"]}
    assert env["JMX_PORT"] == "5555"  # the port the sidecar's hostPort names
    assert "-Djava.rmi.server.hostname=127.0.0.1" in env["KAFKA_JMX_OPTS"].split()
    # the Pod Bitnami's chart makes: its Kafka container plus `sidecars`, its volumes plus `extraVolumes`
    kafka = {"name": "kafka", "image": "bitnami/kafka:4.0", "env": part["extraEnvVars"]}
    manifest = pod([kafka, *part["sidecars"]], part["extraVolumes"])
    assert [e for v in KUBE_VERSIONS for e in k8s_errors(manifest, v)] == []


def test_the_statefulset_example_carries_the_named_templates_output(named):
    statefulset = load("statefulset.yaml")
    assert [e for v in KUBE_VERSIONS for e in k8s_errors(statefulset, v)] == []
    spec = statefulset["spec"]["template"]["spec"]
    assert [c for c in spec["containers"] if c["name"] == "kafka-jmx-sidecar"] == named["containers"]
    assert [v for v in spec["volumes"] if v["name"].startswith("kafka-jmx-sidecar-")] == named["volumes"]
    kafka = next(c for c in spec["containers"] if c["name"] == "kafka")
    env = {e["name"]: e["value"] for e in kafka["env"]}
    assert env["JMX_PORT"] == "5555"
    pod_spec = pod(spec["containers"], spec["volumes"])
    pod_spec["spec"]["containers"][0]["volumeMounts"] = []  # the claim template's volume is not in a bare Pod
    assert [e for v in KUBE_VERSIONS for e in k8s_errors(pod_spec, v)] == []


def test_strimzi_values_render_one_release_for_the_whole_cluster():
    # what each broker's sidecar reads and with which credentials; the labels Strimzi's dashboards
    # need are proven in test_cluster_release.py
    values = load("strimzi-values.yaml")
    docs = render(values, release="my-cluster-metrics")
    assert sorted(d["kind"] for d in docs) == ["ConfigMap"] * 3 + ["Deployment"] * 3 + ["NetworkPolicy", "PodMonitor", "Service"]
    assert [e for d in docs for e in manifest_errors(d)] == []
    for deployment in (d for d in docs if d["kind"] == "Deployment"):
        name = deployment["metadata"]["name"]
        broker = name.removeprefix("my-cluster-metrics-kafka-jmx-sidecar-")
        config = yaml.safe_load(one(docs, "ConfigMap", name)["data"]["config.yml"])
        assert config["hostPort"] == f"{broker}.my-cluster-kafka-brokers.kafka.svc:9999"
        assert (config["username"], config["password"]) == ("${JMX_USERNAME}", "${JMX_PASSWORD}")
        env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        assert {e["name"]: e["valueFrom"]["secretKeyRef"] for e in env} == {
            "JMX_USERNAME": {"name": "my-cluster-kafka-jmx", "key": "jmx-username"},
            "JMX_PASSWORD": {"name": "my-cluster-kafka-jmx", "key": "jmx-password"}}
