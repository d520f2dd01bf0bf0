"""The recompute in the poll: between the source and the rule engine, the broker's
ReplicaManager and Partition health MBeans are computed under the chosen profile
(`sidecar.recompute`) and put where the rules read them, with Kafka's own ObjectNames, attribute
names and MBeanInfo, so rule files, dashboards and alerts work unchanged.

What each mode does to a health family (a catalog gauge that shows a health value), given the
broker's release (`kafka.server:type=app-info,id=N` Version):

  family the release lacks (catalog `since`)   missing, outdated, all: added     off: absent
  family the release has                        missing: read                    off: read
                                                outdated: replaced when the release's own profile
                                                  (health.profile_for_version) computes it with
                                                  another formula than the chosen profile, else read
                                                all: replaced

Replaced values take the broker's MBeans' places in jmx_exporter's visiting order (the same
ObjectName, class and attribute metadata, a new value). Added ones come after every MBean the
broker serves, ReplicaManager gauges first, then the Partition families, in catalog order. Both
pass the configuration's includeObjectNames/excludeObjectNames as the broker's own would. The
inputs (the per-partition counts, the version) are read whatever the filters say (the source's
`BrokerReadings`) and reach the rules only when the filters let them.

Inputs that are not known fall back, each reported by a self metric and once in the log:
  min ISR of a topic      Admin API, else sidecar.recompute.minInsyncReplicas (topics, then default),
                          else 1, Kafka's default (fallback "kafka_default")
  reassignments           Admin API (Kafka 2.4+), else none: adding replicas count in the broker's own
                          ReplicasCount before 2.5, so a reassignment then shows as under-replicated
  broker version          unknown: nothing is recomputed that poll

A caller that has those inputs already (the backfill replaying an archived poll, which recorded
what the live poll resolved) gives them as `PollInputs` to `Recompute.apply`.
"""
from __future__ import annotations

import logging
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from kafka_jmx_sidecar.exporter.source.admin.fallback import MinIsrResolver, client_outdated, reassignments_known
from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Input
from kafka_jmx_sidecar.exporter.base.model import Attribute, BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings
from kafka_jmx_sidecar.exporter.rule_engine.config import Config
from kafka_jmx_sidecar.exporter.source.protocol import ReadResult, SourceError
from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.broker_recompute import (PARTITION_GAUGES, REPLICA_MANAGER_GAUGES, Assignment, BrokerHealth,
                                     HostedPartitions, full_replica_count, recompute_broker)
from kafka_jmx_sidecar.mbeans.cluster_view import ELR_DOMAIN, ELR_FIGURES, ELR_TYPE
from kafka_jmx_sidecar.mbeans.health import Profile, parse_version, profile_for_version

log = logging.getLogger("kafka_jmx_sidecar.recompute")

READ, ADDED, REPLACED, NONE = "read", "added", "replaced", "none"
STATES = (READ, ADDED, REPLACED, NONE)
FAMILIES = REPLICA_MANAGER_GAUGES + PARTITION_GAUGES
_GAUGE_TYPE = dict(catalog.ATTRIBUTES[catalog.Kind.GAUGE])["Value"]


def action(spec: catalog.MBeanSpec, mode: str, version: str, profile: Profile) -> str:
    """What `mode` does to one health family on a broker of `version` (see the module docstring)."""
    if not spec.exists_in(version):
        return NONE if mode == "off" else ADDED
    if mode in ("off", "missing"):
        return READ
    if mode == "all":
        return REPLACED
    own = profile_for_version(version).formula(spec.shows)
    return READ if own is profile.formula(spec.shows) else REPLACED


class PollInputs(Protocol):
    """One poll's min ISR and replica lists, given instead of asked of the Admin API and the
    configuration."""

    def min_isr(self, topic: str) -> int:
        """The topic's min.insync.replicas."""

    def assignments(self) -> tuple[dict | None, str | None]:
        """(topic, partition) -> Assignment, and why reassignments are not known (None: they are)."""


