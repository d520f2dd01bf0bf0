"""jmx_exporter 1.x's `metricCustomizers`: for the MBeans of a domain (and key properties), some
attribute values as labels on every sample of the MBean, and extra constant metrics.

    metricCustomizers:
      - mbeanFilter: {domain: kafka.server, properties: {type: app-info}}
        attributesAsLabels: [version, commit-id]
        extraMetrics: [{name: up, value: true, description: the broker answers}]

What jmx_exporter 1.6.0 does, checked against it (tests/real): the first customizer whose domain
equals the MBean's and whose properties are all among its key properties applies. Each listed
attribute the MBean returned with a value becomes a label (name made safe, lowercased with
`lowercaseOutputLabelNames`, value as Java prints it), added after the key-property labels of
default naming and before a rule's own labels (the 1.x writers sort labels anyway). Each extra
metric is one more attribute of the MBean, of that name, value and description, that goes
through the rules like any other and comes before the MBean's own attributes. jmx_exporter 0.x
does not know the key; 0.x naming ignores it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from kafka_jmx_sidecar.exporter.base.model import Attribute, ObjectName

EXTRA_METRIC_TYPE = "UNKNOWN"  # the attribute type jmx_exporter gives an extra metric


@dataclass(frozen=True)
class MetricCustomizer:
    domain: str
    properties: tuple[tuple[str, str], ...]
    attributes_as_labels: tuple[str, ...] = ()
    extra_metrics: tuple[Attribute, ...] = ()

    def applies_to(self, name: ObjectName) -> bool:
        return name.domain == self.domain and all(p in name.keys for p in self.properties)


def first_for(customizers: Sequence[MetricCustomizer], name: ObjectName) -> MetricCustomizer | None:
    for c in customizers:
        if c.applies_to(name):
            return c
    return None


def label_pairs(customizer: MetricCustomizer, attributes: Iterable[Attribute],
                label_name: Callable[[str], str], text: Callable[[Any], str]) -> tuple[tuple[str, str], ...]:
    """The labels the customizer adds for an MBean whose attributes were read as `attributes`:
    an attribute without a value (not returned, or null) adds none."""
    if not customizer.attributes_as_labels:
        return ()
    values = {a.name: a.value for a in attributes}
    return tuple((label_name(name), text(values[name])) for name in customizer.attributes_as_labels
                 if values.get(name) is not None)


def parse(items: Any, error: Callable[[tuple, str, str], Exception], key: str = "metricCustomizers"
          ) -> tuple[MetricCustomizer, ...]:
    """The YAML list, refused as jmx_exporter 1.6.0 refuses it (its messages' conditions), with
    `error(path, problem, fix)` naming the place."""
    if items is None:
        return ()
    if not isinstance(items, list):
        raise error((key,), "must be a list of customizers", "write one `- mbeanFilter: ...` item per customizer")
    out = []
    for i, item in enumerate(items):
        where = (key, i)
        if not isinstance(item, dict):
            raise error(where, "a customizer must be a mapping", "write `- mbeanFilter: {domain: ...}`")
        flt = item.get("mbeanFilter")
        if not isinstance(flt, dict):
            raise error(where, "no mbeanFilter", "give the customizer an `mbeanFilter:` with a `domain:`")
        domain = flt.get("domain")
        if not isinstance(domain, str) or not domain:
            raise error(where + ("mbeanFilter",), "no domain", "write the MBeans' domain, e.g. `domain: kafka.server`")
        props = flt.get("properties") or {}
        if not isinstance(props, dict):
            raise error(where + ("mbeanFilter", "properties"), "must be a mapping of key properties",
                        "write `properties: {type: app-info}`")
        labels = item.get("attributesAsLabels")
        extras = item.get("extraMetrics")
        if not labels and not extras:
            raise error(where, "neither attributesAsLabels nor extraMetrics",
                        "list attribute names under attributesAsLabels, or metrics under extraMetrics")
        if labels is not None and (not isinstance(labels, list) or not all(isinstance(a, str) for a in labels)):
            raise error(where + ("attributesAsLabels",), "must be a list of attribute names", "write `[Name, Version]`")
        out.append(MetricCustomizer(domain, tuple((str(k), _text(v)) for k, v in props.items()),
                                    tuple(labels or ()), _extras(extras, where + ("extraMetrics",), error)))
    return tuple(out)


def _extras(items: Any, where: tuple, error) -> tuple[Attribute, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise error(where, "must be a list of metrics", "write `- {name: up, value: 1}` items")
    out = []
    for j, m in enumerate(items):
        if not isinstance(m, dict):
            raise error(where + (j,), "an extra metric must be a mapping", "write `{name: up, value: 1}`")
        if not isinstance(m.get("name"), str) or not m["name"]:
            raise error(where + (j,), "no name", "give the extra metric a `name:`")
        if "value" not in m or m["value"] is None:
            raise error(where + (j,), "no value", "give the extra metric a `value:` (a number or true/false)")
        value = m["value"]
        description = m.get("description")
        out.append(Attribute(m["name"], value, None if description is None else str(description), EXTRA_METRIC_TYPE))
    return tuple(out)


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
