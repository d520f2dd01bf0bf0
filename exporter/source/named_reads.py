"""Families of MBeans read whole (not kept as columns) whose members each hold one number, asked by
query when the costs say so: the replica fetchers' lag gauges
(`kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=C,topic=T,partition=P`, one per
partition a broker follows: two thirds of a broker's partitions at replication factor 3, 0 while
the follower keeps up).

A family is `domain:type=T,name=N,...` with at least MIN_MEMBERS members. The first poll reads
them all, which says whether every member is a gauge of one integer `Value` (else the family is
always read) and which value most hold; unless the listing says every member is a gauge (its
class name) and a few members read, spread over the family, hold integers, most of them one: that
value then stands for the family's common value, and the first poll already asks by query. Later polls ask `Value != common` of the family's pattern
when the reads that saves cost more than the query and the names it returns (query_costs,
measured on this broker), read the members it returns and serve the others `common`, as the MBean
last read with that value (the same object when it held it already): what a read would give at
the query's moment.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Mapping, Sequence

from kafka_jmx_sidecar.exporter.base.model import MBean, ObjectName
from kafka_jmx_sidecar.exporter.source import family_reads
from kafka_jmx_sidecar.exporter.source.jmx import JmxClient
from kafka_jmx_sidecar.exporter.source.query_costs import QueryCosts
from kafka_jmx_sidecar.mbeans import catalog

MIN_MEMBERS = 1000  # fewer: reading them costs less than a query's scan of the domain
_GAUGE = catalog.Kind.GAUGE.class_name


def holds_one_integer(mb: MBean) -> bool:
    """mb is a Yammer gauge whose one attribute, `Value`, holds an integer: what a query of
    `Value != common` can stand for."""
    attrs = mb.attributes
    return mb.class_name == _GAUGE and len(attrs) == 1 and attrs[0].name == "Value" and type(attrs[0].value) is int


class NamedFamily:
    __slots__ = ("pattern", "texts", "names", "last", "common", "unusual", "eligible", "gauges")

    def __init__(self, pattern: str, members: list[tuple[str, ObjectName]], gauges: bool = False):
        self.pattern = pattern
        self.gauges = gauges  # the listing gave every member the gauge's class name
        self.texts = [t for t, _ in members]
        self.names = dict(members)  # listed text -> ObjectName
        self.last: dict[ObjectName, MBean] = {}  # what was served for each member last poll
        self.common: int | None = None
        self.unusual = 0  # members not holding `common` at the last poll
        self.eligible: bool | None = None  # every member a gauge of one integer Value (None: not read yet)

    def learn(self, mbeans: Sequence[MBean]) -> None:
        """What a poll read of the members (every one): the common value, how many hold another."""
        values = []
        self.last = {}
        for mb in mbeans:
            self.last[mb.name] = mb
            if holds_one_integer(mb):
                values.append(mb.attributes[0].value)
            else:
                self.eligible = False
        self.eligible = self.eligible is not False and bool(values)
        if self.eligible:
            (self.common, held), = Counter(values).most_common(1)
            self.unusual = len(self.texts) - held


def families_of(names: Sequence[ObjectName], texts: Sequence[str], classes: Mapping[str, str] | None = None
                ) -> list[NamedFamily]:
    """The families of the names read whole: those `domain:type=T,name=N,...` with one more key at
    least and MIN_MEMBERS members or more. `classes`: name text -> its class name, as listed."""
    classes = classes or {}
    groups: dict[str, list[tuple[str, ObjectName]]] = {}
    gauges: dict[str, bool] = {}
    for n, text in zip(names, texts):
        keys = n.keys
        if len(keys) > 2 and keys[0][0] == "type" and keys[1][0] == "name":
            pattern = f"{n.domain}:type={keys[0][1]},name={keys[1][1]},*"
            groups.setdefault(pattern, []).append((text, n))
            gauges[pattern] = gauges.get(pattern, True) and classes.get(text) == _GAUGE
    return [NamedFamily(p, m, gauges[p]) for p, m in groups.items() if len(m) >= MIN_MEMBERS]


def learn_from(families: Sequence[NamedFamily], read: Sequence[MBean]) -> None:
    """What the families read whole this poll hold (NamedFamily.learn), from the MBeans read."""
    members: dict[ObjectName, list[MBean]] = {}
    for f in families:
        got: list[MBean] = []
        for name in f.names.values():
            members[name] = got
    if not members:
        return
    for mb in read:
        got = members.get(mb.name)
        if got is not None:
            got.append(mb)
    for f in families:
        f.learn(members[next(iter(f.names.values()))])


class NamedReads:
    """Which of the named families a poll asks by query, and how it serves them."""

    def __init__(self, client: JmxClient, costs: QueryCosts):
        self.client = client
        self.costs = costs
        self._variants: dict[frozenset, list[str]] = {}  # queried patterns -> the names read (same list object)

    def forget(self) -> None:
        self._variants.clear()

    def queried(self, families: Sequence[NamedFamily]) -> list[NamedFamily]:
        out = []
        for f in families:
            if f.eligible is None and f.gauges:
                self._sample(f)
            if f.eligible and f.common is not None:
                c = self.costs
                if (len(f.texts) - f.unusual) * c.read_seconds > c.query_seconds + f.unusual * c.hit_seconds:
                    out.append(f)
        return out

    def _sample(self, f: NamedFamily) -> None:
        """Nothing read of f yet, its members all gauges: a few of them read stand for it. When
        they all hold an integer and two or more hold one value, f takes that value as its common
        one, and each member the MBean a read would give while it holds it (as a family read
        whole would: the members are alike but for their name and value)."""
        size = len(f.texts)
        picked = f.texts[::max(1, size // family_reads.SAMPLE_NUMBERS)][:family_reads.SAMPLE_NUMBERS]
        read = self.client.read(picked)
        if len(read) < len(picked) or not all(holds_one_integer(mb) for mb in read):
            return  # read whole: the first poll learns what the family is
        (common, held), = Counter(mb.attributes[0].value for mb in read).most_common(1)
        if held < 2:
            return
        like = read[0]
        attribute = (replace(like.attributes[0], value=common),)
        f.last = {name: MBean(name, like.class_name, attribute) for name in f.names.values()}
        f.common, f.eligible = common, True
        f.unusual = size - held * size // len(read)

    def to_read(self, rest: list[str], queried: Sequence[NamedFamily]) -> list[str]:
        """The names read whole this poll: `rest` without the queried families' members (a list
        object kept per choice, so that the client keeps its read plan)."""
        key = frozenset(f.pattern for f in queried)
        if not key:
            return rest
        out = self._variants.get(key)
        if out is None:
            skip = {t for f in queried for t in f.texts}
            out = self._variants[key] = [t for t in rest if t not in skip]
        return out

    def serve(self, f: NamedFamily) -> list[MBean]:
        """f's members: `Value != common` asked, the members it returned read (and any never
        read), the others served `common`."""
        hits = set(self.client.query_texts(f.pattern, "Value", "!=", f.common))
        read = [t for t in f.texts if t in hits or f.names[t] not in f.last]
        got = {mb.name: mb for mb in self.client.read(read)} if read else {}
        asked = set(read)
        out = []
        unusual = 0
        for t in f.texts:
            name = f.names[t]
            if t in asked:
                mb = got.get(name)  # None: gone since the listing
            else:
                mb = f.last[name]
                if mb.attributes[0].value != f.common:
                    mb = replace(mb, attributes=(replace(mb.attributes[0], value=f.common),))
            if mb is None:
                f.last.pop(name, None)
                continue
            f.last[name] = mb
            out.append(mb)
            unusual += mb.attributes[0].value != f.common
        f.unusual = unusual
        return out