@dataclass
class Outcome:
    """What the last poll's recompute did, for the self metrics."""

    version: str | None = None
    broker_semantics: str | None = None
    # family (MBeanSpec.object_name: without topic and partition) -> state
    states: dict[str, str] = field(default_factory=dict)
    fallbacks: dict[tuple[str, str], int] = field(default_factory=dict)  # (input, fallback) -> how many
    placeholders: dict[tuple[str, int], int] = field(default_factory=dict)
    led: int = 0


class Recompute:
    """One per collector. `apply(result)` returns the result the rules read, and sets `outcome`."""

    def __init__(self, settings: RecomputeSettings, config: Config, admin: Any = None, quiet: bool = False):
        self.settings = settings
        self.quiet = quiet  # nothing logged: a replay of polls the live sidecar already logged
        self.profile = settings.profile
        self.config = config
        self.admin = admin  # an exporter.admin.AdminSource, or None
        self.outcome = Outcome()
        self.view: AdminView | None = None  # the Admin API's answer of the last poll, if it asked (the archive keeps it)
        self._told: set[tuple] = set()  # what was logged once
        # (family, id of the member list) -> (that list, the members the filters let through)
        self._wanted: dict[tuple, tuple] = {}
        self._added_ranks: tuple | None = None

    # --- the inputs -----------------------------------------------------------------------------

    def _tell(self, key: tuple, message: str, *args: Any) -> None:
        if not self.quiet and key not in self._told:
            self._told.add(key)
            log.warning(message, *args)

    def _admin_view(self) -> AdminView | None:
        if self.admin is None:
            return None
        try:
            view = self.admin.read()
            if client_outdated(view):
                self.admin.close()
            return view
        except SourceError as e:  # exporter.admin's AdminError (kafka-python is imported only with it)
            self._tell(("admin", str(e)), "recompute: the Admin API could not be read (%s); min ISR and "
                       "reassignments fall back as without it until it can", e)
            return None

    def _min_isr(self, view: AdminView | None, fallbacks: dict, topics_used: set[str]):
        """min_isr_of(topic) and, once the recompute has asked, the topics per fallback."""
        s = self.settings
        resolver = MinIsrResolver(view, s.min_isr_topics, s.min_isr_default) if view is not None else None

        def of(topic: str) -> int:
            topics_used.add(topic)
            value, origin = resolver.resolve(topic) if resolver is not None else s.configured_min_isr(topic)
            # the documented sources: the Admin API when configured, else the configuration
            primary = origin == "admin" if self.admin is not None else origin != "kafka_default"
            if not primary:
                fallbacks.setdefault(("min_isr", origin), set()).add(topic)
            return value

        return of

    def _assignments(self, view: AdminView | None) -> tuple[dict | None, str | None]:
        """(topic, partition) -> Assignment from the Admin API, and why reassignments are not
        known (None: they are)."""
        if view is None:
            return None, "no_admin_api" if self.admin is None else "admin_api_unreachable"
        known = reassignments_known(view)
        out = {(p.topic, p.partition): Assignment(
            p.replicas, p.adding_replicas if known else (), p.removing_replicas if known else (),
            None if p.eligible_leader_replicas is None else len(p.eligible_leader_replicas))
            for p in view.partitions}
        if known:
            return out, None
        u = view.unknown(Input.REASSIGNMENTS)
        return out, f"admin_api_{u.reason.value}" if u is not None else "admin_api"

    # --- one poll -------------------------------------------------------------------------------

    def apply(self, result: ReadResult, given: PollInputs | None = None) -> ReadResult:
        """The result the rules read. `given`: this poll's min ISR and replica lists, not asked
        of the Admin API or the configuration."""
        broker = result.broker
        out = self.outcome = Outcome()
        self.view = None
        version = broker.version if broker is not None else None
        if broker is not None:
            for problem in broker.problems:
                self._tell(("problem", problem), "recompute: %s", problem)
        if version is not None:
            try:
                parse_version(version)
            except ValueError:
                self._tell(("version", version), "recompute: the broker's app-info Version %r is not a Kafka "
                           "release; nothing is recomputed", version)
                version = None
        if version is None or broker is None or broker.hosted is None:
            out.fallbacks[("broker_version", "nothing_recomputed")] = 1
            self._tell(("no_version",), "recompute: the broker's release is not known (kafka.server:type=app-info,"
                       "id=N Version); nothing is recomputed until it is")
            out.states = {s.object_name: (READ if s.exists_in("0.8.0") else NONE) for s in FAMILIES}
            return result
        out.version = version
        broker_profile = profile_for_version(version)
        out.broker_semantics = broker_profile.name
        actions = {s.name: action(s, self.settings.mode, version, self.profile) for s in FAMILIES}
        changing = [s for s in FAMILIES if actions[s.name] in (ADDED, REPLACED)]
        health = None
        if changing or self.profile.has_elr:  # the ELR figure is always added under such a profile
            health = self._health(broker.hosted, broker_profile, version, out, given)
        return self._merge(result, broker.hosted, health, actions, out)

    def _health(self, hosted: HostedPartitions, broker_profile: Profile, version: str, out: Outcome,
                given: PollInputs | None = None) -> BrokerHealth:
        fallbacks: dict[tuple[str, str], set] = {}
        min_isr_of: Callable[[str], int]
        if given is None:
            view = self.view = self._admin_view()
            assignments, unknown_why = self._assignments(view)
            min_isr_of = self._min_isr(view, fallbacks, set())
        else:
            assignments, unknown_why = given.assignments()
            min_isr_of = given.min_isr
        health = recompute_broker(hosted, profile=self.profile, broker_profile=broker_profile,
                                  min_isr_of=min_isr_of, assignments=assignments)
        out.led = health.led
        out.placeholders = health.placeholders
        for key, topics in fallbacks.items():
            out.fallbacks[key] = len(topics)
            new = sorted(t for t in topics if (key, t) not in self._told)
            if new and not self.quiet:
                self._told.update((key, t) for t in new)
                log.warning("recompute: no min.insync.replicas known for %d topic(s) (%s%s); using %s (%s)",
                            len(new), ", ".join(new[:10]), ", ..." if len(new) > 10 else "",
                            "the configured default" if key[1] == "configured_default" else
                            "the brokers' default from the Admin API" if key[1] == "admin_broker_default" else
                            "the topic's value in sidecar.recompute.minInsyncReplicas.topics" if key[1] == "configured"
                            else "1, Kafka's default", key[1])
        if unknown_why is not None:
            out.fallbacks[("reassignments", unknown_why)] = health.led
            counts_adding = full_replica_count(0, 1, broker_profile) == 0
            self._tell(("reassignments", unknown_why), "recompute: reassignments are not known (%s): partitions "
                       "are judged as if none were moving; Kafka %s's own ReplicasCount %s", unknown_why,
                       version, "counts adding replicas, so a reassignment shows as under-replicated"
                       if counts_adding else "leaves adding replicas out")
        elif health.without_assignment:
            out.fallbacks[("reassignments", "partition_not_described")] = health.without_assignment
        if self.profile.has_elr and health.elr_under_min_isr is None:
            u = self.view.unknown(Input.ELIGIBLE_LEADERS) if given is None and self.view is not None else None
            why = ("no_admin_api" if self.admin is None and given is None else f"admin_api_{u.reason.value}" if u
                   else "not_known")
            out.fallbacks[("eligible_leader_replicas", why)] = health.led
            self._tell(("elr", why), "recompute: the eligible leader replicas of the led partitions are not known "
                       "(%s): ElrUnderMinIsr is left out, not published as 0", why)
        return health

    # --- into the rules' input ------------------------------------------------------------------

    def _merge(self, result: ReadResult, hosted: HostedPartitions, health: BrokerHealth | None,
               actions: dict[str, str], out: Outcome) -> ReadResult:
        mbeans = list(result.mbeans)
        tables = list(result.tables)
        added_beans = self._merge_replica_manager(mbeans, health, actions, out)
        added_tables = self._merge_partitions(mbeans, tables, hosted, health, actions, out)
        if health is not None and health.elr_under_min_isr is not None:
            self._add_elr(added_beans, added_tables, hosted, health)
        if not added_beans and not added_tables:
            return ReadResult(mbeans, result.round_trips, result.phases, result.queries, tables, result.ranks,
                              result.broker)
        ranks = list(result.ranks) if result.ranks is not None else list(range(len(mbeans)))
        _append_added(mbeans, tables, ranks, added_beans, added_tables)
        return ReadResult(mbeans, result.round_trips, result.phases, result.queries, tables, ranks, result.broker)

    def _merge_replica_manager(self, mbeans: list[MBean], health: BrokerHealth | None, actions: dict[str, str],
                               out: Outcome) -> list[MBean]:
        """The ReplicaManager gauges replaced in `mbeans` (in place); returns the added ones."""
        by_name = {(mb.name.domain, mb.name.keys): k for k, mb in enumerate(mbeans)}
        added: list[MBean] = []
        for spec in REPLICA_MANAGER_GAUGES:
            act = actions[spec.name]
            name = ObjectName(spec.domain, (("type", spec.type), ("name", spec.name)))
            k = by_name.get((name.domain, name.keys))
            if act == ADDED and k is not None:  # served, though the catalog says the release lacks it
                act = READ
            state = act
            if act == REPLACED and k is not None:
                mb = mbeans[k]
                mbeans[k] = MBean(mb.name, mb.class_name, tuple(
                    Attribute(a.name, health.replica_manager[spec.name], a.description, a.type_name)
                    if a.name == "Value" else a for a in mb.attributes))
            elif act == ADDED and self.config.wants_mbean(name):
                added.append(MBean(name, catalog.Kind.GAUGE.class_name, (
                    Attribute("Value", health.replica_manager[spec.name], catalog.ATTRIBUTE_DESCRIPTION, _GAUGE_TYPE),)))
            elif k is None:
                state = NONE  # the filters keep it from the rules, or the broker did not serve it
            else:
                state = READ
            out.states[spec.object_name] = state
        return added

    def _merge_partitions(self, mbeans: list[MBean], tables: list[BeanTable], hosted: HostedPartitions,
                          health: BrokerHealth | None, actions: dict[str, str], out: Outcome) -> list[BeanTable]:
        """The Partition families replaced in `tables` or `mbeans` (in place); returns the added tables."""
        by_table = {(t.domain, t.keys): k for k, t in enumerate(tables)}
        added: list[BeanTable] = []
        for spec in PARTITION_GAUGES:
            act = actions[spec.name]
            keys = (("type", spec.type), ("name", spec.name))
            k = by_table.get((spec.domain, keys))
            if act == ADDED and k is not None:
                act = READ
            state = act
            if act == REPLACED and k is not None:
                tables[k] = _replaced(tables[k], hosted, health.partition[spec.name])
            elif act == ADDED:
                wanted = self._wanted_members(spec, keys, hosted)
                if wanted.count(1):
                    added.append(BeanTable(
                        spec.domain, keys, catalog.Kind.GAUGE.class_name, "Value", catalog.ATTRIBUTE_DESCRIPTION,
                        _GAUGE_TYPE, True, hosted.topics, hosted.topic, hosted.partition,
                        array("I", bytes(4 * len(hosted.topic))), health.partition[spec.name], wanted))
                else:
                    state = NONE
            elif k is None:
                # not a table: the filters keep it from the rules, or it is read whole (attribute filters)
                whole = [j for j, mb in enumerate(mbeans)
                         if (mb.name.domain, mb.name.get("type"), mb.name.get("name")) == spec.key]
                state = NONE if not whole else act if act == REPLACED else READ
                if whole and act == REPLACED:
                    _replace_whole(mbeans, whole, hosted, health.partition[spec.name])
            else:
                state = READ
            out.states[spec.object_name] = state
        return added

    def _add_elr(self, beans: list[MBean], tables: list[BeanTable], hosted: HostedPartitions,
                 health: BrokerHealth) -> None:
        """The ELR figure of the led partitions (mbeans/cluster_view.py names it as the cluster-wide
        mode does): per partition in the Partition family's shape, and its count."""
        gauge, total, _ = ELR_FIGURES[0]
        name = ObjectName(ELR_DOMAIN, (("type", ELR_TYPE), ("name", total)))
        if self.config.wants_mbean(name):
            beans.append(MBean(name, catalog.Kind.GAUGE.class_name, (Attribute(
                "Value", health.elr_under_min_isr_count, catalog.ATTRIBUTE_DESCRIPTION, _GAUGE_TYPE),)))
        spec = catalog.PARTITION[0]
        keys = (("type", spec.type), ("name", gauge))
        wanted = self._wanted_members(spec, keys, hosted, gauge)
        if wanted.count(1):
            tables.append(BeanTable(spec.domain, keys, catalog.Kind.GAUGE.class_name, "Value",
                                    catalog.ATTRIBUTE_DESCRIPTION, _GAUGE_TYPE, True, hosted.topics, hosted.topic,
                                    hosted.partition, array("I", bytes(4 * len(hosted.topic))),
                                    health.elr_under_min_isr, wanted))

    def _wanted_members(self, spec: catalog.MBeanSpec, keys: tuple, hosted: HostedPartitions,
                        name: str | None = None) -> bytearray:
        """Which members of an added family the configuration's filters let through (kept while
        the member list is the same object: the filters run per member once per names refresh)."""
        # keyed by the member list's identity; the entry holds the list, so that id stays its own
        cache_key = (spec.key, name, id(hosted.topic))
        entry = self._wanted.get(cache_key)
        if entry is not None and entry[0] is hosted.topic:
            wanted = entry[1]
        else:
            if len(self._wanted) > 32:
                self._wanted.clear()
            wants = self.config.wants_mbean
            topics = hosted.topics
            wanted = bytearray(1 if wants(ObjectName(spec.domain, keys + (("topic", topics[t]), ("partition", str(p)))))
                               else 0 for t, p in zip(hosted.topic, hosted.partition))
            self._wanted[cache_key] = (hosted.topic, wanted)
        return bytearray(wanted)


