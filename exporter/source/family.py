"""One per-partition family of a name list, as a poll serves it: its members (columns the JVM
keeps) and the table of the values last served (family_reads.py says how they are read)."""
from __future__ import annotations

from array import array
from typing import Any

from kafka_jmx_sidecar.exporter.base.model import BeanTable
from kafka_jmx_sidecar.exporter.source.jmx.listing import Members
from kafka_jmx_sidecar.mbeans import catalog


# Kafka's per-partition gauges, kept as columns (`BeanTable`): (domain, type, name) -> the
# largest value worth a query of its own (the catalog's usual maximum of its value kind: 1 for
# flags; larger values are read), or None for a family read member by member (every member holds
# its own value, so a query would only add its cost).
TABULATED = {s.key: s.value_kind.usual_max for s in catalog.HEALTH_MBEANS if s.scope is catalog.Scope.PARTITION}


def family_pattern(key: tuple[str, str, str]) -> str:
    """The name pattern of a family's members."""
    domain, type_, name = key
    return f"{domain}:type={type_},name={name},*"


class Family:
    """One tabulated family for one name list: its members (columns kept by the JVM) and the
    table of the values last served."""

    __slots__ = ("key", "pattern", "max_value", "number", "members", "table", "base", "special", "unusual")

    def __init__(self, key: tuple[str, str, str], members: Members, table: BeanTable, max_value: int | None,
                 number: bool = False):
        self.key = key
        self.pattern = family_pattern(key)
        self.max_value = max_value  # None: read every member each poll, unless `number` and worth a query
        self.number = number  # values of their own (sizes, offsets, lags): queried when the costs say so
        self.members = members
        self.table = table
        self.base: Any = None  # the value served to every member not in `special`, last poll
        self.special: set[int] = set()
        self.unusual: int | None = None  # members not holding the common value at the last poll

    def last(self, i: int) -> Any:
        return self.table.values[i] if self.table.present[i] else None

    def serve(self, i: int, value: Any) -> None:
        t = self.table
        if value.__class__ is bool or not isinstance(value, (int, float)):
            # not a number: Kafka's gauges never do this; such a value could not be exposed
            # anyway (jmx_exporter drops non-numeric leaves without `value:`)
            t.present[i] = 0
            return
        if t.integral and value.__class__ is not int:  # a float in an integral family
            t.values, t.integral = array("d", t.values), False
        t.values[i] = value
        t.present[i] = 1

    def serve_all(self, value: Any) -> bool:
        """Serve every member `value` at once, when the table holds it as it is (an int in an
        integral table, a float in another): what serve() of each would do, without a call per
        member (200,000 of them on a first poll of 40,000 partitions' flags and counts)."""
        t = self.table
        if not (value.__class__ is int and t.integral or value.__class__ is float and not t.integral):
            return False
        n = len(t)
        t.values[:] = array(t.values.typecode, [value]) * n  # in place: the same objects
        t.present[:] = b"\x01" * n
        return True

    def drop(self, i: int) -> None:
        self.table.present[i] = 0
