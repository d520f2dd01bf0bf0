"""Partition health, example by example, from the KIPs (KIP-352, KIP-164, KIP-427, KIP-455).

Every expected verdict below is written by hand from each profile's definition, the consequences
worth a test each, KIP-427's worked-example table and the KIPs themselves. Nothing here is computed by the
code under test. A case lists the flags that must be TRUE; every other flag must be false.

Flag names: R = reassigning, U = under_replicated, B = under_min_isr (Below), A = at_min_isr,
X = unavailable.
"""
from __future__ import annotations

import pytest

from kafka_jmx_sidecar.mbeans.health import (
    DEFAULT_PROFILE, KAFKA_2_5, KAFKA_3_7, LEGACY, PROFILES, TOPIC_COMMAND, Counts, HealthFlags,
    PartitionState, judge, judge_counts, parse_version, placeholder_count, profile_for_version,
)

LETTER = {"R": "reassigning", "U": "under_replicated", "B": "under_min_isr", "A": "at_min_isr",
          "X": "unavailable"}
ALL_PROFILES = ("kafka-3.7", "kafka-2.5", "legacy", "topic-command")
BROKER_PROFILES = ("kafka-3.7", "kafka-2.5", "legacy")


def flags(letters: str) -> HealthFlags:
    """'UA' -> HealthFlags with under_replicated and at_min_isr true, the rest false."""
    assert set(letters) <= set(LETTER), letters
    return HealthFlags(**{name: letter in letters for letter, name in LETTER.items()})


def st(replicas, isr, leader, min_isr=1, adding=(), removing=(), live=None, topic="t", partition=0):
    return PartitionState(topic, partition, leader, tuple(replicas), tuple(isr), tuple(adding),
                          tuple(removing), min_isr, None if live is None else frozenset(live))


def expand(cases):
    """(id, state, {profile or tuple of profiles: letters}) -> pytest params, one per profile."""
    out = []
    for case_id, state, expected in cases:
        per_profile = {}
        for key, letters in expected.items():
            for name in (key,) if isinstance(key, str) else key:
                assert name not in per_profile, f"{case_id}: {name} listed twice"
                per_profile[name] = letters
        assert set(per_profile) == set(ALL_PROFILES), f"{case_id}: every profile needs a verdict"
        for name in ALL_PROFILES:
            out.append(pytest.param(state, name, per_profile[name], id=f"{case_id}[{name}]"))
    return out


# --- KIP-427: the three worked examples -----------------------------------------------------------
# The KIP's table is for kafka-2.5. With min_isr <= RF and no reassignment, kafka-3.7 and legacy
# read the same; kafka-topics.sh differs only on the leaderless rows.

