"""Read plans: which attributes of which MBeans one read() asks for, built once and reused.

A plan is built from the names' MBeanInfo and the attribute filters, handed to the engine once
(the JVM keeps it: a poll sends nothing but its handle), and rebuilt when the client's
generation moves on (new names, new MBeanInfo, auto-excluded attributes). It also keeps the
previous read's records: an MBean whose record did not change is returned as the same object.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from kafka_jmx_sidecar.exporter.source.jmx import convert
from kafka_jmx_sidecar.exporter.source.jmx.filters import AttributeFilter
from kafka_jmx_sidecar.exporter.source.jmx.mbean_info import InfoCache, Targets
from kafka_jmx_sidecar.exporter.source.jmx.stats import JmxStats
from kafka_jmx_sidecar.exporter.base.model import Attribute, MBean

_KEPT_SUBSETS = 8  # plans kept for name lists other than the listing's


class ReadPlan:
    """What one read() sends (the engine's plan) and what it needs to build MBeans again."""

    __slots__ = ("jplan", "entries", "generation", "prev_raw", "prev_mbeans", "source", "size", "complete")

    def __init__(self, jplan: Any, entries: list, generation: int, complete: bool):
        self.jplan = jplan
        self.entries = entries          # (ObjectName, name text, Info, attribute positions)
        self.generation = generation    # the client's generation it was built for
        self.prev_raw: list | None = None
        self.prev_mbeans: list | None = None
        self.source: Any = None         # the name list it was built for (None: the listing)
        self.size = 0
        self.complete = complete        # every name had its MBeanInfo looked up (or failed)

    def usable(self, generation: int) -> bool:
        return self.generation == generation and self.complete


def build(targets: Targets, infos: InfoCache, filters: AttributeFilter, engine: Any,
          jnames_for: Callable[[list[str]], Any], only: frozenset | None, generation: int) -> ReadPlan:
    """The plan for `targets` (`only`: of those attribute names); a name whose MBeanInfo is not
    known is left out."""
    sets: dict[tuple[str, ...], int] = {}
    attr_set: list[int] = []
    entries = []
    picked: list[str] = []
    complete = True
    for st, n in targets:
        inf = infos.known.get(st)
        if inf is None:
            if st not in infos.failed:
                complete = False  # not looked up yet
            continue
        pos = filters.wanted(st, n, inf, only)
        if not pos:
            continue
        names = tuple(inf.attrs[i][0] for i in pos)
        k = sets.get(names)
        if k is None:
            k = sets[names] = len(sets)
        attr_set.append(k)
        entries.append((n, st, inf, pos))
        picked.append(st)
    jplan = engine.plan(jnames_for(picked), list(sets), attr_set) if entries else None
    return ReadPlan(jplan, entries, generation, complete)


def decode(plan: ReadPlan, records: list, complex_values: Any, stats: JmxStats,
           auto_excluded: dict[str, set[str]] | None) -> tuple[list[MBean], bool]:
    """The engine's records for `plan` -> (the MBeans read, whether an attribute was newly
    auto-excluded: plans are then stale). MBeans that vanished or failed are left out."""
    entries = plan.entries
    out: list[MBean] = []
    append = out.append
    prev_raw, prev_mbeans = plan.prev_raw, plan.prev_mbeans
    if prev_raw is None or len(prev_raw) != len(records):
        prev_raw, prev_mbeans = None, None
    new_mbeans: list[MBean | None] = [None] * len(records)
    decode_record = convert.decode_record
    excluded = False
    read = 0
    for i, ((n, st, inf, pos), rec) in enumerate(zip(entries, records)):
        if prev_raw is not None and rec == prev_raw[i] and prev_mbeans[i] is not None:
            mb = prev_mbeans[i]  # same text, same values (records with complex values never match)
            new_mbeans[i] = mb
            append(mb)
            read += 1
            continue
        status, values = decode_record(rec, complex_values) if type(rec) is str else rec
        if status != "o":
            stats.note_failure(st, status, "getAttributes")
            continue
        read += 1
        attrs = []
        ia = inf.attrs
        clean = True
        for p, v in zip(pos, values):
            if type(v) is convert._Marker or type(v) is convert.Unsupported:
                if auto_excluded is not None and v is not convert.MISSING:
                    auto_excluded.setdefault(st, set()).add(ia[p][0])
                    excluded = True
                clean = False
                continue
            a, typ, desc = ia[p]
            attrs.append(Attribute(a, v, desc, typ))
        mb = MBean(n, inf.class_name, tuple(attrs))
        if clean and type(rec) is str and "\x1fx" not in rec:
            new_mbeans[i] = mb
        append(mb)
    plan.prev_raw, plan.prev_mbeans = records if records and type(records[0]) is str else None, new_mbeans
    stats.mbeans_read += read
    return out, excluded


class Plans:
    """The plan for every listed MBean, and those of the last few name lists read() was given
    (kept while the same list object comes back with the same length)."""

    def __init__(self) -> None:
        self.listed: ReadPlan | None = None
        self._subsets: dict[tuple, ReadPlan] = {}

    def clear(self) -> None:
        self.listed = None
        self._subsets.clear()

    def subset(self, names: Sequence, attributes: Sequence[str] | None, generation: int) -> ReadPlan | None:
        plan = self._subsets.get((id(names), None if attributes is None else tuple(attributes)))
        if plan is not None and plan.source is names and plan.size == len(names) and plan.usable(generation):
            return plan
        return None

    def keep_subset(self, names: Sequence, attributes: Sequence[str] | None, plan: ReadPlan) -> None:
        plan.source, plan.size = names, len(names)
        if len(self._subsets) >= _KEPT_SUBSETS:
            self._subsets.pop(next(iter(self._subsets)))
        self._subsets[(id(names), None if attributes is None else tuple(attributes))] = plan
