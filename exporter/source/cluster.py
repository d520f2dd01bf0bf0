"""The cluster-wide source (`sidecar.mode: cluster`): one instance judges every
partition of the cluster from the Kafka Admin API alone, and hands the rules the MBeans Kafka
would serve for them, so that the rule files name them as they name a broker's own.

One read:
  source.admin.AdminSource.read()    the partitions (leader, replicas, ISR, reassignments), each
                                      topic's min ISR, the live brokers, what is unknown and why
  min ISR of a topic                  the Admin API, else sidecar.recompute.minInsyncReplicas
                                      (topics, then default), else 1 (source.admin.fallback)
  mbeans.cluster_view.judge_cluster   every partition under sidecar.recompute.semantics
                                      (kafka-3.7 by default; topic-command is a choice here)
and the MBeans, in this visiting order:
  kafka.server:type=ReplicaManager,name=<N>       the leader-counted gauges summed over the cluster
  kafka.controller:type=KafkaController,name=OfflinePartitionsCount
  kafka.cluster:type=Partition,name=<G>,leader=<id|none>,topic=<T>,partition=<P>
      every partition's gauges as its leader serves them (a table per gauge and leader, leaders in
      ascending order, `none` last), then Unavailable and PlaceholderReplicas (the view's own;
      PlaceholderReplicas only where there are any)
with Kafka's MBean class, attribute and MBeanInfo, through includeObjectNames/excludeObjectNames
like a broker's. The `leader` key follows `name`: rules/kafka-cluster.yml names these
`kafka_cluster_partition_<g>{topic,partition,leader}`, the names kafka-health.yml gives a broker's.

What the Admin API could not tell is in the self metrics (`Outcome`): its unknowns by input and
reason, and the fallbacks used. Log dirs are not read (the view does not use them).
"""
from __future__ import annotations

import dataclasses
import logging
import time
from array import array
from dataclasses import dataclass, field
from typing import Any

from kafka_jmx_sidecar.exporter.source.admin.fallback import MinIsrResolver, client_outdated, reassignments_known
from kafka_jmx_sidecar.exporter.source.admin.view import Input
from kafka_jmx_sidecar.exporter.base.model import Attribute, BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.exporter.rule_engine.config import Config
from kafka_jmx_sidecar.exporter.rule_engine.object_name_pattern import ALL_OBJECT_NAMES
from kafka_jmx_sidecar.exporter.source.protocol import ReadResult
from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.cluster_view import (ELR_DOMAIN, ELR_FIGURES, ELR_TYPE, LEADER_KEY, NO_LEADER, OFFLINE_SPEC,
                                                   PLACEHOLDERS, TOTALS, UNAVAILABLE, ClusterView, judge_cluster,
                                                   partition_gauges)
from kafka_jmx_sidecar.mbeans.health import DEFAULT_PROFILE

log = logging.getLogger("kafka_jmx_sidecar.cluster")

_GAUGE_CLASS = catalog.Kind.GAUGE.class_name
_GAUGE_TYPE = dict(catalog.ATTRIBUTES[catalog.Kind.GAUGE])["Value"]
_PARTITION = catalog.PARTITION[0]  # every Partition gauge's domain and type (the view's own ones too)


@dataclass
class Outcome:
    """What the last read knew, for the self metrics."""

    semantics: str = DEFAULT_PROFILE.name
    cluster_id: str | None = None
    partitions: int = 0
    live_brokers: int = 0
    broker_ids: tuple[int, ...] = ()  # the live ones
    unknowns: dict[tuple[str, str], int] = field(default_factory=dict)  # (input, reason) -> topics/brokers (1: cluster-wide)
    fallbacks: dict[tuple[str, str], int] = field(default_factory=dict)  # (input, fallback) -> topics or partitions
    elr_level: int | None = None  # the eligible.leader.replicas.version feature level; None: not known