KIP427 = [
    ("kip427-ex1-all-in-sync", st([0, 1, 2], [0, 1, 2], 0, min_isr=2),
     {ALL_PROFILES: ""}),
    ("kip427-ex1-broker0-fails", st([0, 1, 2], [1, 2], 1, min_isr=2),
     {ALL_PROFILES: "UA"}),
    ("kip427-ex1-broker1-fails", st([0, 1, 2], [2], 2, min_isr=2),
     {ALL_PROFILES: "UB"}),
    ("kip427-ex2-all-in-sync", st([0, 1, 2], [0, 1, 2], 0, min_isr=1),
     {ALL_PROFILES: ""}),
    ("kip427-ex2-broker0-fails", st([0, 1, 2], [1, 2], 1, min_isr=1),
     {ALL_PROFILES: "U"}),
    ("kip427-ex2-broker1-fails", st([0, 1, 2], [2], 2, min_isr=1),
     {ALL_PROFILES: "UA"}),
    # The KIP writes "ISR set = []" for the third failure: offline. Broker gauges read 0; the
    # controller's OfflinePartitionsCount sees it. kafka-topics.sh: rf 3 - 0 > 0 (URP), no leader
    # (under min ISR, unavailable), 0 != 1 (not at min).
    ("kip427-ex2-broker2-fails-isr-empty", st([0, 1, 2], [], None, min_isr=1),
     {BROKER_PROFILES: "X", "topic-command": "UBX"}),
    # What Kafka really keeps: leader -1, isr = [the last member]. For
    # kafka-topics.sh now 1 == min_isr 1, so it is also at min ISR.
    ("kip427-ex2-broker2-fails-last-isr-kept", st([0, 1, 2], [2], -1, min_isr=1),
     {BROKER_PROFILES: "X", "topic-command": "UBAX"}),
    ("kip427-ex3-all-in-sync", st([0, 1, 2, 3], [0, 1, 2, 3], 0, min_isr=2),
     {ALL_PROFILES: ""}),
    ("kip427-ex3-broker0-fails", st([0, 1, 2, 3], [1, 2, 3], 1, min_isr=2),
     {ALL_PROFILES: "U"}),
    ("kip427-ex3-broker1-fails", st([0, 1, 2, 3], [2, 3], 2, min_isr=2),
     {ALL_PROFILES: "UA"}),
    ("kip427-ex3-broker2-fails", st([0, 1, 2, 3], [3], 3, min_isr=2),
     {ALL_PROFILES: "UB"}),
    # "Repartitioning": the ISR grows from [old] to [old + new] and then shrinks to [new]. With
    # adding/removing known (2.5+), [old + new] in the ISR is neither URP nor at min ISR.
    # legacy: isr 6 == replicas 6, not URP either.
    ("kip427-repartition-old-plus-new-in-isr",
     st([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], 1, min_isr=2, adding=[4, 5, 6], removing=[1, 2, 3]),
     {ALL_PROFILES: "R"}),
    # "...unless replicas are failing to fetch (reducing the isr_set_size to min_isr_size)".
    # rf = 6 - 3 = 3 > 2 in the ISR: URP; 2 == min(2, 6): at min ISR under every profile.
    ("kip427-repartition-isr-drops-to-min",
     st([1, 2, 3, 4, 5, 6], [1, 4], 1, min_isr=2, adding=[4, 5, 6], removing=[1, 2, 3]),
     {ALL_PROFILES: "RUA"}),
    # Before the new replicas catch up: legacy (adding count) says URP, KIP-352 rules do not.
    ("kip427-repartition-new-not-caught-up",
     st([1, 2, 3, 4, 5, 6], [1, 2, 3], 1, min_isr=2, adding=[4, 5, 6], removing=[1, 2, 3]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "R", "legacy": "RU"}),
]

# --- KIP-164: RF 3, min ISR 2 ---------------------------------------------------------------------
# "when there are 2 replicas in ISR this partition would be in the under replicated partitions
# count. When there is 1 replica in ISR, this partition would also be in the UnderMinIsrPartitionCount."
# (KIP-164 predates AtMinIsr; with 2 == min ISR the KIP-427 gauge is also set.)
# "The value of this metric is 1 if the broker is leader of this partition AND ..." -> a partition
# without a leader is 0 on the gauge even with 1 < 2 in the ISR.

KIP164 = [
    ("kip164-isr-2", st([0, 1, 2], [1, 2], 1, min_isr=2), {ALL_PROFILES: "UA"}),
    ("kip164-isr-1", st([0, 1, 2], [2], 2, min_isr=2), {ALL_PROFILES: "UB"}),
    ("kip164-isr-1-no-leader", st([0, 1, 2], [2], None, min_isr=2),
     {BROKER_PROFILES: "X", "topic-command": "UBX"}),
]

# --- KIP-352: isUnderReplicated == size(original assigned replicas) - size(isr) > 0 ---------------