def _append_added(mbeans: list[MBean], tables: list[BeanTable], ranks: list[int], added_beans: list[MBean],
                  added_tables: list[BeanTable]) -> None:
    """Added MBeans and tables go after everything the broker serves (a stable, documented place)."""
    top = max([max(ranks, default=-1)] + [max(t.rank, default=-1) for t in tables]) + 1
    for mb in added_beans:
        mbeans.append(mb)
        ranks.append(top)
        top += 1
    for t in added_tables:
        t.rank = array("I", range(top, top + len(t)))
        top += len(t)
        tables.append(t)


def _replaced(table: BeanTable, hosted: HostedPartitions, values: array) -> BeanTable:
    """The broker's own table with the recomputed values: the same members (so the rule engine's
    per-member cache holds), names, ranks and MBeanInfo. A member the recompute did not see keeps
    the broker's value."""
    if table.topic is hosted.topic or (table.topic == hosted.topic and table.partition == hosted.partition
                                       and list(table.topics) == list(hosted.topics)):
        new = array(table.values.typecode, values) if table.integral else array("d", values)
    else:
        at = {(hosted.topics[t], p): i for i, (t, p) in enumerate(zip(hosted.topic, hosted.partition))}
        new = array(table.values.typecode, table.values)
        for i in range(len(table)):
            j = at.get((table.topics[table.topic[i]], table.partition[i]))
            if j is not None:
                new[i] = values[j]
    return BeanTable(table.domain, table.keys, table.class_name, table.attribute, table.description,
                     table.type_name, table.integral, table.topics, table.topic, table.partition, table.rank,
                     new, bytearray(table.present))


def _replace_whole(mbeans: list[MBean], positions: list[int], hosted: HostedPartitions, values: array) -> None:
    at = {(hosted.topics[t], p): i for i, (t, p) in enumerate(zip(hosted.topic, hosted.partition))}
    for k in positions:
        mb = mbeans[k]
        partition = mb.name.get("partition")
        j = at.get((mb.name.get("topic"), int(partition))) if partition and partition.isdigit() else None
        if j is not None:
            mbeans[k] = MBean(mb.name, mb.class_name, tuple(
                Attribute(a.name, values[j], a.description, a.type_name) if a.name == "Value" else a
                for a in mb.attributes))
