"""The chart as the tests see it: rendered offline by the Helm SDK (helm-python-sdk, the `helm
template` of Helm's Go library), its manifests checked against Kubernetes' own schemas
(kubernetes-validate) and the custom resources against their CRD schemas kept in crds/.

    docs = render({"jmx": {"hostPort": "kafka-0:9999"}})
    pod = named_templates({"mode": "sidecar", ...}, release="kafka-metrics")  # {"containers", "volumes"}
"""
from __future__ import annotations

import functools
import json
import shutil
import tempfile
from pathlib import Path

import helm_python
import jsonschema
import kubernetes_validate
import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "helm" / "kafka-jmx-sidecar"
CRDS = Path(__file__).resolve().parent / "crds"
KUBE_VERSIONS = ("1.27.0", "1.33.0")
RELEASE, NAMESPACE = "kjs", "kafka"

CRD_SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com_v1_servicemonitor.json",
    ("monitoring.coreos.com/v1", "PodMonitor"): "monitoring.coreos.com_v1_podmonitor.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "monitoring.coreos.com_v1_prometheusrule.json",
    ("sparkoperator.k8s.io/v1beta2", "SparkApplication"): "sparkoperator.k8s.io_v1beta2_sparkapplication.json",
}


def ci_values() -> dict[str, dict]:
    return {p.name: yaml.safe_load(p.read_text()) or {} for p in sorted((CHART / "ci").glob("*.yaml"))}


@functools.lru_cache(maxsize=None)
def _chart(path: str) -> helm_python.Chart:
    return helm_python.Chart.load(path)


def render_files(values: dict, release: str = RELEASE, chart: Path = CHART,
                 api_versions: tuple[str, ...] = ()) -> dict[str, str]:
    """api_versions: what .Capabilities.APIVersions has besides the built-in ones, as `helm template
    --api-versions` adds them (Chart.render does not pass them on; the library's render takes them)."""
    if not api_versions:
        return _chart(str(chart)).render(values, name=release, namespace=NAMESPACE, is_install=True)
    options = {"name": release, "namespace": NAMESPACE, "is_install": True, "api_versions": list(api_versions)}
    return json.loads(helm_python._native.call_string(
        "helm_render", _chart(str(chart))._raw(), json.dumps(values), json.dumps(options)))


def render(values: dict, release: str = RELEASE, api_versions: tuple[str, ...] = ()) -> list[dict]:
    """Every manifest the chart renders for `values`, parsed."""
    docs = []
    for path, text in render_files(values, release, api_versions=api_versions).items():
        if path.endswith(".yaml"):
            docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def one(docs: list[dict], kind: str, name: str | None = None) -> dict:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''} in {[d['kind'] for d in docs]}"
    return found[0]


def config_file(docs: list[dict], release: str = RELEASE, broker: str = "") -> str:
    """The config file of the release's sidecar, or of one broker's with `brokers`."""
    name = f"{release}-kafka-jmx-sidecar" + (f"-{broker}" if broker else "")
    return one(docs, "ConfigMap", name)["data"]["config.yml"]


def k8s_errors(doc: dict, version: str) -> list[str]:
    """kubernetes-validate --strict for one manifest of a built-in kind: [] or the errors."""
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{doc['kind']}/{doc['metadata'].get('name')} on {version}: {e.message} at {list(e.path)}"]
    return []


@functools.lru_cache(maxsize=None)
def _crd_validator(file: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((CRDS / file).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def is_custom(doc: dict) -> bool:
    return (doc["apiVersion"], doc["kind"]) in CRD_SCHEMAS


def crd_errors(doc: dict) -> list[str]:
    validator = _crd_validator(CRD_SCHEMAS[(doc["apiVersion"], doc["kind"])])
    return [f"{doc['kind']}/{doc['metadata']['name']}: {e.message} at {list(e.path)}"
            for e in validator.iter_errors(doc)]


def manifest_errors(doc: dict) -> list[str]:
    """The CRD schema for a custom resource, else Kubernetes' schema of every version tested."""
    if is_custom(doc):
        return crd_errors(doc)
    return [e for v in KUBE_VERSIONS for e in k8s_errors(doc, v)]


class Umbrella:
    """A chart of the user's own that has this chart as a dependency (under charts/) and includes
    its named templates, as a user does to put the sidecar into a broker pod of their own chart."""

    TEMPLATE = """containers:
  {{- include "kafka-jmx-sidecar.container" (index .Subcharts "kafka-jmx-sidecar") | trim | nindent 2 }}
volumes:
  {{- include "kafka-jmx-sidecar.volumes" (index .Subcharts "kafka-jmx-sidecar") | trim | nindent 2 }}
"""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="kjs-umbrella-")) / "brokers"
        (self.directory / "templates").mkdir(parents=True)
        shutil.copytree(CHART, self.directory / "charts" / "kafka-jmx-sidecar")
        (self.directory / "Chart.yaml").write_text(
            "apiVersion: v2\nname: brokers\nversion: 0.1.0\n"
            "dependencies:\n  - name: kafka-jmx-sidecar\n    version: 0.1.0\n")
        (self.directory / "templates" / "pod.yaml").write_text(self.TEMPLATE)

    def pod_parts(self, values: dict, release: str, api_versions: tuple[str, ...] = ()) -> dict:
        files = render_files({"kafka-jmx-sidecar": values}, release, chart=self.directory, api_versions=api_versions)
        return yaml.safe_load(files["brokers/templates/pod.yaml"])

    def remove(self) -> None:
        shutil.rmtree(self.directory.parent, ignore_errors=True)