KIP352 = [
    # Move [1,2,3] -> [2,3,4]: replicas hold all four, 4 is adding, 1 is removing. The original
    # three are in sync: not URP. Before 2.5 (legacy) the adding replica made it URP.
    ("kip352-move-one-replica", st([1, 2, 3, 4], [1, 2, 3], 1, adding=[4], removing=[1]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "R", "legacy": "RU"}),
    # Growing RF 2 -> 3: judged against the original 2 until the reassignment completes.
    ("kip352-grow-rf-2-to-3", st([1, 2, 3], [1, 2], 1, adding=[3]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "R", "legacy": "RU"}),
    # Shrinking RF 3 -> 2: removing replicas still count, so losing one is URP everywhere.
    ("kip352-shrink-rf-3-to-2-lost-one", st([1, 2, 3], [1, 2], 1, removing=[3]),
     {ALL_PROFILES: "RU"}),
    ("kip352-shrink-rf-3-to-2-all-in-sync", st([1, 2, 3], [1, 2, 3], 1, removing=[3]),
     {ALL_PROFILES: "R"}),
    # An original replica lost during the move: rf 3 - 2 > 0 is URP under every rule.
    ("kip352-move-and-lose-original", st([1, 2, 3, 4], [1, 2], 1, adding=[4], removing=[1]),
     {ALL_PROFILES: "RU"}),
    # The reassignment completed.
    ("kip352-move-completed", st([2, 3, 4], [2, 3, 4], 2), {ALL_PROFILES: ""}),
    # kafka-topics.sh without ListPartitionReassignments (unsupported or unauthorized) knows no
    # adding replicas and silently uses rf = len(replicas): the same move reads as URP.
    ("kip352-topic-command-fallback-no-reassignment-known", st([1, 2, 3, 4], [1, 2, 3], 1),
     {ALL_PROFILES: "U"}),
]

# --- consequences worth a test each ---------------------------------------------------------------

CONSEQUENCES = [
    # An ISR larger than rf (caught-up adding replicas) is not URP.
    ("isr-larger-than-rf", st([1, 2, 3, 4], [1, 2, 3, 4], 1, adding=[4]),
     {ALL_PROFILES: "R"}),
    # A caught-up adding replica in the ISR hides a lost original: replicas=[1,2,3,4], adding=[4],
    # isr=[1,3,4] is not URP (rf 3 - 3). legacy: 3 < 4 is URP.
    ("adding-replica-hides-lost-original", st([1, 2, 3, 4], [1, 3, 4], 1, adding=[4]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "R", "legacy": "RU"}),
    ("adding-replica-hides-lost-original-min-isr-2", st([1, 2, 3, 4], [1, 3, 4], 1, min_isr=2, adding=[4]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "R", "legacy": "RU"}),
    # RF == min_isr and fully in sync: at min ISR (3 == min(3, 3) and 3 == 3 alike).
    ("rf-equals-min-isr-full-isr", st([1, 2, 3], [1, 2, 3], 1, min_isr=3),
     {ALL_PROFILES: "A"}),
    # Every healthy RF=1 partition with min_isr=1 is at min ISR.
    ("rf1-min1-healthy", st([1], [1], 1, min_isr=1), {ALL_PROFILES: "A"}),
    # min_isr above the replica count, full ISR: kafka-3.7 caps it (min(2, 1) = 1, 1 == 1: at min),
    # the older broker gauges and kafka-topics.sh compare with the raw 2 (1 < 2: under min).
    # (a live 4.1 broker: RF=1, min.insync.replicas=2 read AtMinIsr=1, UnderMinIsr=0.)
    ("min-isr-above-rf1", st([1], [1], 1, min_isr=2),
     {"kafka-3.7": "A", ("kafka-2.5", "legacy", "topic-command"): "B"}),
    ("min-isr-above-rf2", st([1, 2], [1, 2], 1, min_isr=3),
     {"kafka-3.7": "A", ("kafka-2.5", "legacy", "topic-command"): "B"}),
    # ...and with the ISR below the capped value it is under min ISR everywhere, URP too.
    ("min-isr-above-rf2-isr-1", st([1, 2], [1], 1, min_isr=3),
     {ALL_PROFILES: "UB"}),
    # A leaderless partition is invisible to every broker gauge. kafka-topics.sh: under min ISR
    # and unavailable always; URP / at min when the numbers say so.
    ("leaderless-none-full-isr", st([1, 2, 3], [1, 2, 3], None, min_isr=2),
     {BROKER_PROFILES: "X", "topic-command": "BX"}),
    ("leaderless-minus-one-last-isr-kept", st([1, 2, 3], [3], -1, min_isr=2),
     {BROKER_PROFILES: "X", "topic-command": "UBX"}),
    ("leaderless-last-isr-kept-equals-min", st([1, 2, 3], [3], -1, min_isr=1),
     {BROKER_PROFILES: "X", "topic-command": "UBAX"}),
    ("leaderless-rf1-last-isr-kept", st([2], [2], -1, min_isr=1),
     {BROKER_PROFILES: "X", "topic-command": "BAX"}),
    # KIP-966 / real 4.1: `Leader: none  Replicas: 2  Isr:   Elr: 2  LastKnownElr: 2` was listed as
    # under-replicated, under min ISR and unavailable.
    ("elr-rf1-empty-isr", st([2], [], None, min_isr=1),
     {BROKER_PROFILES: "X", "topic-command": "UBX"}),
    ("leaderless-during-reassignment", st([1, 2, 3], [3], None, min_isr=1, adding=[3]),
     {BROKER_PROFILES: "RX", "topic-command": "RUBAX"}),
    # A leader that is not a live broker (a ZooKeeper controller that died as the last replica's
    # leader stays the leader in ZooKeeper): kafka-topics.sh --unavailable-partitions lists it, the
    # controller's OfflinePartitionsCount counts it, and no live broker's gauge sees it (real Kafka
    # 0.11, tests/real/test_health_vs_brokers.py, state brokers_2_and_3_down).
    ("dead-leader", st([1, 2, 3], [1, 2, 3], 3, min_isr=2, live=[1, 2]),
     {ALL_PROFILES: "X"}),
    ("topic-command-live-leader", st([1, 2, 3], [1, 2, 3], 3, min_isr=2, live=[1, 2, 3]),
     {ALL_PROFILES: ""}),
    ("no-live-broker-known", st([1, 2], [1], 1, min_isr=1, live=[]),
     {BROKER_PROFILES: "X", "topic-command": "UAX"}),
    # Liveness unknown (saved describe output): a leader is taken to be live.
    ("liveness-unknown-leader-live", st([7], [7], 7), {ALL_PROFILES: "A"}),
]

