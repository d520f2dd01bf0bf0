"""The references that cannot drift: docs/configuration.md, docs/metrics.md and the JSON Schemas are
what the code's definitions make (`make docs`), every key and every family says what it is, and the
schema accepts every configuration the project ships or shows while refusing an unknown key, as
the parser does."""
from __future__ import annotations

import re
import textwrap
import tomllib
from dataclasses import fields
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

from kafka_jmx_sidecar.exporter.archive.settings import ARCHIVE, ArchiveSettings
from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile
from kafka_jmx_sidecar.exporter.config import reference
from kafka_jmx_sidecar.exporter.config.sidecar import SIDECAR, SidecarSettings
from kafka_jmx_sidecar.exporter.http.config_keys import HTTP_SERVER, WEB_CONFIG
from kafka_jmx_sidecar.exporter.reassignment.settings import REASSIGNMENT, ReassignmentSettings
from kafka_jmx_sidecar.exporter.reassignment.stage import SERIES
from kafka_jmx_sidecar.exporter.rule_engine.config_keys import CUSTOMIZER, JMX_EXPORTER, RULE, SSL
from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.mbeans import catalog, cluster_view

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = [b for top in (JMX_EXPORTER, SSL, RULE, CUSTOMIZER, SIDECAR, HTTP_SERVER, WEB_CONFIG) for b in top.walk()]
_FENCE = re.compile(r"^( *)```(yaml|yml)\n(.*?)^\1```$", re.S | re.M)


def test_the_generated_pages_and_schemas_are_current():
    stale = [path for path, text in reference.outputs().items()
             if not (ROOT / path).exists() or (ROOT / path).read_text(encoding="utf-8") != text]
    assert stale == [], f"out of date: {stale}; run `make docs`"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: ".".join(map(str, b.path)) or "top")
def test_every_key_says_what_it_does(block):
    assert block.doc.strip()
    assert [k.name for k in block.keys if not k.doc.strip() or not (k.type or k.block)] == []


def test_every_family_has_help():
    assert [name for name, *_, help_text, _when in reference._self_metrics() if not help_text.strip()] == []
    assert len(reference._self_metrics()) > 30  # each feature's families were made and found
    for families in reference._jmx_exporter_families().values():
        assert [name for name, (_, help_text) in families.items() if not help_text.strip()] == []
    assert [name for name, s in SERIES.items() if not s.help.strip() or s.type not in ("counter", "gauge")] == []
    # what the recompute and the cluster-wide view publish says what it means
    published = [s for s in catalog.HEALTH_MBEANS if s.shows] + list(cluster_view.TOTALS) + [cluster_view.OFFLINE_SPEC]
    assert [s.name for s in published if not s.meaning] == []
    assert set(cluster_view.VIEW_GAUGES) == {cluster_view.UNAVAILABLE, cluster_view.PLACEHOLDERS}


def test_the_settings_defaults_are_the_definitions_defaults():
    error = ConfigFile("F").error
    made = {k: v for k, v in SIDECAR.read({}, error).items() if v is not None}
    assert made == {f.name: getattr(SidecarSettings(), f.name) for f in fields(SidecarSettings) if f.name in made}
    assert ARCHIVE.read({"directory": "/a"}, error) == {**ArchiveSettings("/a").__dict__, "attributes": ("Value", "Count")}
    assert REASSIGNMENT.read({}, error) == ReassignmentSettings().__dict__


# --- the schema ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def schema():
    return jsonschema.Draft202012Validator(reference.file_schema())


def _doc_examples() -> list[tuple[str, str, str]]:
    """(page:line, fence, text) of every YAML example of the README and docs/."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        found += [(f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", m.group(2),
                   textwrap.dedent(m.group(3))) for m in _FENCE.finditer(text)]
    return found


def _shipped_configs() -> list[tuple[str, str]]:
    """The configuration files the project ships: the rule files (and the chart's copies)."""
    paths = sorted(ROOT.glob("rules/*.yml")) + sorted(ROOT.glob("helm/kafka-jmx-sidecar/files/kafka-*.yml"))
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in paths]


def _is_configuration(text: str) -> bool:
    """A configuration example (not an alert rule or a Prometheus configuration): its first key is one."""
    data = yaml.safe_load(text)
    return isinstance(data, dict) and bool(data) and next(iter(data)) in JMX_EXPORTER.by_name


def _config_examples():
    examples = [(where, text) for where, fence, text in _doc_examples() if fence == "yaml" and _is_configuration(text)]
    assert len(examples) >= 15  # a pattern that found none would pass whatever the pages say
    return examples + _shipped_configs()


@pytest.mark.parametrize("where, text", _config_examples(), ids=lambda v: v if ":" in v or v.endswith(".yml") else "")
def test_the_schema_accepts_every_shipped_and_documented_configuration(schema, where, text):
    errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in schema.iter_errors(yaml.safe_load(text))]
    assert errors == [], where


def test_the_schema_accepts_the_charts_configurations(schema):
    from tests.deploy.helm.chart import ci_values, render

    checked = 0
    for name, values in ci_values().items():
        for doc in render(values):
            if doc["kind"] == "ConfigMap" and "config.yml" in doc.get("data", {}):
                data = yaml.safe_load(doc["data"]["config.yml"])
                assert [e.message for e in schema.iter_errors(data)] == [], name
                checked += 1
    assert checked >= 5


def test_the_web_config_schema_accepts_the_documented_web_config():
    validator = jsonschema.Draft202012Validator(reference.web_config_schema())
    examples = [text for _, fence, text in _doc_examples() if fence == "yml" and "tls_server_config" in text]
    assert examples
    for text in examples:
        assert [e.message for e in validator.iter_errors(yaml.safe_load(text))] == []
    assert not validator.is_valid({"tls_server_config": {"cert_file": "a", "key_file": "b", "ceert": 1}})
    assert not validator.is_valid({"rate_limit": {"interval": "1s"}})


# Files the parser refuses (an error, or a warning `check-config` refuses) and the schema too.
REFUSED = {
    "an unknown top-level key": "hostPort: h:1\nlowercaseOutputNames: true\n",
    "an unknown sidecar key": "sidecar:\n  pollInterval: 15\n",
    "an unknown archive key": "sidecar:\n  archive:\n    directory: /a\n    retention: 5\n",
    "an unknown admin tls key": "sidecar:\n  admin:\n    bootstrapServers: k:9092\n    tls: {caFiles: /a}\n",
    "an unknown rule key": "rules:\n  - pattern: x\n    nmae: y\n",
    "an unknown ssl key": "ssl:\n  trustStores: /a\n",
    "an unknown httpServer key": "httpServer:\n  authentication:\n    basics: {}\n",
    "a wrong type": "sidecar:\n  connections: 0\n",
    "a value out of its choices": "sidecar:\n  naming: 2.x\n",
    "a missing required key": "sidecar:\n  archive:\n    retentionHours: 5\n",
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_the_schema_refuses_what_the_parser_refuses(schema, text, tmp_path):
    assert not schema.is_valid(yaml.safe_load(text))
    path = tmp_path / "F.yml"
    path.write_text(text if text.startswith("hostPort") else "hostPort: h:1\n" + text)
    try:
        loaded = load(str(path))
    except ConfigError:
        return
    assert loaded.config.mistakes  # a warning that check-config refuses


def test_the_schemas_are_in_the_wheel():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = package_data["kafka_jmx_sidecar.exporter.config"]
    for name in (reference.SCHEMA, reference.WEB_SCHEMA):
        assert any(fnmatch(name, p) for p in patterns)
        assert (resources.files("kafka_jmx_sidecar.exporter.config") / name).is_file()
