"""What one poll exposes, as the exposition writes it: metric families whose parts are Sample
lists, `TableSeries` (the members of one `BeanTable` that one rule outcome names, rendered
straight from the table's columns) and `MergedTables` (several TableSeries of one family written
interleaved in visiting order). `exporter.rule_engine.series` builds them from a poll.
"""
from __future__ import annotations

from array import array
from typing import Iterable

from kafka_jmx_sidecar.exporter.base.model import BeanTable, Sample


def scaled(value: float | int, fixed: float | None, factor: float) -> float:
    """The number a rule exposes for a leaf: its `value:` when it has one, else the leaf's value;
    times its `valueFactor`."""
    return (float(value) if fixed is None else fixed) * factor


# Label value slots of a MemberOutcome: the member's topic, the member's partition number.
TOPIC = ("slot", "topic")
PARTITION = ("slot", "partition")


class MemberOutcome:
    """A rule outcome for table members, with the member's own topic and partition as slots in
    its label values: one object for all the members a rule names alike."""

    __slots__ = ("name", "labels", "type", "help", "fixed", "factor", "injective", "objectname_attr", "rule")

    def __init__(self, name: str, labels: tuple, sample_type: str, help_text: str, fixed: float | None,
                 factor: float, objectname_attr: str, rule: int = -1):
        self.name, self.labels, self.type, self.help = name, labels, sample_type, help_text
        self.fixed, self.factor = fixed, factor
        values = [v for _, v in labels]
        self.injective = TOPIC in values and PARTITION in values
        self.objectname_attr = objectname_attr  # the attribute as 1.x's `_objectname` label spells it
        self.rule = rule  # the index of the rule that made it

    def member_labels(self, topic: str, partition: str) -> tuple[tuple[str, str], ...]:
        return tuple((k, topic if v is TOPIC else partition if v is PARTITION else v) for k, v in self.labels)


class TableSeries:
    """The series of the members `positions` (in visiting order) of `table` under `template`."""

    __slots__ = ("table", "template", "positions")

    def __init__(self, table: BeanTable, template: MemberOutcome, positions: array):
        self.table, self.template, self.positions = table, template, positions

    def first_rank(self) -> int | None:
        present, rank = self.table.present, self.table.rank
        for i in self.positions:
            if present[i]:
                return rank[i]
        return None

    def lowest_rank(self) -> int | None:
        """The visiting rank of the first present member visited (positions in any order)."""
        t, positions = self.table, self.positions
        if 0 not in t.present:  # the usual poll: every member there (a test in C)
            return min(map(t.rank.__getitem__, positions)) if len(positions) else None
        ranks = [t.rank[i] for i in positions if t.present[i]]
        return min(ranks) if ranks else None

    def __len__(self) -> int:
        present = self.table.present
        if 0 not in present:  # the usual poll: every member there (a test in C)
            return len(self.positions)
        return sum(1 for i in self.positions if present[i])


class MergedTables:
    """TableSeries of one family written member by member in visiting order, as one part: in 0.x
    naming jmx_exporter lists a family's series in the order it visited their MBeans, and default
    naming puts the members of several tables under one name (`kafka_cluster_Partition_Value`, a
    table per `name=`), their visits interleaved. `order[k]` is the index in `parts` of the k-th
    member visited, counting absent members too: each part's members come in its `positions`
    order (the visiting order), so that is all it takes, and it stays right for as long as the
    members and their ranks do (see `exporter.rule_engine.series.MergeOrders`)."""

    __slots__ = ("parts", "order")

    def __init__(self, parts: list[TableSeries], order: array):
        self.parts, self.order = parts, order

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)


class Family:
    """One metric family: name, type, HELP and its series as parts (Sample lists, TableSeries,
    MergedTables)."""

    __slots__ = ("name", "type", "help", "parts")

    def __init__(self, name: str, sample_type: str, help_text: str, parts: list):
        self.name, self.type, self.help, self.parts = name, sample_type, help_text, parts

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)


class RejectedPoll(Exception):
    """A poll the exposition cannot serve, as jmx_exporter could not (jmx_exporter 1.x answers
    such a scrape with HTTP 500): the collector treats it as a failed poll."""


def of_samples(samples: Iterable[Sample], one_x: bool = False) -> list[Family]:
    """Samples (duplicates already resolved) grouped into families in first-seen order. HELP is
    the first sample's. The type: in 0.x the first sample's (jmx_exporter 0.x creates a family
    with the first sample and adds the others as they come); in 1.x the samples' type when they
    all have one, else untyped (jmx_exporter 1.x's converter)."""
    families: dict[str, Family] = {}
    get = families.get
    for s in samples:
        f = get(s.name)
        if f is None:
            families[s.name] = Family(s.name, s.type, s.help, [[s]])
        else:
            if one_x and s.type != f.type:
                f.type = "untyped"
            f.parts[0].append(s)
    return list(families.values())
