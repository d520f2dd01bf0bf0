"""The values that flow from the JMX edge through the rule engine to the endpoint.

`MBean` is what one read of one MBean returns; its attribute values are plain Python values
(int, float, `JavaNumber`, bool, str, datetime, `Composite`, `Tabular`, None), so the rule engine never
touches the JVM. `BeanTable` is many MBeans of one shape (Kafka's per-partition
gauges) kept as columns. `Sample` is one exposed series value.
"""
from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

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


class JavaNumber(float):
    """A number whose Java `toString` is not its double's (a Float, a BigDecimal, any other
    `java.lang.Number`): jmx_exporter matches rules against `text` (`1.10`, `1E+3`, a Float's
    `0.1`) and exposes the double."""

    __slots__ = ("text",)

    def __new__(cls, value: float, text: str) -> "JavaNumber":
        number = float.__new__(cls, value)
        number.text = text
        return number

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"JavaNumber({float(self)!r}, {self.text!r})"

    def __reduce__(self):
        return JavaNumber, (float(self), self.text)


class Composite(dict):
    """A JMX CompositeData value: item name to value (values may nest). The JMX edge sets
    `description` to the CompositeType's description (jmx_exporter's HELP for every item)."""


@dataclass(frozen=True, slots=True)
class Tabular:
    """A JMX TabularData value: the index column names and one mapping per row."""

    index: tuple[str, ...]
    rows: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str
    value: Any
    description: str | None = ""  # None: the MBeanInfo has none (jmx_exporter's HELP tells them apart)
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


class BeanTable:
    """The MBeans `domain:<keys>,topic=T,partition=P` of one class with the one attribute
    `attribute`, as columns: the same information as one `MBean` per member, at a few bytes a
    member instead of about a kilobyte. 98% of a big broker's MBeans are such per-partition
    gauges (`kafka.cluster:type=Partition,name=...`, `kafka.log:type=Log,name=...`).

    Member i is `topics[topic[i]]`, `partition[i]`; its value is `values[i]` (an int for an
    integral table), and it exists in this poll only where `present[i]` is 1. `rank[i]` is its
    place in jmx_exporter's visiting order of the whole poll (the MBeans outside tables take the
    other places). The member columns are replaced, never changed in place, when the name list
    changes; `values` and `present` change every poll (`frozen()` copies them for a snapshot).
    """

    __slots__ = ("domain", "keys", "class_name", "attribute", "description", "type_name", "integral",
                 "topics", "topic", "partition", "rank", "values", "present")

    def __init__(self, domain: str, keys: tuple[tuple[str, str], ...], class_name: str, attribute: str,
                 description: str, type_name: str, integral: bool, topics: Sequence[str],
                 topic: array, partition: array, rank: array, values: array | None = None,
                 present: bytearray | None = None):
        self.domain, self.keys, self.class_name = domain, keys, class_name
        self.attribute, self.description, self.type_name = attribute, description, type_name
        self.integral = integral
        self.topics, self.topic, self.partition, self.rank = topics, topic, partition, rank
        n = len(topic)
        if not (len(partition) == len(rank) == n):
            raise ValueError("a BeanTable's member columns must have one entry per member")
        self.values = values if values is not None else array("q" if integral else "d", bytes(8 * n))
        self.present = present if present is not None else bytearray(n)

    def __len__(self) -> int:
        return len(self.topic)

    def member_keys(self, i: int) -> tuple[tuple[str, str], ...]:
        return self.keys + (("topic", self.topics[self.topic[i]]), ("partition", str(self.partition[i])))

    def object_name(self, i: int) -> ObjectName:
        return ObjectName(self.domain, self.member_keys(i))

    def mbean(self, i: int) -> MBean | None:
        """Member i as the MBean a read would have returned (None when absent this poll)."""
        if not self.present[i]:
            return None
        value = self.values[i]
        return MBean(self.object_name(i), self.class_name,
                     (Attribute(self.attribute, value, self.description, self.type_name),))

    def frozen(self) -> "BeanTable":
        """A copy whose values and presence no later poll changes (the columns are shared)."""
        return BeanTable(self.domain, self.keys, self.class_name, self.attribute, self.description,
                         self.type_name, self.integral, self.topics, self.topic, self.partition, self.rank,
                         array(self.values.typecode, self.values), bytearray(self.present))