# --- effective min ISR uses the FULL replica list, adding replicas included ------------------------

EFFECTIVE_MIN_ISR = [
    # replicas [1,2], adding [2]: rf 1 (not URP); eff_min = min(2, len([1,2]) = 2) = 2 > 1 in the
    # ISR: under min ISR. (Capping by rf = 1 would wrongly read "at min ISR".)
    # legacy counts the adding replica: 1 < 2 in the ISR is also URP there.
    ("eff-min-full-list-grow-1-to-2", st([1, 2], [1], 1, min_isr=2, adding=[2]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "RB", "legacy": "RUB"}),
    # replicas [1,2,3], adding [3], min 3, isr [1,2]: rf 2 - 2 = 0; eff_min = min(3, 3) = 3.
    ("eff-min-full-list-grow-2-to-3", st([1, 2, 3], [1, 2], 1, min_isr=3, adding=[3]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "RB", "legacy": "RUB"}),
    # min 5 over 3 replicas (one adding), full ISR: eff_min 3 == 3 at min (3.7); raw 3 < 5 under.
    ("eff-min-capped-by-full-list", st([1, 2, 3], [1, 2, 3], 1, min_isr=5, adding=[3]),
     {"kafka-3.7": "RA", ("kafka-2.5", "legacy", "topic-command"): "RB"}),
]

# --- adding replicas: a multiset difference --------------------------------------------------------

MULTISET = [
    # An adding id that is not in replicas removes nothing: rf stays 3, 2 in sync: URP.
    ("adding-id-not-in-replicas", st([1, 2, 3], [1, 2], 1, adding=[4]),
     {ALL_PROFILES: "RU"}),
    # A repeated adding id counts once against a replica list that holds it once: rf 4 - 1 = 3,
    # 2 in sync: URP (subtracting both copies would give rf 2: not URP).
    ("adding-id-repeated", st([1, 2, 3, 4], [1, 2], 1, adding=[4, 4]),
     {ALL_PROFILES: "RU"}),
    ("adding-id-repeated-in-both", st([1, 4, 4], [1], 1, adding=[4, 4]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "RA", "legacy": "RUA"}),
    ("adding-one-in-one-not", st([1, 2, 3], [1, 2], 1, adding=[3, 9]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "R", "legacy": "RU"}),
    # Removing only: reassigning, nothing subtracted.
    ("removing-only", st([1, 2, 3], [1, 2, 3], 1, removing=[1]), {ALL_PROFILES: "R"}),
]

