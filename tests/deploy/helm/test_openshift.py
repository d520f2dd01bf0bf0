"""OpenShift: global.compatibility.openshift.adaptSecurityContext (auto, force, disabled, as Bitnami's
charts have it) and every pod the chart makes, held to the rules of OpenShift's default SCC,
restricted-v2: a uid and fsGroup from the namespace's range (so none of the chart's own), no
privilege escalation, every capability dropped (NET_BIND_SERVICE alone may be added back), the
seccomp profile runtime/default, no SELinux options of its own, no host namespaces, ports or paths,
and only the volume types it allows."""
from __future__ import annotations

import copy

import helm_python
import pytest

from tests.deploy.helm.chart import Umbrella, ci_values, manifest_errors, one, render, render_files

OPENSHIFT = ("security.openshift.io/v1",)  # the API group `auto` looks for, as a cluster serves it
CI = ci_values()
# every kind of pod: the Deployment (with every option), the backfill Job, the SparkApplication
ALL = CI["all-options-values.yaml"]
SPARK = CI["backfill-spark-operator-values.yaml"]
SIDECAR = {"mode": "sidecar", "jmx": {"hostPort": "127.0.0.1:5555"}}
IDS = ("runAsUser", "runAsGroup", "fsGroup")
VOLUME_TYPES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim",
                "projected", "secret"}


def adapt(values: dict, how: str) -> dict:
    return {**values, "global": {"compatibility": {"openshift": {"adaptSecurityContext": how}}}}


def container_violations(c: dict, pod_seccomp: bool) -> list[str]:
    sc, name = c.get("securityContext", {}), c.get("name", "container")
    out = [f"{name}: {key} {sc[key]} (the SCC assigns it)" for key in IDS if key in sc]
    if sc.get("allowPrivilegeEscalation") is not False:
        out.append(f"{name}: allowPrivilegeEscalation is not false")
    if sc.get("privileged"):
        out.append(f"{name}: privileged")
    caps = sc.get("capabilities", {})
    if "ALL" not in caps.get("drop", []):
        out.append(f"{name}: capabilities.drop lacks ALL")
    if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
        out.append(f"{name}: adds capabilities {caps['add']}")
    if sc.get("seccompProfile", {"type": "RuntimeDefault"} if pod_seccomp else {}).get("type") != "RuntimeDefault":
        out.append(f"{name}: seccomp is not RuntimeDefault")
    if sc.get("seLinuxOptions"):
        out.append(f"{name}: seLinuxOptions (the SCC assigns them)")
    if any(p.get("hostPort") for p in c.get("ports", [])):
        out.append(f"{name}: hostPort")
    return out


def restricted_v2_violations(pod: dict) -> list[str]:
    """What restricted-v2 would refuse in a pod spec (or a SparkApplication's driver/executor, whose
    securityContext is the container's): [] when it admits the pod as it is."""
    psc = pod.get("podSecurityContext", pod.get("securityContext", {})) if "containers" in pod else {}
    out = [f"pod: {key} {psc[key]} (the SCC assigns it)" for key in IDS if key in psc]
    if psc.get("seLinuxOptions"):
        out.append("pod: seLinuxOptions")
    out += [f"pod: {key}" for key in ("hostNetwork", "hostPID", "hostIPC") if pod.get(key)]
    pod_seccomp = psc.get("seccompProfile", {}).get("type") == "RuntimeDefault"
    containers = pod.get("containers", []) + pod.get("initContainers", [])
    if "containers" not in pod:  # a SparkApplication's driver or executor: the container's fields
        containers = [{"name": "spark", "securityContext": pod.get("securityContext", {})}]
    out += [v for c in containers for v in container_violations(c, pod_seccomp)]
    for volume in pod.get("volumes", []):
        kind = next(k for k in volume if k != "name")
        if kind not in VOLUME_TYPES:
            out.append(f"volume {volume['name']}: {kind}")
    return out


