"""What one poll exposes: its series as metric families, in the order jmx_exporter writes them,
with duplicates resolved as the naming mode says.

A family is the series sharing a name, in the order the MBeans were visited; families come in
the order their first series was visited; HELP is the first series' help; samples of different
types make the family untyped (`exporter.families.of_samples`).

Duplicates (same name and labels) can only meet inside a family. A family made of one table
part whose outcome's labels hold both the topic and the partition cannot have any (the members
differ in one of them), so it is never expanded; any other family with a table part is expanded
into Samples, merged with its other series in visiting order, and resolved like them.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from exporter.families import Family, TableSeries, of_samples, scaled
from exporter.model import Sample
from exporter.rules.naming import add_objectname_on_collisions, bean_text, first_of_each, series_key


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
        if table_parts:
            entries = list(entries)
            for ts in table_parts:
                entries.extend(_entries(ts))
            entries.sort(key=lambda e: e[0])
        if not entries:
            continue
        if one_x:
            kept = add_objectname_on_collisions([(s, objectname) for _, s, _, objectname in entries])
        else:
            kept, duplicates = first_of_each((key, s) for _, s, key, _ in entries)
            dropped += duplicates
        f = of_samples(kept)[0]
        ordered.append((entries[0][0], f))
    ordered.sort(key=lambda x: x[0])
    return [f for _, f in ordered], dropped
