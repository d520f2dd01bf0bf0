"""What ONE broker's health MBeans read under a chosen profile, from what that broker shows of
itself: per hosted partition its `InSyncReplicasCount` and `ReplicasCount` gauges (both 0 where it
does not lead, so leadership is `ReplicasCount > 0`), plus each topic's min ISR and, when the Admin
API knows them, the partitions' replica lists and reassignments.

This is the sidecar's recompute (`sidecar.recompute`): a broker of any release then publishes the
chosen profile's values. mbeans/recompute.py answers the other question (what every broker of a
release reports, from partition states), for the simulator and the demo. Both judge with
mbeans/health.py and take names and meanings from the catalog. Pure: plain values in, plain values out.

Per-partition inputs and outputs are columns aligned with the hosted partitions (a broker hosts
tens of thousands), and only the led partitions are judged: every Partition gauge is 0 elsewhere.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Callable, Mapping, NamedTuple, Sequence

from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.health import PYTHON_OPS, Counts, Profile, multiset_overlap

# The gauges a profile decides: the catalog's ReplicaManager and Partition gauges that show a
# health value (a flag they count or hold, or a replica count).
REPLICA_MANAGER_GAUGES = tuple(s for s in catalog.REPLICA_MANAGER if s.kind is catalog.Kind.GAUGE and s.flag)
PARTITION_GAUGES = tuple(s for s in catalog.PARTITION if s.shows)


class HostedPartitions(NamedTuple):
    """A broker's per-partition gauges as columns, one entry per hosted replica: member i is
    partition `partition[i]` of topic `topics[topic[i]]`."""

    topics: Sequence[str]
    topic: Sequence[int]
    partition: Sequence[int]
    isr: Sequence[int]  # InSyncReplicasCount
    replicas: Sequence[int]  # ReplicasCount


class Assignment(NamedTuple):
    """A partition's replica lists as the Admin API describes them (negative ids: placeholders)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    elr: int | None = None  # how many eligible leader replicas (KIP-966); None: not known


@dataclass
class BrokerHealth:
    """The recomputed values. `partition[name][i]` belongs to member i of the HostedPartitions."""

    replica_manager: dict[str, int]
    partition: dict[str, array]
    led: int = 0
    # led partitions that hold placeholder replica ids (negative ids): (topic, partition) -> count
    placeholders: dict[tuple[str, int], int] = field(default_factory=dict)
    # led partitions the Admin API did not describe (or described without replicas: assignment not
    # known yet), judged from the broker's own ReplicasCount alone, without reassignment
    without_assignment: int = 0
    # Under a profile with ELR figures: ElrUnderMinIsr per member (0 where not led) and the led
    # partitions it counts; None where some led partition's ELR is not known (absent, not 0). The
    # leaderless figures are no broker's: the cluster-wide mode has them.
    elr_under_min_isr: array | None = None
    elr_under_min_isr_count: int | None = None


def full_replica_count(shown: int, adding: int, broker: Profile) -> int:
    """The full replica list's length behind a broker's ReplicasCount `shown`: that gauge is the
    broker profile's `replicas_count`, linear in the list (2.5+: without adding replicas; before:
    the full list), so what it leaves out is what it reads on an empty list with `adding` adding."""
    empty = Counts(True, True, 0, adding, bool(adding), 0, 1)
    return shown - int(broker.replicas_count(empty, PYTHON_OPS))


def _assigned_counts(a: Assignment, isr: int, min_isr: int) -> Counts:
    """A led partition's Counts from its Admin API lists and the broker's own ISR count."""
    return tuple.__new__(Counts, (True, True, len(a.replicas), multiset_overlap(a.adding, a.replicas) if a.adding else 0,
                                  bool(a.adding or a.removing), isr, min_isr, a.elr))


def led_counts(shown: int, isr: int, min_isr: int, assignment: Assignment | None, broker: Profile) -> Counts:
    """What the formulas read of a partition this broker leads: from the Admin API's lists when
    known (`assignment`), else from the broker's own ReplicasCount `shown` (as `broker`, its
    release's profile, counts it) and InSyncReplicasCount `isr`, without a reassignment."""
    if assignment is not None and assignment.replicas:
        return _assigned_counts(assignment, isr, min_isr)
    return tuple.__new__(Counts, (True, True, full_replica_count(shown, 0, broker), 0, False, isr, min_isr, None))


