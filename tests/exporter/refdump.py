"""Readers for the reference captures in ../shared/reference/kafka-4.1 (test helpers).

`read_dump` turns `all-kafka-mbeans-full.txt` into MBeans:

    kafka.server:type=ReplicaManager,name=LeaderCount   [com.yammer...JmxReporter$Gauge]
        Value : java.lang.Object = 5  (java.lang.Integer)

The dump has no attribute descriptions. Yammer (and AppInfo) MBeans describe every attribute as
"Attribute exposed for management"; Kafka-metrics MBeans use the metric's description, which the
jmx_exporter capture's HELP lines still carry (`descriptions_from_capture`).

`read_exposition` parses Prometheus text 0.0.4 into families and series, keeping label order.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from kafka_jmx_sidecar.exporter.rule_engine import order
from kafka_jmx_sidecar.exporter.base.model import Attribute, MBean, ObjectName

# shared/ sits beside the repository (in CI too)
REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference"
KAFKA_41 = REFERENCE / "kafka-4.1"
RULES = REFERENCE / "rules"
YAMMER_DESCRIPTION = "Attribute exposed for management"
KAFKA_METRICS_CLASS = "org.apache.kafka.common.metrics.JmxReporter$KafkaMbean"

_INTEGRAL = {"java.lang.Integer", "java.lang.Long", "java.lang.Byte", "java.lang.Short"}
_HELP_TAIL = re.compile(r"^(.*?) ?(\S+):name=(.*),type=(.*),attribute=(.*)$")


@dataclass(frozen=True)
class RawAttribute:
    name: str
    declared: str
    value: object
    runtime: str


def _value(text: str, runtime: str) -> object:
    if runtime in _INTEGRAL:
        return int(text)
    if runtime in ("java.lang.Double", "java.lang.Float"):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(text) or float(text)
    if runtime == "java.lang.Boolean":
        return text == "true"
    return text  # String, and enums as their name


def read_raw(path: Path = KAFKA_41 / "all-kafka-mbeans-full.txt") -> list[tuple[str, str, list[RawAttribute]]]:
    beans: list[tuple[str, str, list[RawAttribute]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("###"):
            continue
        if line.startswith("    "):
            name, rest = line[4:].split(" : ", 1)
            declared, rest = rest.split(" = ", 1)
            text, runtime = rest.rsplit("  (", 1)
            runtime = runtime.rstrip(")")
            beans[-1][2].append(RawAttribute(name, declared, _value(text, runtime), runtime))
        else:
            object_name, class_name = line.rsplit("   [", 1)
            beans.append((object_name, class_name.rstrip("]"), []))
    return beans


def read_dump(descriptions: dict[tuple, str] | None = None) -> list[MBean]:
    """The dump as MBeans; `descriptions` maps (domain, name key, type key, attribute) to the
    description of a Kafka-metrics attribute (see `descriptions_from_capture`)."""
    descriptions = descriptions or {}
    out = []
    for object_name, class_name, attributes in read_raw():
        name = ObjectName.parse(object_name)
        attrs = []
        for a in attributes:
            if class_name == KAFKA_METRICS_CLASS:
                key = (name.domain, name.get("name", "null"), name.get("type", "null"), a.name)
                description = descriptions.get(key, a.name)
            else:
                description = YAMMER_DESCRIPTION
            attrs.append(Attribute(a.name, a.value, description, a.declared))
        out.append(MBean(name, class_name, tuple(attrs)))
    return out


@dataclass
class Exposition:
    families: dict[str, dict] = field(default_factory=dict)  # name -> {"help": str, "type": str}
    series: dict[tuple, str] = field(default_factory=dict)  # (name, labels in order) -> value text
    order: list[tuple] = field(default_factory=list)


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def read_exposition(text: str) -> Exposition:
    exp = Exposition()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            exp.families.setdefault(name, {})["help"] = help_text
        elif line.startswith("# TYPE "):
            name, _, type_text = line[7:].partition(" ")
            exp.families.setdefault(name, {})["type"] = type_text
        elif line and not line.startswith("#"):
            m = _SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"
            labels = tuple(_LABEL.findall(m.group(2) or ""))
            key = (m.group(1), labels)
            exp.series[key] = m.group(3)
            exp.order.append(key)
    return exp


def descriptions_from_capture(text: str) -> dict[tuple, str]:
    """(domain, name key, type key, attribute) -> description, from jmx_exporter's HELP lines."""
    out: dict[tuple, str] = {}
    for line in text.splitlines():
        if not line.startswith("# HELP "):
            continue
        help_text = line[7:].partition(" ")[2]
        m = _HELP_TAIL.match(help_text)
        if m:
            description, domain, name, type_, attribute = m.groups()
            out.setdefault((domain, name, type_, attribute), description if description else attribute)
            if help_text.startswith(" "):  # an empty description still leaves its space
                out[(domain, name, type_, attribute)] = ""
    return out


def jmx_exporter_order(mbeans: list[MBean], capacity: int = 2048) -> list[MBean]:
    """The captured broker's MBeans in the order jmx_exporter 0.17 scraped them (see
    exporter.rule_engine.order). It queried ~1,100 names, so the table had 2,048 buckets."""
    ordered = order.jmx_exporter_order(mbeans, lambda m: m.name, total=capacity * 3 // 4)
    assert order.hashmap_table_size(capacity * 3 // 4) == capacity
    return ordered
