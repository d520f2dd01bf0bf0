"""What one poll exposes: its series as metric families, in the order jmx_exporter writes them,
with duplicates resolved as the naming mode says.

A family is the series sharing a name; HELP is the first visited series' help; the type as
`base.families.of_samples` says. In 0.x naming, a family's series come in the order the MBeans
were visited, and families in the iteration order of the `HashMap` jmx_exporter 0.x collects them
in, keyed by name and filled in visiting order (`order.hashmap_order`). In 1.x naming (client_java
1.x), families are sorted by name and a family's series by their labels (`naming.labels_order`);
a table family's members are kept in that order by the rule engine, once per member list.

Duplicates (same name and labels) can only meet inside a family. A family made of one table
part whose outcome's labels hold both the topic and the partition cannot have any (the members
differ in one of them), so it is never expanded. Nor is a family of several such parts whose
fixed labels tell the parts apart (default naming's `kafka_cluster_Partition_Value`, one part per
`name=`): in 1.x its parts are written one after the other (`_tables_in_label_order`), in 0.x
interleaved in visiting order (`MergedTables`, the order kept by `MergeOrders`). Any other family
with a table part is expanded into Samples, merged with its other series in visiting order, and
resolved like them.
"""
from __future__ import annotations

from array import array
from typing import Iterable, Sequence

from kafka_jmx_sidecar.exporter.base.families import PARTITION, TOPIC, Family, MergedTables, RejectedPoll, TableSeries, of_samples, scaled
from kafka_jmx_sidecar.exporter.base.model import Sample
from kafka_jmx_sidecar.exporter.rule_engine.naming import (add_objectname_on_collisions, bean_text, first_of_each, java_order, labels_order,
                                   series_key)
from kafka_jmx_sidecar.exporter.rule_engine.order import hashmap_order


def _entries(part: TableSeries) -> Iterable[tuple[int, Sample, str, str]]:
    """(rank, sample, series key, ObjectName text) per present member of a table part."""
    t, tpl = part.table, part.template
    present, values, rank = t.present, t.values, t.rank
    for i in part.positions:
        if not present[i]:
            continue
        labels = tpl.member_labels(t.topics[t.topic[i]], str(t.partition[i]))
        number = scaled(values[i], tpl.fixed, tpl.factor)
        yield (rank[i], Sample(tpl.name, labels, number, tpl.type, tpl.help), series_key(tpl.name, labels),
               bean_text(t.domain, t.member_keys(i)) + tpl.objectname_attr)


class MergeOrders:
    """0.x: the `MergedTables.order` of each family of several table parts, kept from poll to poll.
    An order depends only on the parts' members (`positions`) and their ranks, arrays that are
    replaced, never changed in place, when the member lists change: while a family's parts hold
    the same ones, its order is the one worked out before (sorting the 400,000 ranks of a
    no-rules poll at 40,000 partitions takes ~0.08 s, as long as the rest of its rules phase)."""

    def __init__(self):
        self._orders: dict[str, tuple[list, array]] = {}
        self._used: dict[str, tuple[list, array]] = {}

    def order(self, name: str, parts: Sequence[TableSeries]) -> array:
        columns = [c for ts in parts for c in (ts.table.rank, ts.positions)]
        kept = self._orders.get(name)
        if kept is None or len(kept[0]) != len(columns) or any(a is not b for a, b in zip(kept[0], columns)):
            kept = (columns, _visiting_order(parts))
        self._used[name] = kept
        return kept[1]

    def end_poll(self) -> None:
        """Forget the orders of families this poll did not merge."""
        self._orders, self._used = self._used, {}


def _visiting_order(parts: Sequence[TableSeries]) -> array:
    """The index of the part of each member, all parts' members (absent or not) in visiting order."""
    ranks = array("I")
    part_of = array("B" if len(parts) < 256 else "I")
    for k, ts in enumerate(parts):
        ranks.extend(map(ts.table.rank.__getitem__, ts.positions))
        part_of.extend(array(part_of.typecode, [k]) * len(ts.positions))
    return array(part_of.typecode, map(part_of.__getitem__, sorted(range(len(ranks)), key=ranks.__getitem__)))


