"""What users of prometheus-community's and Bitnami's charts expect of this one: commonLabels and
commonAnnotations on every object, jobLabel and the scrape limits on the monitors, a hint about
the Prometheus release label, Artifact Hub's annotations in Chart.yaml, a values schema that
knows every key, describes each and refuses any other by name, and the chart README's values table
as scripts/chart-values-table writes it from values.yaml."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import shutil
import subprocess
import sys

import helm_python
import pytest
import yaml

from tests.deploy.helm.chart import CHART, KUBE_VERSIONS, REPO, ci_values, one, render, render_files

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
    # the oldest Kubernetes the manifests are validated against (-0: its pre-releases and vendor builds too)
    assert chart["kubeVersion"] == f">={KUBE_VERSIONS[0]}-0"
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


def test_every_key_of_values_yaml_is_in_the_schema():
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


def undescribed(node, path: str = "") -> list[str]:
    """Every property of a JSON schema, wherever it is (nested, under items, oneOf, $defs), that
    has no description."""
    out = []
    if isinstance(node, dict):
        for key, sub in node.get("properties", {}).items():
            if not (isinstance(sub, dict) and sub.get("description")):
                out.append(f"{path}{key}")
        for key, sub in node.items():
            out.extend(undescribed(sub, path if key == "properties" else f"{path}{key}/"))
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            out.extend(undescribed(sub, f"{path}{i}/"))
    return out


def test_every_property_of_the_values_schema_has_a_description():
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert undescribed(schema) == []
    # the walk finds one anywhere: here under a oneOf branch's items
    assert undescribed({"properties": {"a": {"description": "x", "oneOf": [
        {"items": {"properties": {"b": {"type": "string"}}}}]}}}) == ["a/oneOf/0/items/b"]


def values_table():
    """scripts/chart-values-table, imported (its file name has no .py)."""
    loader = importlib.machinery.SourceFileLoader("chart_values_table", str(REPO / "scripts" / "chart-values-table"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def test_the_chart_readmes_values_table_is_the_one_values_yaml_makes(tmp_path):
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "chart-values-table"), "--check"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"{run.stderr} (the values table is written by: make chart-readme)"
    # a stale table fails the check, and the message names the command
    for name in ("README.md", "values.yaml", "values.schema.json"):
        shutil.copy(CHART / name, tmp_path / name)
    with (tmp_path / "values.yaml").open("a") as f:
        f.write("\n# a key the table does not have yet\nnewKey: 1\n")
    stale = subprocess.run([sys.executable, str(REPO / "scripts" / "chart-values-table"), "--check", "--chart",
                            str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert stale.returncode == 1 and "make chart-readme" in stale.stderr, stale.stderr
    # and writing it brings the key in
    subprocess.run([sys.executable, str(REPO / "scripts" / "chart-values-table"), "--chart", str(tmp_path)], check=True)
    assert "| `newKey` | `1` | a key the table does not have yet |" in (tmp_path / "README.md").read_text()


def test_the_values_table_takes_comments_else_the_schemas_descriptions():
    text = """# the file's own opening words
#
# the mode
mode: a
image:
  # default: the appVersion
  tag: ""
  pullPolicy: Always
probe:
  # enabled: true
  period: 10
resources: {requests: {cpu: 1}}
# list:
#   first   one item, whose text
#           runs on
#   second  another <one>
# jmx.* too
names: []
"""
    schema = {"properties": {
        "mode": {"description": "unused: the comment wins"},
        "image": {"properties": {"tag": {}, "pullPolicy": {"description": "from the schema"}}},
        "probe": {"properties": {"enabled": {}, "period": {"description": "seconds"}}},
        "resources": {"description": "free-form: one row"},
        "names": {}}}
    assert values_table().table(text, schema).splitlines() == [
        "| key | default | description |",
        "|---|---|---|",
        '| `mode` | `"a"` | the mode |',
        '| `image.tag` | `""` | default: the appVersion |',
        '| `image.pullPolicy` | `"Always"` | from the schema |',
        "| `probe.period` | `10` | seconds |",
        '| `resources` | `{"requests": {"cpu": 1}}` | free-form: one row |',
        "| `names` | `[]` | list:<br>&nbsp;&nbsp;first one item, whose text runs on"
        "<br>&nbsp;&nbsp;second another &lt;one&gt;<br>jmx.\\* too |",
    ]


def test_every_row_of_the_values_table_is_described():
    module = values_table()
    text = (CHART / "values.yaml").read_text()
    rows = module.rows(yaml.safe_load(text), json.loads((CHART / "values.schema.json").read_text()),
                       module.comments(text))
    assert len(rows) > 100 and [path for path, _, description in rows if not description] == []