class _Members:
    """One leader's partitions as BeanTable member columns, kept (the same objects) while they do
    not change, so that the rule engine's per-member cache holds from poll to poll."""

    __slots__ = ("topics", "topic", "partition", "positions", "wanted")

    def __init__(self, topics: list[str], topic: array, partition: array, positions: array):
        self.topics, self.topic, self.partition, self.positions = topics, topic, partition, positions
        self.wanted: dict[str, bytearray] = {}  # gauge name -> the members the filters let through


class ClusterSource:
    """A poll source (exporter/source/protocol.py) reading the Admin API; `admin` replaces the AdminSource
    (tests)."""

    def __init__(self, config: Config, settings: Any, admin: Any = None):
        self.config = config
        r = settings.recompute
        self.profile = r.profile if r is not None else DEFAULT_PROFILE
        self.min_isr_topics = dict(r.min_isr_topics) if r is not None else {}
        self.min_isr_default = r.min_isr_default if r is not None else None
        if admin is None:
            from kafka_jmx_sidecar.exporter.source.admin.source import AdminSource

            admin = AdminSource(dataclasses.replace(settings.admin, log_dirs=False))
        self.admin = admin
        self.target = f"the cluster at {admin.target} (Admin API)"
        self.outcome = Outcome(self.profile.name)
        self._members: dict[int, _Members] = {}
        self._told: set[tuple] = set()
        self._everything = (tuple(config.include_object_names) == (ALL_OBJECT_NAMES,)
                            and not config.exclude_object_names)

    @property
    def connected(self) -> bool:
        return self.admin.connected

    def close(self) -> None:
        self.admin.close()

    # --- one poll -------------------------------------------------------------------------------

    def read(self) -> ReadResult:
        started = time.monotonic()
        view = self.admin.read()  # AdminError (a SourceError) when nothing answers: the poll fails
        if client_outdated(view):
            self.admin.close()
        asked = time.monotonic()
        resolver = MinIsrResolver(view, self.min_isr_topics, self.min_isr_default)
        origins: dict[str, tuple[int, str]] = {}

        def min_isr_of(topic: str) -> int:
            found = origins.get(topic)
            if found is None:
                found = origins[topic] = resolver.resolve(topic)
            return found[0]

        states = view.partition_states(min_isr_of, view.cluster.live_brokers)
        cluster = judge_cluster(states, self.profile)
        judged = time.monotonic()

        out = self.outcome = Outcome(self.profile.name, view.cluster.cluster_id, len(cluster),
                                     len(view.cluster.live_brokers), tuple(sorted(view.cluster.live_brokers)),
                                     elr_level=view.elr_level)
        for u in view.unknowns:
            key = (u.input.value, u.reason.value)
            out.unknowns[key] = out.unknowns.get(key, 0) + 1
        for topic, (value, origin) in sorted(origins.items()):
            if origin != "admin":
                key = ("min_isr", origin)
                out.fallbacks[key] = out.fallbacks.get(key, 0) + 1
                self._tell(key + (topic,), "cluster: no min.insync.replicas from the Admin API for topic %s; using %d "
                           "(%s)", topic, value, origin)
        if not reassignments_known(view):
            u = view.unknown(Input.REASSIGNMENTS)
            key = ("reassignments", f"admin_api_{u.reason.value}")
            out.fallbacks[key] = len(cluster)
            self._tell(key, "cluster: reassignments are not known (%s): every partition is judged as if none were "
                       "moving, so a reassignment shows as under-replicated", key[1])
        if self.profile.has_elr and cluster.elr_totals is None:
            u = view.unknown(Input.ELIGIBLE_LEADERS)
            self._tell(("elr",), "cluster: the eligible leader replicas are not known (%s): the %s profile's ELR "
                       "figures are left out, not published as 0", u.detail if u else "not in the answer", self.profile.name)
        elif cluster.elr_totals is not None:
            self._told.discard(("elr",))
        mbeans, tables, ranks = self._mbeans(cluster)
        done = time.monotonic()
        return ReadResult(mbeans, round_trips=sum(getattr(self.admin, "requests", {}).values()),
                          phases={"admin": asked - started, "judge": judged - asked, "assemble": done - judged},
                          tables=tables, ranks=ranks)

    def _tell(self, key: tuple, message: str, *args: Any) -> None:
        if key not in self._told:
            self._told.add(key)
            log.warning(message, *args)

    # --- into the rules' input ------------------------------------------------------------------

    def _mbeans(self, cluster: ClusterView) -> tuple[list[MBean], list[BeanTable], list[int]]:
        mbeans: list[MBean] = []
        wants = self.config.wants_mbean
        sums = [((s.domain, s.type, s.name), cluster.totals[s.name]) for s in TOTALS]
        sums.append(((OFFLINE_SPEC.domain, OFFLINE_SPEC.type, OFFLINE_SPEC.name), cluster.offline))
        sums += [((ELR_DOMAIN, ELR_TYPE, t), v) for t, v in (cluster.elr_totals or {}).items()]
        for (domain, type_, gauge), value in sums:
            name = ObjectName(domain, (("type", type_), ("name", gauge)))
            if wants(name):
                mbeans.append(MBean(name, _GAUGE_CLASS, (Attribute("Value", value, catalog.ATTRIBUTE_DESCRIPTION,
                                                                   _GAUGE_TYPE),)))
        rank = len(mbeans)
        tables: list[BeanTable] = []
        members = self._leaders(cluster)
        gauges = [s.name for s in partition_gauges(cluster.profile)] + [UNAVAILABLE, PLACEHOLDERS]
        gauges += [g for g, _, _ in ELR_FIGURES if g in cluster.gauges]
        for gauge in gauges:
            column = cluster.placeholders if gauge == PLACEHOLDERS else cluster.gauges[gauge]
            for leader in sorted(members, key=lambda b: (b < 0, b)):
                m = members[leader]
                n = len(m.positions)
                keys = (("type", _PARTITION.type), ("name", gauge), (LEADER_KEY, NO_LEADER if leader < 0 else str(leader)))
                values = array("q", [column[i] for i in m.positions])
                present = self._wanted(m, gauge, keys)
                if gauge == PLACEHOLDERS:
                    present = bytearray(p and v > 0 for p, v in zip(present, values))
                if not present.count(1):
                    continue
                tables.append(BeanTable(_PARTITION.domain, keys, _GAUGE_CLASS, "Value",
                                        catalog.ATTRIBUTE_DESCRIPTION, _GAUGE_TYPE, True, m.topics, m.topic,
                                        m.partition, array("I", range(rank, rank + n)), values, present))
                rank += n
        return mbeans, tables, list(range(len(mbeans)))

    def _leaders(self, cluster: ClusterView) -> dict[int, _Members]:
        """The partitions of each leader (-1: none), as member columns; kept from the last poll
        where they are the same."""
        positions: dict[int, list[int]] = {}
        for i, leader in enumerate(cluster.leader):
            positions.setdefault(leader, []).append(i)
        out = {}
        for leader, where in positions.items():
            topic = array("I", [cluster.topic[i] for i in where])
            partition = array("I", [cluster.partition[i] for i in where])
            old = self._members.get(leader)
            if old is not None and old.topics == cluster.topics and old.topic == topic and old.partition == partition:
                old.positions = array("I", where)
                out[leader] = old
            else:
                out[leader] = _Members(cluster.topics, topic, partition, array("I", where))
        self._members = out
        return out

    def _wanted(self, m: _Members, gauge: str, keys: tuple) -> bytearray:
        """Which members includeObjectNames/excludeObjectNames let through (once per member list)."""
        wanted = m.wanted.get(gauge)
        if wanted is None:
            if self._everything:
                wanted = bytearray(b"\x01") * len(m.topic)
            else:
                wants, topics = self.config.wants_mbean, m.topics
                wanted = bytearray(wants(ObjectName(_PARTITION.domain, keys + (("topic", topics[t]),
                                                                                  ("partition", str(p)))))
                                   for t, p in zip(m.topic, m.partition))
            m.wanted[gauge] = wanted
        return bytearray(wanted)
