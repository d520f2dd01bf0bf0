"""What one poll exposes: its series as metric families, in the order jmx_exporter writes them,
with duplicates resolved as the naming mode says.

A family is the series sharing a name; HELP is the first visited series' help; the type as
`exporter.families.of_samples` says. In 0.x naming, a family's series come in the order the MBeans
were visited, and families in the iteration order of the `HashMap` jmx_exporter 0.x collects them
in, keyed by name and filled in visiting order (`order.hashmap_order`). In 1.x naming (client_java
1.x), families are sorted by name and a family's series by their labels (`naming.labels_order`);
a table family's members are kept in that order by the rule engine, once per member list.

Duplicates (same name and labels) can only meet inside a family. A family made of one table
part whose outcome's labels hold both the topic and the partition cannot have any (the members
differ in one of them), so it is never expanded; any other family with a table part is expanded
into Samples, merged with its other series in visiting order, and resolved like them.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from exporter.families import PARTITION, TOPIC, Family, RejectedPoll, TableSeries, of_samples, scaled
from exporter.model import Sample
from exporter.rule_engine.naming import (add_objectname_on_collisions, bean_text, first_of_each, java_order, labels_order,
                                   series_key)
from exporter.rule_engine.order import hashmap_order


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


def assemble(rest: Sequence[tuple[int, Sample, str, str | None]], tables: Sequence[TableSeries],
             one_x: bool) -> tuple[list[Family], int]:
    """The poll's families, and how many duplicates 0.x dropped. `rest`: (rank, sample, series
    key, ObjectName text) in visiting order, duplicates not yet resolved."""
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
        if not one_x and not entries and len(table_parts) > 1:
            merged = _tables_one_after_another(name, table_parts)
            if merged is not None:
                if merged[1] is not None:
                    ordered.append(merged)
                continue
        if one_x and not entries and all(ts.template.injective for ts in table_parts):
            merged = _tables_in_label_order(name, table_parts)
            if merged is not None:
                if merged[1] is not None:
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


def _tables_one_after_another(name: str, parts: Sequence[TableSeries]) -> tuple[int, Family | None] | None:
    """0.x: a family of several table parts (the cluster-wide view's, a table per leader) written
    part after part, without a Sample per member, when no two parts can name a series alike and
    their members were visited part after part: each part has a template of its own holding the
    topic and the partition, every two templates hold different text under one label name
    (leader="1", leader="2"), and no part's ranks fall between another's first and last. None
    otherwise (the parts are then expanded); (0, None) when no member is present."""
    if len(parts) > 64:
        return None  # pairs of templates compared below
    ranked = []
    for ts in parts:
        first = ts.first_rank()
        if first is not None:
            ranked.append((first, _last_rank(ts), ts))
    if not ranked:
        return 0, None
    templates = [ts.template for _, _, ts in ranked]
    if len({id(t) for t in templates}) != len(templates) or not all(t.injective for t in templates):
        return None
    fixed = [{k: v for k, v in t.labels if isinstance(v, str)} for t in templates]
    for i, a in enumerate(fixed):
        for b in fixed[i + 1:]:
            if not any(k in b and b[k] != v for k, v in a.items()):
                return None
    ranked.sort(key=lambda r: r[0])
    if any(before[1] > after[0] for before, after in zip(ranked, ranked[1:])):
        return None
    first = ranked[0][2].template  # 0.x: the family takes its type and HELP from the first series visited
    return ranked[0][0], Family(name, first.type, first.help, [ts for _, _, ts in ranked])


def _last_rank(part: TableSeries) -> int:
    present, rank = part.table.present, part.table.rank
    for i in reversed(part.positions):
        if present[i]:
            return rank[i]
    return -1


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
