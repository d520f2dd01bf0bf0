"""The values that flow from the JMX edge through the rule engine to the endpoint.

`MBean` is what one read of one MBean returns; its attribute values are plain Python values
(int, float, bool, str, datetime, `Composite`, `Tabular`, None), so the rule engine and the
archive never touch the JVM. `Sample` is one exposed series value.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

_KEY_VALUE = re.compile(r'([^,=:*?"]+)=("(?:[^"\\]|\\.)*"|[^,"]*)')


@dataclass(frozen=True, slots=True)
class ObjectName:
    """A JMX ObjectName with its key properties in registration order.

    Order matters: `getKeyPropertyListString()` keeps it, and jmx_exporter rule patterns and
    default metric names depend on it.
    """

    domain: str
    keys: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, text: str) -> "ObjectName":
        domain, sep, rest = text.partition(":")
        if not sep or not domain or not rest:
            raise ValueError(f"not an ObjectName: {text!r} (expected domain:key=value,...)")
        if '"' not in rest:  # no quoted value (almost every name): split, as the pattern would
            keys = []
            for part in rest.split(","):
                k, eq, v = part.partition("=")
                if not eq or not k or ":" in k or "*" in k or "?" in k:
                    break  # the pattern below says what is wrong
                keys.append((k, v))
            else:
                return cls(domain, tuple(keys))
        keys = []
        pos = 0
        while pos < len(rest):
            m = _KEY_VALUE.match(rest, pos)
            if not m:
                raise ValueError(f"not an ObjectName: {text!r} (bad key property at {rest[pos:]!r})")
            keys.append((m.group(1), m.group(2)))
            pos = m.end()
            if pos < len(rest):
                if rest[pos] != ",":
                    raise ValueError(f"not an ObjectName: {text!r} (expected ',' at {rest[pos:]!r})")
                pos += 1
        return cls(domain, tuple(keys))

    def get(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.keys:
            if k == key:
                return v
        return default

    def __str__(self) -> str:
        return self.domain + ":" + ",".join(f"{k}={v}" for k, v in self.keys)


class Composite(dict):
    """A JMX CompositeData value: item name to value (values may nest)."""


@dataclass(frozen=True, slots=True)
class Tabular:
    """A JMX TabularData value: the index column names and one mapping per row."""

    index: tuple[str, ...]
    rows: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str
    value: Any
    description: str = ""
    type_name: str = ""  # declared type from MBeanInfo, e.g. "java.lang.Object", "long"


@dataclass(frozen=True, slots=True)
class MBean:
    """One MBean as read in one poll."""

    name: ObjectName
    class_name: str
    attributes: tuple[Attribute, ...]


@dataclass(frozen=True, slots=True)
class Sample:
    """One exposed value. `labels` keeps exposition order; `type` is gauge, counter or untyped."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float
    type: str = "untyped"
    help: str = ""
    timestamp_ms: int | None = field(default=None, compare=False)