def assemble(rest: Sequence[tuple[int, Sample, str, str | None]], tables: Sequence[TableSeries],
             one_x: bool, orders: MergeOrders | None = None) -> tuple[list[Family], int]:
    """The poll's families, and how many duplicates 0.x dropped. `rest`: (rank, sample, series
    key, ObjectName text) in visiting order, duplicates not yet resolved. `orders`: the merge
    orders of the last poll (none: worked out afresh)."""
    if orders is None:
        orders = MergeOrders()
    by_name: dict[str, tuple[list, list]] = {}
    for entry in rest:
        name = entry[1].name
        parts = by_name.get(name)
        if parts is None:
            parts = by_name[name] = ([], [])
        parts[0].append(entry)
    for ts in tables:
        by_name.setdefault(ts.template.name, ([], []))[1].append(ts)
    ordered: list[tuple[int, Family]] = []
    dropped = 0
    for name, (entries, table_parts) in by_name.items():
        if not entries and len(table_parts) == 1 and table_parts[0].template.injective:
            ts = table_parts[0]
            first = ts.first_rank()
            if first is not None:
                ordered.append((first, Family(name, ts.template.type, ts.template.help, [ts])))
            continue
        if one_x and not entries and all(ts.template.injective for ts in table_parts):
            merged = _tables_in_label_order(name, table_parts)
            if merged is not None:
                if merged[1] is not None:
                    ordered.append(merged)
                continue
        if not one_x and not entries and all(ts.template.injective for ts in table_parts) \
                and _told_apart(table_parts):
            merged = _tables_in_visiting_order(name, table_parts, orders)
            if merged is not None:
                ordered.append(merged)
            continue
        if table_parts:
            entries = list(entries)
            for ts in table_parts:
                entries.extend(_entries(ts))
            entries.sort(key=lambda e: e[0])
        if not entries:
            continue
        if one_x:
            kept = add_objectname_on_collisions([(s, objectname) for _, s, _, objectname in entries])
            f = of_samples(kept, True)[0]  # HELP of the first visited, then client_java's order
            f.parts[0].sort(key=_labels_key)
        else:
            kept, duplicates = first_of_each((key, s) for _, s, key, _ in entries)
            dropped += duplicates
            f = of_samples(kept)[0]
        ordered.append((entries[0][0], f))
    orders.end_poll()
    ordered.sort(key=lambda x: x[0])
    families = [f for _, f in ordered]
    if one_x:
        for f in families:
            if f.type == "counter":
                _check_counter(f)
    return exposition_order(families, one_x), dropped


def _tables_in_label_order(name: str, parts: Sequence[TableSeries]) -> tuple[int, Family | None] | None:
    """1.x: a family of several table parts (default naming's `kafka_cluster_Partition_Value`
    with one part per `name=`) written part after part, without a Sample per member, when the
    parts' fixed label names and values before the topic and partition slots already order them:
    each part's members are in label order (the rule engine keeps them so), so the family is too,
    and no two series can be alike. None when the parts could interleave; (0, None) when no
    member is present."""
    keyed = []
    for ts in parts:
        rank = ts.lowest_rank()
        if rank is None:
            continue
        labels = ts.template.labels
        slot = next(i for i, (_, v) in enumerate(labels) if v is TOPIC or v is PARTITION)
        keyed.append((tuple([java_order(k) for k, _ in labels]), tuple([java_order(v) for _, v in labels[:slot]]),
                      slot, rank, ts))
    if not keyed:
        return 0, None
    keyed.sort(key=lambda k: k[:2])
    for a, b in zip(keyed, keyed[1:]):
        if a[0] == b[0] and a[1][:min(a[2], b[2])] == b[1][:min(a[2], b[2])]:
            return None  # same label names and nothing fixed tells the parts apart
    first = min(keyed, key=lambda k: k[3])
    types = {k[4].template.type for k in keyed}
    return first[3], Family(name, types.pop() if len(types) == 1 else "untyped", first[4].template.help,
                            [k[4] for k in keyed])