def pods(docs: list[dict]) -> dict[str, dict]:
    """Every pod spec the manifests make, by a name for the assertion messages."""
    out = {}
    for doc in docs:
        if doc["kind"] in ("Deployment", "Job"):
            out[doc["kind"]] = doc["spec"]["template"]["spec"]
        elif doc["kind"] == "SparkApplication":
            volumes = doc["spec"]["volumes"]
            out["SparkApplication driver"] = {**doc["spec"]["driver"], "volumes": volumes}
            out["SparkApplication executor"] = {**doc["spec"]["executor"], "volumes": volumes}
    return out


def every_pod(how: str, api_versions: tuple[str, ...] = ()) -> dict[str, dict]:
    found = {}
    for values in (ALL, SPARK):
        found.update(pods(render(adapt(values, how), api_versions=api_versions)))
    assert set(found) == {"Deployment", "Job", "SparkApplication driver", "SparkApplication executor"}
    return found


@pytest.mark.parametrize("how, api_versions", [("auto", OPENSHIFT), ("force", ()), ("force", OPENSHIFT)],
                         ids=["auto-on-openshift", "force", "force-on-openshift"])
def test_adapted_pods_pass_restricted_v2(how, api_versions):
    for name, pod in every_pod(how, api_versions).items():
        assert restricted_v2_violations(pod) == [], name


@pytest.mark.parametrize("how, api_versions", [("auto", ()), ("disabled", OPENSHIFT), ("disabled", ())],
                         ids=["auto-elsewhere", "disabled-on-openshift", "disabled"])
def test_unadapted_pods_keep_the_images_user_which_restricted_v2_refuses(how, api_versions):
    for name, pod in every_pod(how, api_versions).items():
        # the checker can fail: the fixed ids are exactly what it refuses, nothing else
        violations = restricted_v2_violations(pod)
        assert violations and all("10001 (the SCC assigns it)" in v for v in violations), (name, violations)


def test_adapting_drops_the_ids_and_nothing_else_and_the_manifests_stay_valid():
    plain = render(adapt(ALL, "disabled"))
    adapted = render(adapt(ALL, "force"))
    expected = copy.deepcopy(one(plain, "Deployment"))
    spec = expected["spec"]["template"]["spec"]
    for context in [spec["securityContext"]] + [c["securityContext"] for c in spec["containers"]]:
        for key in IDS:
            context.pop(key, None)
    assert one(adapted, "Deployment") == expected
    kept = spec["containers"][0]["securityContext"]
    assert kept["runAsNonRoot"] and kept["readOnlyRootFilesystem"] and kept["capabilities"] == {"drop": ["ALL"]}
    assert [e for d in adapted for e in manifest_errors(d)] == []


def test_the_sidecar_modes_container_is_adapted_in_the_broker_pod():
    umbrella = Umbrella()
    try:
        for api_versions, ids in (((), True), (OPENSHIFT, False)):
            container = umbrella.pod_parts(SIDECAR, "kafka-metrics", api_versions)["containers"][0]
            assert ("runAsUser" in container["securityContext"]) is ids
            if not ids:
                assert container_violations(container, pod_seccomp=False) == []
    finally:
        umbrella.remove()


def test_an_unknown_setting_is_refused_by_name():
    with pytest.raises(helm_python.HelmError) as e:
        render(adapt(ALL, "yes"))
    assert "/global/compatibility/openshift/adaptSecurityContext" in str(e.value)


def test_notes_say_the_ids_are_the_sccs_and_that_the_backfill_cannot_run_so():
    def notes(values: dict, api_versions: tuple[str, ...] = ()) -> str:
        return render_files(values, api_versions=api_versions)["kafka-jmx-sidecar/templates/NOTES.txt"]
    backfill = {**SIDECAR, "backfill": ALL["backfill"]}
    text = notes(backfill, OPENSHIFT)
    assert "left to the namespace's SCC" in text and "nonroot-v2" in text
    assert "nonroot-v2" not in notes(SIDECAR, OPENSHIFT)
    assert "OpenShift" not in notes(backfill) and "OpenShift" not in notes(adapt(backfill, "disabled"), OPENSHIFT)
