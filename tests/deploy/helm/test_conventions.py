"""What users of prometheus-community's and Bitnami's charts expect of this one: commonLabels and
commonAnnotations on every object, jobLabel and the scrape limits on the monitors, a hint about
the Prometheus release label, Artifact Hub's annotations in Chart.yaml, and a values schema that
knows every key and refuses any other by name."""
from __future__ import annotations

import helm_python
import pytest
import yaml

from tests.deploy.helm.chart import CHART, REPO, ci_values, one, render, render_files

CI = ci_values()
ALL = CI["all-options-values.yaml"]
STANDALONE = {"jmx": {"hostPort": "kafka-0.kafka-headless.kafka.svc:9999"}}
EVERY_KIND = [ALL, CI["backfill-spark-operator-values.yaml"], {**CI["sidecar-only-values.yaml"], "dashboard": {"enabled": True}}]
COMMON = {"commonLabels": {"team": "kafka", "cost-centre": "42"}, "commonAnnotations": {"example.com/owner": "kafka-team"}}


def pod_templates(doc: dict) -> list[dict]:
    """The metadata of the pods an object makes (Deployment, Job, SparkApplication)."""
    if doc["kind"] in ("Deployment", "Job"):
        return [doc["spec"]["template"]["metadata"]]
    if doc["kind"] == "SparkApplication":
        return [doc["spec"]["driver"], doc["spec"]["executor"]]
    return []


@pytest.mark.parametrize("values", EVERY_KIND, ids=["all-options", "spark-operator", "sidecar"])
def test_common_labels_and_annotations_are_on_every_object(values):
    docs = render({**values, **COMMON})
    assert docs
    for doc in docs:
        meta = doc["metadata"]
        assert COMMON["commonLabels"].items() <= meta["labels"].items(), doc["kind"]
        assert "example.com/owner" in meta["annotations"], doc["kind"]
        # the chart's own labels stay, whatever commonLabels says
        assert meta["labels"]["app.kubernetes.io/name"] == "kafka-jmx-sidecar"
        for pod in pod_templates(doc):
            assert COMMON["commonLabels"].items() <= pod["labels"].items(), doc["kind"]


def test_common_labels_cover_every_kind_the_chart_renders():
    kinds = {d["kind"] for v in EVERY_KIND for d in render({**v, **COMMON})}
    assert kinds == {"ConfigMap", "Deployment", "Job", "NetworkPolicy", "PodMonitor", "PrometheusRule", "Service",
                     "ServiceAccount", "ServiceMonitor", "SparkApplication"}