def _told_apart(parts: Sequence[TableSeries]) -> bool:
    """0.x: whether no member of one part can have the name and labels of a member of another.
    jmx_exporter 0.x compares label names and values in order, so parts whose label names differ
    are apart, and so are parts with a label both fix, differently (`name="UnderReplicated"`,
    `name="AtMinIsr"`); a topic or partition slot may take any value."""
    labels = [ts.template.labels for ts in parts]
    for b in range(1, len(labels)):
        for a in range(b):
            x, y = labels[a], labels[b]
            if len(x) == len(y) and all(kx == ky for (kx, _), (ky, _) in zip(x, y)) and not any(
                    vx != vy and vx.__class__ is str and vy.__class__ is str for (_, vx), (_, vy) in zip(x, y)):
                return False
    return True


def _tables_in_visiting_order(name: str, parts: Sequence[TableSeries],
                              orders: MergeOrders) -> tuple[int, Family] | None:
    """0.x: a family of several table parts that cannot hold duplicates (`_told_apart`) as one
    `MergedTables`, without a Sample per member; its HELP and type are those of the first member
    visited (jmx_exporter 0.x makes the family with the first sample). None when no member is
    present."""
    firsts = [(rank, ts) for ts in parts for rank in (ts.first_rank(),) if rank is not None]
    if not firsts:
        return None
    rank, first = min(firsts, key=lambda x: x[0])
    return rank, Family(name, first.template.type, first.template.help,
                        [MergedTables(list(parts), orders.order(name, parts))])


def _check_counter(f: Family) -> None:
    """client_java 1.x refuses a counter below zero, and jmx_exporter 1.x then fails the whole
    scrape (HTTP 500): so does the poll."""
    for part in f.parts:
        if isinstance(part, TableSeries):
            t, tpl = part.table, part.template
            if tpl.fixed is not None:
                low = scaled(0, tpl.fixed, tpl.factor) if any(t.present[i] for i in part.positions) else 0.0
            elif not len(t.values) or (min(t.values) >= 0 if tpl.factor >= 0 else max(t.values) <= 0):
                continue  # no member below zero, present or not (the usual case, tested in C)
            else:
                low = min([scaled(t.values[i], None, tpl.factor) for i in part.positions if t.present[i]] or [0.0])
            if low < 0:
                raise RejectedPoll(f"counter {f.name} has a negative value ({low}): jmx_exporter 1.x fails "
                                   f"such a scrape (HTTP 500, 'counters cannot have a negative value')")
        else:
            for s in part:
                if s.value < 0:
                    labels = ",".join(f'{k}="{v}"' for k, v in s.labels)
                    raise RejectedPoll(f"counter {f.name}{'{' + labels + '}' if labels else ''} has a negative "
                                       f"value ({s.value}): "
                                       f"jmx_exporter 1.x fails such a scrape (HTTP 500, 'counters cannot "
                                       f"have a negative value')")


def families_of(samples: Iterable[Sample], one_x: bool) -> list[Family]:
    """One poll's samples (duplicates resolved, in visiting order, as `RuleEngine.samples` gives
    them) as the families `assemble` makes of the same series: the reference path."""
    families = of_samples(samples, one_x)
    if one_x:
        for f in families:
            f.parts[0].sort(key=_labels_key)
    return exposition_order(families, one_x)


def exposition_order(families: list[Family], one_x: bool) -> list[Family]:
    """Families (in the order their first series was visited) in the order jmx_exporter writes
    them: in 0.x, its HashMap's (keyed by name, filled in visiting order); in 1.x sorted by name
    (client_java sorts a scrape's families; a counter's name is its family name, without `_total`)."""
    if one_x:
        return sorted(families, key=lambda f: java_order(f.name))
    return [families[i] for i in hashmap_order([f.name for f in families])]


_labels_keys: dict[tuple, tuple] = {}


def _labels_key(sample: Sample) -> tuple:
    """`labels_order` of a sample's labels, remembered: the same label tuples come back every poll."""
    key = _labels_keys.get(sample.labels)
    if key is None:
        if len(_labels_keys) >= 200_000:
            _labels_keys.clear()
        key = _labels_keys[sample.labels] = labels_order(sample.labels)
    return key