# --- placeholders: negative ids count in replicas and are never in sync ---------------------------

PLACEHOLDERS = [
    # RF 3 created on 2 live brokers: [1, 2, -1]. Under-replicated until a broker replaces -1.
    # min 2: 2 == min(2, 3) at min ISR.
    ("placeholder-one", st([1, 2, -1], [1, 2], 1, min_isr=2), {ALL_PROFILES: "UA"}),
    ("placeholder-two", st([1, -1, -2], [1], 1, min_isr=2), {ALL_PROFILES: "UB"}),
    # "the actual requirement will be min(min.insync.replicas, replicas)": placeholders count in
    # len(replicas), so min 3 over [1,2,-1] stays 3 under kafka-3.7 as well.
    ("placeholder-min-isr-equals-rf", st([1, 2, -1], [1, 2], 1, min_isr=3), {ALL_PROFILES: "UB"}),
    ("placeholder-only-leaderless", st([-1, -2, -3], [], None, min_isr=2),
     {BROKER_PROFILES: "X", "topic-command": "UBX"}),
    # A placeholder that is being "added" is still in the list: a multiset hit like any id.
    ("placeholder-adding", st([1, 2, -1], [1, 2], 1, adding=[-1]),
     {("kafka-3.7", "kafka-2.5", "topic-command"): "R", "legacy": "RU"}),
]

ALL_CASES = KIP427 + KIP164 + KIP352 + CONSEQUENCES + EFFECTIVE_MIN_ISR + MULTISET + PLACEHOLDERS


@pytest.mark.parametrize("state, profile, letters", expand(ALL_CASES))
def test_verdict(state, profile, letters):
    assert judge(state, PROFILES[profile]) == flags(letters)


# --- KIP-427's worked-example table, row by row (kafka-2.5) ---------------------------------------
# | example | RF | min_isr | isr | URP | AtMinIsr | UnderMinIsr | offline |

WORKED = [
    ("1", 3, 2, [0, 1, 2], 0, False, False, False, False),
    ("1, broker 0 fails", 3, 2, [1, 2], 1, True, True, False, False),
    ("1, broker 1 fails", 3, 2, [2], 2, True, False, True, False),
    ("2, broker 0 fails", 3, 1, [1, 2], 1, True, False, False, False),
    ("2, broker 1 fails", 3, 1, [2], 2, True, True, False, False),
    ("2, broker 2 fails", 3, 1, [], None, False, False, False, True),
    ("3, broker 0 fails", 4, 2, [1, 2, 3], 1, True, False, False, False),
    ("3, broker 1 fails", 4, 2, [2, 3], 2, True, True, False, False),
    ("3, broker 2 fails", 4, 2, [3], 3, True, False, True, False),
]


@pytest.mark.parametrize("row, rf, min_isr, isr, leader, urp, at_min, under_min, offline",
                         WORKED, ids=[w[0] for w in WORKED])
def test_spec_worked_example_table(row, rf, min_isr, isr, leader, urp, at_min, under_min, offline):
    f = judge(st(list(range(rf)), isr, leader, min_isr=min_isr), KAFKA_2_5)
    assert (f.under_replicated, f.at_min_isr, f.under_min_isr, f.unavailable) == \
        (urp, at_min, under_min, offline)
    assert not f.reassigning


# --- the formulas on counts (what a broker's JMX gauges give) --------------------------------------

def counts(replicas, isr, min_isr, has_leader=True, adding=0, reassigning=None, leader_live=None):
    return Counts(has_leader=has_leader, leader_live=has_leader if leader_live is None else leader_live,
                  replicas=replicas, adding=adding,
                  reassigning=bool(adding) if reassigning is None else reassigning,
                  isr=isr, min_isr=min_isr)