def test_an_objects_own_metadata_wins_over_the_common_and_the_charts_over_both():
    docs = render({**ALL, "commonLabels": {"tier": "common", "app.kubernetes.io/name": "mine"},
                   "commonAnnotations": {"example.com/owner": "common", "example.com/other": "x"}})
    service = one(docs, "Service")["metadata"]
    assert service["labels"]["tier"] == "monitoring"  # service.labels
    assert service["annotations"] == {"example.com/owner": "kafka", "example.com/other": "x"}
    assert service["labels"]["app.kubernetes.io/name"] == "kafka-jmx-sidecar"
    deployment = one(docs, "Deployment")
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert one(docs, "ServiceMonitor")["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_no_common_metadata_leaves_objects_as_they_were():
    for doc in render({**STANDALONE, "serviceMonitor": {"enabled": True}}):
        assert "annotations" not in doc["metadata"], doc["kind"]
        assert "team" not in doc["metadata"]["labels"]


@pytest.mark.parametrize("kind, key", [("ServiceMonitor", "serviceMonitor"), ("PodMonitor", "podMonitor")])
def test_job_label_and_scrape_limits_reach_the_monitors(kind, key):
    spec = one(render(ALL), kind)["spec"]
    assert (spec["jobLabel"], spec["sampleLimit"], spec["labelLimit"]) == \
        (ALL[key]["jobLabel"], ALL[key]["sampleLimit"], ALL[key]["labelLimit"])
    default = one(render({**STANDALONE, key: {"enabled": True}}), kind)["spec"]
    assert not {"jobLabel", "sampleLimit", "labelLimit"} & set(default)


@pytest.mark.parametrize("key", ["serviceMonitor", "podMonitor"])
def test_notes_say_a_monitor_needs_the_prometheus_release_label(key):
    def notes(values: dict) -> str:
        return render_files(values)["kafka-jmx-sidecar/templates/NOTES.txt"]
    assert f"--set {key}.labels.release=kube-prometheus-stack" in notes({**STANDALONE, key: {"enabled": True}})
    labelled = notes({**STANDALONE, key: {"enabled": True, "labels": {"release": "prom"}}})
    assert "release=kube-prometheus-stack" not in labelled
    values_text = (CHART / "values.yaml").read_text()
    assert "labels: {release: kube-prometheus-stack}" in values_text


def test_notes_of_the_sidecar_mode_say_why_there_is_no_readiness_probe():
    text = render_files({"mode": "sidecar", "jmx": {"hostPort": "127.0.0.1:5555"}})["kafka-jmx-sidecar/templates/NOTES.txt"]
    assert "no readiness probe, on purpose" in text


def test_chart_yaml_carries_sources_kube_version_and_artifact_hub_annotations():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["kubeVersion"] == ">=1.27.0-0"
    assert all(s.startswith("https://github.com/kafka-jmx-sidecar/") for s in chart["sources"])
    annotations = chart["annotations"]
    license_line = next(line for line in (REPO / "pyproject.toml").read_text().splitlines() if line.startswith("license"))
    assert annotations["artifacthub.io/license"] == "Apache-2.0" and "Apache-2.0" in license_line
    links = yaml.safe_load(annotations["artifacthub.io/links"])
    assert links and all(set(link) == {"name", "url"} and link["url"].startswith("https://") for link in links)
    for link in links:
        if "/blob/main/" in link["url"]:  # a page of this repository: it exists
            assert (REPO / link["url"].split("/blob/main/", 1)[1]).is_file(), link
    # the images the chart renders by default, at its appVersion
    images = {i["name"]: i["image"] for i in yaml.safe_load(annotations["artifacthub.io/images"])}
    docs = render({**STANDALONE, "backfill": ALL["backfill"]})
    rendered = {one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"],
                one(docs, "Job")["spec"]["template"]["spec"]["containers"][0]["image"]}
    assert set(images.values()) == rendered
    assert all(image.endswith(f":{chart['appVersion']}") for image in images.values())


@pytest.mark.parametrize("values, says", [
    ({**STANDALONE, "commonLabel": {"team": "kafka"}}, "additional properties 'commonLabel' not allowed"),
    ({**STANDALONE, "commonLabels": {"team": 42}}, "at '/commonLabels/team'"),
    ({**STANDALONE, "serviceMonitor": {"joblabel": "app"}}, "at '/serviceMonitor': additional properties 'joblabel' not allowed"),
    ({**STANDALONE, "podMonitor": {"sampleLimit": -1}}, "at '/podMonitor/sampleLimit'"),
    ({**STANDALONE, "podMonitor": {"labelLimit": "30"}}, "at '/podMonitor/labelLimit'"),
])
def test_unknown_or_wrong_keys_are_refused_by_name(values, says):
    with pytest.raises(helm_python.HelmError) as e:
        render(values)
    assert says in str(e.value)


def test_every_key_of_values_yaml_is_in_the_schema_and_the_new_ones_are_described():
    import json
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def missing(v: dict, s: dict, path: str) -> list[str]:
        out = []
        for key, value in v.items():
            sub = s.get("properties", {}).get(key)
            if sub is None:
                if s.get("additionalProperties") is False:
                    out.append(f"{path}{key}")
            elif isinstance(value, dict):
                out.extend(missing(value, sub, f"{path}{key}."))
        return out
    assert missing(values, schema, "") == []
    props = schema["properties"]
    described = [props["commonLabels"], props["commonAnnotations"], props["readinessProbe"], props["livenessProbe"],
                 *(props[m]["properties"][k] for m in ("serviceMonitor", "podMonitor")
                   for k in ("jobLabel", "sampleLimit", "labelLimit", "labels"))]
    assert all(p.get("description") for p in described)