def recompute_broker(hosted: HostedPartitions, *, profile: Profile, broker_profile: Profile,
                     min_isr_of: Callable[[str], int],
                     assignments: Mapping[tuple[str, int], Assignment] | None = None) -> BrokerHealth:
    """Every ReplicaManager and Partition health gauge of the catalog, as `profile` computes it.

    `broker_profile` is the profile of the broker's own release: it says what the broker's
    ReplicasCount counts. `min_isr_of(topic)` is asked once per topic this broker leads.
    `assignments` (None: the Admin API is not used or did not answer) gives the replica list
    (placeholders included) and the reassignment; a led partition it lacks is judged without a
    reassignment, from the broker's own ReplicasCount."""
    if profile.replicas_count is None:
        raise ValueError(f"profile {profile.name} describes kafka-topics.sh, not a broker's gauges")
    n = len(hosted.partition)
    rm = {s.name: 0 for s in REPLICA_MANAGER_GAUGES}
    rm_formulas = [(s.name, profile.formula(s.flag)) for s in REPLICA_MANAGER_GAUGES]
    columns = {s.name: array("q", bytes(8 * n)) for s in PARTITION_GAUGES}
    part_formulas = [(columns[s.name], profile.formula(s.shows)) for s in PARTITION_GAUGES]
    part_columns = [column for column, _ in part_formulas]
    out = BrokerHealth(rm, columns)
    topics, topic_of, partition_of, isr_of, shown_of = hosted
    min_isr: dict[int, int] = {}
    assignments = assignments or {}
    ops = PYTHON_OPS
    # Formulas are pure functions of Counts, and a broker's tens of thousands of partitions take a
    # handful of distinct Counts: each distinct one is judged once, then looked up. Without an
    # assignment the Counts follow from (ReplicasCount, InSyncReplicasCount, min ISR), a cheaper
    # key; with one the Counts are the key (8 fields: never equal to a 3-field key).
    judged: dict[tuple, tuple[Counts, tuple[int, ...], int | None]] = {}
    elr_formula = profile.elr_under_min_isr
    elr_column = array("q", bytes(8 * n)) if elr_formula is not None and assignments else None
    elr_known = True
    led_by: dict[tuple, int] = {}
    without_assignment = 0
    for i in range(n):
        shown = shown_of[i]
        if not shown:  # not the leader: every gauge reads 0
            continue
        t = topic_of[i]
        m = min_isr.get(t)
        if m is None:
            m = min_isr[t] = min_isr_of(topics[t])
        a = assignments.get((topics[t], partition_of[i])) if assignments else None
        if a is not None and a.replicas:
            holes = sum(1 for r in a.replicas if r < 0)
            if holes:
                out.placeholders[(topics[t], partition_of[i])] = holes
            key = _assigned_counts(a, isr_of[i], m)
        else:
            without_assignment += 1
            key = (shown, isr_of[i], m)
        found = judged.get(key)
        if found is None:
            c = key if len(key) == len(Counts._fields) else led_counts(shown, key[1], m, None, broker_profile)
            elr = None if elr_formula is None or c.elr is None else int(elr_formula(c, ops))
            found = judged[key] = (c, tuple(int(formula(c, ops)) for _, formula in part_formulas), elr)
            led_by[key] = 0
        led_by[key] += 1
        for column, value in zip(part_columns, found[1]):
            column[i] = value
        if elr_column is not None:
            elr_column[i] = found[2] or 0
            elr_known = elr_known and found[2] is not None  # one led partition without it: not known
    out.without_assignment = without_assignment
    if elr_column is not None and elr_known:
        out.elr_under_min_isr = elr_column
        out.elr_under_min_isr_count = sum(count for key, count in led_by.items() if judged[key][2])
    for key, count in led_by.items():
        c = judged[key][0]
        out.led += count
        for name, formula in rm_formulas:
            if formula(c, ops):
                rm[name] += count
    return out
