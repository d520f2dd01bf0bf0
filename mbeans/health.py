"""Partition-health semantics: the one definition of every formula.

Every formula is written on `Counts`, the handful of numbers a partition's health depends on, with
the few operations that differ between plain Python and a Spark Column (`least`, `not_`) passed in
as `Ops`. The `health` command and the recompute (mbeans/recompute.py) evaluate them on Python
values with `PYTHON_OPS`; written this way, the same definitions also evaluate on Spark Columns
(Spark's `least` and `~`), which is how a backfill is to use them rather than a second copy in SQL.

Formulas use only `&`, `|`, `-`, comparisons and the `Ops`, because those mean the same on bools,
ints and Columns. (Python's `and`/`or`/`not` do not work on Columns.)
"""
from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

NO_LEADER = -1


class PartitionState(NamedTuple):
    """What is known of one partition. Negative replica ids are placeholders (never in the ISR,
    never a leader). `live_brokers` None means unknown: a leader is then taken to be live.
    (A NamedTuple rather than a frozen dataclass: it is built a million times by `health`.)"""

    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    min_isr: int = 1
    live_brokers: frozenset[int] | None = None
    # KIP-966, from DescribeTopicPartitions (Kafka 3.8+) or describe output's `Elr:` and
    # `LastKnownElr:`; None: not known (an older broker or tool, or the Admin API refused it)
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


class Counts(NamedTuple):
    """The numbers the formulas read, built from partition lists (`counts_of`); any other source
    of states (a broker's per-partition gauges, columns of a table) builds these and nothing else."""

    has_leader: Any  # bool
    leader_live: Any  # bool: a leader that is a live broker (has_leader when liveness is unknown)
    replicas: Any  # len(replicas): the FULL list, adding and removing replicas included
    adding: Any  # adding replicas that are in `replicas` (multiset count)
    reassigning: Any  # bool: adding or removing is non-empty
    isr: Any  # len(isr)
    min_isr: Any  # the topic's min.insync.replicas
    elr: Any = None  # len(eligible leader replicas); None: not known (no ELR formula applies)


class Ops(NamedTuple):
    least: Callable[[Any, Any], Any]
    not_: Callable[[Any], Any]


PYTHON_OPS = Ops(least=min, not_=operator.not_)


def multiset_overlap(adding: tuple[int, ...], replicas: tuple[int, ...]) -> int:
    """How many adding ids `replicas` holds, counting repeats: an adding id that is not in
    `replicas` removes nothing from the replication factor."""
    if not adding:
        return 0
    if len(adding) == 1:
        return 1 if adding[0] in replicas else 0
    return sum((Counter(adding) & Counter(replicas)).values())


def has_leader(leader: int | None) -> bool:
    # -1 is Kafka's "no leader"; placeholders (other negative ids) never lead either.
    return leader is not None and leader >= 0


_new_counts = tuple.__new__  # skips NamedTuple's Python-level __new__ on this hot path


def counts_of(state: PartitionState) -> Counts:
    topic, partition, leader, replicas, isr, adding, removing, min_isr, live, elr, _ = state
    lead = leader is not None and leader >= 0  # has_leader(), inlined: runs per partition
    return _new_counts(Counts, (
        lead,
        lead and (live is None or leader in live),
        len(replicas),
        multiset_overlap(adding, replicas) if adding else 0,
        bool(adding or removing),
        len(isr),
        min_isr,
        None if elr is None else len(elr),
    ))


def placeholder_count(state: PartitionState) -> int:
    """Replicas that do not exist yet (negative ids: the placeholders of PartitionState)."""
    return sum(1 for r in state.replicas if r < 0)


# --- derived quantities -------------------------------------------------------------------------