@pytest.mark.parametrize("c, profile, letters", [
    # a live 4.1 broker: one broker, RF=1, min.insync.replicas=2: AtMinIsr=1, UnderMinIsr=0.
    (counts(1, 1, 2), "kafka-3.7", "A"),
    (counts(1, 1, 2), "kafka-2.5", "B"),
    # a live 4.1 broker: RF=2, min 2, second broker stopped: UnderReplicated=1, UnderMinIsr=1.
    (counts(2, 1, 2), "kafka-3.7", "UB"),
    # A ReplicasCount of the full list and the count of adding replicas (2.5+ reassignment).
    (counts(4, 3, 2, adding=1), "kafka-3.7", "R"),
    (counts(4, 3, 2, adding=1), "legacy", "RU"),
    (counts(3, 1, 1, has_leader=False), "kafka-3.7", "X"),
    (counts(3, 1, 1, has_leader=False), "topic-command", "UBAX"),
    (counts(3, 3, 2, leader_live=False), "topic-command", "X"),
    # A dead leader: the controller counts it offline, no live broker reports it (real 0.11).
    (counts(3, 3, 2, leader_live=False), "kafka-2.5", "X"),
])
def test_verdict_on_counts(c, profile, letters):
    assert judge_counts(c, PROFILES[profile]) == flags(letters)


# --- leader spellings, placeholders, profile table plumbing ---------------------------------------

@pytest.mark.parametrize("leader", [None, -1])
@pytest.mark.parametrize("profile", BROKER_PROFILES)
def test_no_leader_spellings_are_the_same(leader, profile):
    assert judge(st([1, 2, 3], [1, 2], leader, min_isr=2), PROFILES[profile]) == flags("X")


@pytest.mark.parametrize("replicas, expected", [
    ([1, 2, 3], 0), ([1, 2, -1], 1), ([1, -1, -2], 2), ([-1, -2, -3], 3), ([-1], 1),
])
def test_placeholder_count(replicas, expected):
    assert placeholder_count(st(replicas, [], None)) == expected


def test_profile_names_and_default():
    assert set(PROFILES) == {"kafka-3.7", "kafka-4.1", "kafka-2.5", "legacy", "topic-command"}
    assert DEFAULT_PROFILE is KAFKA_3_7
    assert PROFILES["kafka-3.7"] is KAFKA_3_7 and PROFILES["kafka-2.5"] is KAFKA_2_5
    assert PROFILES["legacy"] is LEGACY and PROFILES["topic-command"] is TOPIC_COMMAND


def test_default_profile_is_kafka_3_7():
    # min 2 over RF 1 separates kafka-3.7 (at min) from every other profile (under min).
    assert judge(st([1], [1], 1, min_isr=2)) == flags("A")


@pytest.mark.parametrize("version, profile", [
    ("0.8.2", "legacy"), ("1.0.0", "legacy"), ("2.2", "legacy"), ("2.3.1", "legacy"),
    ("2.4", "legacy"), ("2.4.1", "legacy"),
    ("2.5", "kafka-2.5"), ("2.5.0", "kafka-2.5"), ("2.8.2", "kafka-2.5"), ("3.0", "kafka-2.5"),
    ("3.6", "kafka-2.5"), ("3.6.2", "kafka-2.5"),
    ("3.7", "kafka-3.7"), ("3.7.0", "kafka-3.7"), ("3.9.1", "kafka-3.7"), ("4.0", "kafka-3.7"),
    ("4.1", "kafka-3.7"), ("4.1.0", "kafka-3.7"), ("3.7.0-IV0", "kafka-3.7"),
])
def test_profile_for_version(version, profile):
    assert profile_for_version(version).name == profile


@pytest.mark.parametrize("version, parsed", [
    ("3.7", (3, 7)), ("3.7.1", (3, 7, 1)), ("2.8.0-IV1", (2, 8, 0)), (" 4.1 ", (4, 1)),
])
def test_parse_version(version, parsed):
    assert parse_version(version) == parsed


@pytest.mark.parametrize("bad", ["", "three", "3.x", "3..7", "1.2.3.4.5"])
def test_parse_version_rejects_with_the_text(bad):
    with pytest.raises(ValueError) as e:
        parse_version(bad)
    assert repr(bad) in str(e.value)