def replication_factor(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """KIP-352: during a reassignment the adding replicas do not count; removing ones still do."""
    return c.replicas - c.adding


def effective_min_isr(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """Kafka 3.7+: min.insync.replicas capped by the FULL replica list (adding included)."""
    return ops.least(c.min_isr, c.replicas)


# --- the formulas -------------------------------------------------------------------------------

# Broker-gauge formulas count a partition on its leader, so they need a LIVE leader: a leader that
# is not a live broker (known only when `live_brokers` is) has no gauges, and the controller counts
# the partition offline. With liveness unknown `leader_live` is `has_leader`.

def urp_kip352(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    return c.leader_live & (replication_factor(c, ops) - c.isr > 0)


def urp_legacy(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    # Before KIP-352 the adding replicas count, so a reassignment shows as under-replicated.
    return c.leader_live & (c.isr < c.replicas)


def urp_topic_command(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    return replication_factor(c, ops) - c.isr > 0


def under_min_isr_effective(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    return c.leader_live & (c.isr < effective_min_isr(c, ops))


def at_min_isr_effective(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    return c.leader_live & (c.isr == effective_min_isr(c, ops))


def under_min_isr_raw(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    return c.leader_live & (c.isr < c.min_isr)


def at_min_isr_raw(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    return c.leader_live & (c.isr == c.min_isr)


def under_min_isr_topic_command(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    return ops.not_(c.has_leader) | (c.isr < c.min_isr)


def at_min_isr_topic_command(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    return c.isr == c.min_isr


def no_live_leader(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """No leader, or one that is not a live broker. No broker gauge sees such a partition; the
    controller's OfflinePartitionsCount counts it (ZooKeeper controllers: a leader not among the
    live brokers, which happens when the controller dies as the last replica's leader and its
    successor rewrites nothing). kafka-topics.sh --unavailable-partitions: `!hasLeader ||
    !liveBrokers.contains(leader)`, the same."""
    return ops.not_(c.leader_live)


def replicas_count_kip352(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """Partition ReplicasCount on the leader, 2.5+: the replication factor without adding ones."""
    return replication_factor(c, ops)


def replicas_count_legacy(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    return c.replicas


def isr_count(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """Partition InSyncReplicasCount on the leader: the ISR's size, in every release."""
    return c.isr


def reassigning(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """ReassigningPartitions counts a led partition while adding or removing replicas (2.5+; the
    same rule wherever it is computed)."""
    return c.leader_live & c.reassigning


# Eligible leader replicas (KIP-966; on by default in clusters created by Kafka 4.1 and later).
# With ELR on, the high watermark does not advance while the ISR is below min ISR, so the replicas
# that left the ISR that way hold every committed record: the controller keeps them as the ELR and
# elects one (an unfenced one, once the ISR is empty) without an unclean election. The ELR is
# empty while the ISR is at or above min ISR, and a change of the topic's or the cluster's
# min.insync.replicas clears it. No broker gauge counts any of this: these figures exist only
# where the ELR lists are known (Admin API DescribeTopicPartitions, describe output).

def elr_under_min_isr(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """Led, under (effective) min ISR, and the ELR still holds clean leader candidates: writes
    with acks=all fail, but losing the leader would not need an unclean election."""
    return under_min_isr_effective(c, ops) & (c.elr > 0)


def elr_offline_clean(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """No live leader, and the ISR or the ELR names a replica: the controller elects it, cleanly,
    as soon as its broker is unfenced (back)."""
    return ops.not_(c.leader_live) & (c.isr + c.elr > 0)


def elr_offline_unclean(c: Counts, ops: Ops = PYTHON_OPS) -> Any:
    """No live leader and neither ISR nor ELR names a replica (the ELR was cleared by a min ISR
    change, or its members shut down uncleanly): only an unclean election, or the last known
    leader (`LastKnownElr`) coming back, which Kafka counts as unclean too, brings it back."""
    return ops.not_(c.leader_live) & (c.isr + c.elr == 0)


Formula = Callable[[Counts, Ops], Any]


@dataclass(frozen=True)
class Profile:
    """One released behaviour of Kafka's health checks (the profiles: docs/health.md)."""

    name: str
    summary: str
    under_replicated: Formula
    under_min_isr: Formula
    at_min_isr: Formula
    unavailable: Formula
    # Broker-gauge profiles also say what the leader's Partition ReplicasCount gauge reads;
    # kafka-topics.sh has no gauges, so the topic-command profile has None.
    replicas_count: Formula | None
    # The ELR figures (ElrFlags' fields); None: the profile has none (releases before ELR)
    elr_under_min_isr: Formula | None = None
    elr_offline_clean: Formula | None = None
    elr_offline_unclean: Formula | None = None

    @property
    def has_elr(self) -> bool:
        return self.elr_under_min_isr is not None

    def formula(self, value: str) -> Formula | None:
        """The formula of one health value by its name: a HealthFlags or ElrFlags field,
        `replicas_count` or `isr_count` (what the catalog's `MBeanSpec.shows` names). None: the
        profile has none."""
        if value == "reassigning":
            return reassigning
        if value == "isr_count":
            return isr_count
        return getattr(self, value)


KAFKA_3_7 = Profile(
    "kafka-3.7", "broker gauges, Kafka 3.7 and later (effective min ISR)",
    urp_kip352, under_min_isr_effective, at_min_isr_effective, no_live_leader, replicas_count_kip352,
)
KAFKA_2_5 = Profile(
    "kafka-2.5", "broker gauges, Kafka 2.5 to 3.6 (KIP-352 URP, raw min ISR)",
    urp_kip352, under_min_isr_raw, at_min_isr_raw, no_live_leader, replicas_count_kip352,
)
LEGACY = Profile(
    "legacy", "broker gauges before 2.5 (reassignments count as under-replicated)",
    urp_legacy, under_min_isr_raw, at_min_isr_raw, no_live_leader, replicas_count_legacy,
)
KAFKA_4_1 = Profile(
    "kafka-4.1", "broker gauges as kafka-3.7, plus the eligible leader replicas (KIP-966, on by default "
    "in clusters created by Kafka 4.1 and later)",
    urp_kip352, under_min_isr_effective, at_min_isr_effective, no_live_leader, replicas_count_kip352,
    elr_under_min_isr, elr_offline_clean, elr_offline_unclean,
)
TOPIC_COMMAND = Profile(
    "topic-command", "kafka-topics.sh 2.6+ --describe filters",
    urp_topic_command, under_min_isr_topic_command, at_min_isr_topic_command,
    no_live_leader, None,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (KAFKA_3_7, KAFKA_4_1, KAFKA_2_5, LEGACY, TOPIC_COMMAND)}
DEFAULT_PROFILE = KAFKA_3_7


def parse_version(version: str) -> tuple[int, ...]:
    """'3.7', '3.7.1', '2.8.0-IV1' -> (3, 7, 1...). Raises ValueError with the offending text."""
    head = version.strip().split("-", 1)[0]
    try:
        parts = tuple(int(p) for p in head.split("."))
    except ValueError:
        raise ValueError(f"not a Kafka version: {version!r} (expected e.g. 3.7 or 2.5.1)") from None
    if not parts or len(parts) > 4:
        raise ValueError(f"not a Kafka version: {version!r} (expected e.g. 3.7 or 2.5.1)")
    return parts


def profile_for_version(version: str) -> Profile:
    """The broker-gauge profile a Kafka release follows."""
    v = parse_version(version)
    if v >= (3, 7):
        return KAFKA_3_7
    if v >= (2, 5):
        return KAFKA_2_5
    return LEGACY


class HealthFlags(NamedTuple):
    reassigning: bool
    under_replicated: bool
    under_min_isr: bool
    at_min_isr: bool
    unavailable: bool


class ElrFlags(NamedTuple):
    elr_under_min_isr: bool
    elr_offline_clean: bool
    elr_offline_unclean: bool


def judge_elr(c: Counts, profile: Profile) -> ElrFlags | None:
    """The ELR figures, or None where the profile has none or the partition's ELR is not known:
    absent, never a guessed 0."""
    if not profile.has_elr or c.elr is None:
        return None
    return ElrFlags(*(bool(getattr(profile, name)(c, PYTHON_OPS)) for name in ElrFlags._fields))


def judge_counts(c: Counts, profile: Profile = DEFAULT_PROFILE) -> HealthFlags:
    return HealthFlags(
        bool(c.reassigning),
        bool(profile.under_replicated(c, PYTHON_OPS)),
        bool(profile.under_min_isr(c, PYTHON_OPS)),
        bool(profile.at_min_isr(c, PYTHON_OPS)),
        bool(profile.unavailable(c, PYTHON_OPS)),
    )


def judge(state: PartitionState, profile: Profile = DEFAULT_PROFILE) -> HealthFlags:
    return judge_counts(counts_of(state), profile)
