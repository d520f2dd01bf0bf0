"""Invariants of the health profiles over generated partition states.

Two kinds of checks:
- `spec_flags` below is the table of the profiles' definitions typed out again, independently of
  mbeans/health.py, and every profile must agree with it on every generated state;
- the differences between profiles are pinned down precisely: two profiles may disagree only
  where the table makes them disagree, and there they must.
"""
from __future__ import annotations

from collections import Counter

from hypothesis import assume, example, given, settings, strategies as hs

from kafka_jmx_sidecar.mbeans.health import (
    KAFKA_2_5, KAFKA_3_7, KAFKA_4_1, LEGACY, PROFILES, TOPIC_COMMAND, PartitionState, counts_of, judge, judge_elr,
    placeholder_count,
)
from kafka_jmx_sidecar.mbeans.recompute import cluster_values

BROKER_PROFILES = (KAFKA_3_7, KAFKA_2_5, LEGACY)
# Per test, not a global profile: other test modules keep their own Hypothesis settings.
CHECK = settings(max_examples=100, deadline=None)

REAL = hs.integers(min_value=0, max_value=6)
PLACEHOLDER = hs.integers(min_value=-4, max_value=-1)


@hs.composite
def states(draw, placeholders=True, realistic=False, with_leader=False, with_placeholder=False):
    """Partition states. `realistic`: the shapes Kafka produces (unique replicas, ISR and
    reassignment drawn from the replica list, leader in the ISR or none). Otherwise anything the
    input readers accept: ids outside the list, repeats, a leader outside the ISR.
    `with_leader` / `with_placeholder` (realistic only): at least one ISR member leads / at least
    one replica is a placeholder."""
    ids = hs.one_of(REAL, PLACEHOLDER) if placeholders else REAL
    if realistic:
        replicas = draw(hs.lists(ids, min_size=1, max_size=6, unique=True))
        if with_placeholder and not any(r < 0 for r in replicas):
            replicas.append(draw(PLACEHOLDER.filter(lambda p: p not in replicas)))
        real = [r for r in replicas if r >= 0]
        if with_leader and not real:
            replicas.append(draw(REAL))
            real = replicas[-1:]
        isr = draw(hs.lists(hs.sampled_from(real), unique=True, min_size=1 if with_leader else 0)) \
            if real else []
        adding = draw(hs.lists(hs.sampled_from(replicas), unique=True, max_size=len(replicas) - 1)) \
            if len(replicas) > 1 else []
        rest = [r for r in replicas if r not in adding]
        removing = draw(hs.lists(hs.sampled_from(rest), unique=True, max_size=len(rest) - 1)) \
            if adding and len(rest) > 1 else []
        if with_leader:
            leader = draw(hs.sampled_from(isr))
        elif isr:
            leader = draw(hs.one_of(hs.none(), hs.just(-1), hs.sampled_from(isr)))
        else:
            leader = draw(hs.sampled_from([None, -1]))
    else:
        replicas = draw(hs.lists(ids, min_size=1, max_size=7))
        isr = draw(hs.lists(REAL, max_size=7))
        adding = draw(hs.lists(ids, max_size=4))
        removing = draw(hs.lists(ids, max_size=4))
        leader = draw(hs.one_of(hs.none(), hs.just(-1), REAL))
    min_isr = draw(hs.integers(min_value=1, max_value=8))
    live = draw(hs.one_of(hs.none(), hs.frozensets(REAL)))
    # KIP-966: the ELR holds replicas outside the ISR (anything the readers accept, unrealistically)
    outside = [r for r in replicas if r >= 0 and r not in isr] if realistic else list(range(7))
    elr = draw(hs.one_of(hs.none(), hs.lists(hs.sampled_from(outside), unique=True).map(tuple))) \
        if outside else draw(hs.sampled_from([None, ()]))
    return PartitionState("t", draw(hs.integers(0, 50)), leader, tuple(replicas), tuple(isr),
                          tuple(adding), tuple(removing), min_isr, live, elr, None if elr is None else ())


any_state = hs.one_of(states(), states(realistic=True))


# --- the profiles' table, typed out again ---------------------------------------------------------

def _overlap(adding, replicas):
    return sum((Counter(adding) & Counter(replicas)).values())


def spec_flags(s: PartitionState, profile: str) -> dict[str, bool]:
    reassigning = bool(s.adding_replicas or s.removing_replicas)
    n = len(s.replicas)
    rf = n - _overlap(s.adding_replicas, s.replicas) if reassigning else n
    has_leader = s.leader is not None and s.leader != -1
    # Broker gauges count a partition on its leader: a leader known not to be live counts nowhere.
    live_leader = has_leader and (s.live_brokers is None or s.leader in s.live_brokers)
    isr = len(s.isr)
    eff_min = min(s.min_isr, n)
    if profile in ("kafka-3.7", "kafka-4.1"):
        f = (live_leader and rf - isr > 0, live_leader and isr < eff_min, live_leader and isr == eff_min,
             not live_leader)
    elif profile == "kafka-2.5":
        f = (live_leader and rf - isr > 0, live_leader and isr < s.min_isr, live_leader and isr == s.min_isr,
             not live_leader)
    elif profile == "legacy":
        f = (live_leader and isr < n, live_leader and isr < s.min_isr, live_leader and isr == s.min_isr,
             not live_leader)
    else:
        f = (rf - isr > 0, (not has_leader) or isr < s.min_isr, isr == s.min_isr, not live_leader)
    return dict(zip(("under_replicated", "under_min_isr", "at_min_isr", "unavailable"), f),
                reassigning=reassigning)


@CHECK
@given(any_state)
@example(PartitionState("t", 0, 1, (1, 2, 3, 4), (1, 3, 4), (4,), (), 2))
@example(PartitionState("t", 0, None, (2,), (), (), (), 1))
@example(PartitionState("t", 0, 1, (1,), (1,), (), (), 2))
def test_every_profile_follows_the_spec_table(s):
    for name, profile in PROFILES.items():
        assert judge(s, profile)._asdict() == spec_flags(s, name), name


# --- invariants the profiles' definitions imply ---------------------------------------------------

@CHECK
@given(any_state, hs.sampled_from([None, -1]))
def test_leaderless_partition_raises_no_broker_gauge_flag(s, no_leader):
    s = PartitionState(s.topic, s.partition, no_leader, s.replicas, s.isr, s.adding_replicas,
                       s.removing_replicas, s.min_isr, s.live_brokers)
    for profile in BROKER_PROFILES:
        f = judge(s, profile)
        assert (f.under_replicated, f.under_min_isr, f.at_min_isr) == (False, False, False)
        assert f.unavailable
    # kafka-topics.sh always lists it as under min ISR and unavailable.
    f = judge(s, TOPIC_COMMAND)
    assert f.under_min_isr and f.unavailable


@CHECK
@given(any_state)
def test_at_min_and_under_min_never_together_on_broker_gauges(s):
    for profile in BROKER_PROFILES:
        f = judge(s, profile)
        assert not (f.at_min_isr and f.under_min_isr)


@CHECK
@given(any_state)
def test_reassigning_is_the_same_under_every_profile(s):
    expected = bool(s.adding_replicas or s.removing_replicas)
    assert {judge(s, p).reassigning for p in PROFILES.values()} == {expected}


# --- where profiles differ, derived from the table ---------------------------------------------------

def _has_leader(s):
    return s.leader is not None and s.leader != -1


def _live_leader(s):
    return _has_leader(s) and (s.live_brokers is None or s.leader in s.live_brokers)


@CHECK
@given(any_state)
def test_kafka_3_7_vs_2_5_differ_only_in_min_isr_flags_above_the_replica_count(s):
    new, old = judge(s, KAFKA_3_7), judge(s, KAFKA_2_5)
    assert (new.reassigning, new.under_replicated, new.unavailable) == \
        (old.reassigning, old.under_replicated, old.unavailable)
    n, isr, m = len(s.replicas), len(s.isr), s.min_isr
    if not _live_leader(s) or m <= n:
        assert new == old
        return
    # min_isr > len(replicas) with a leader: eff_min = n < m.
    assert (new.under_min_isr != old.under_min_isr) == (n <= isr < m)
    assert (new.at_min_isr != old.at_min_isr) == (isr in (n, m))


@CHECK
@given(any_state)
def test_kafka_2_5_vs_legacy_differ_only_in_urp_while_adding_replicas_are_listed(s):
    new, old = judge(s, KAFKA_2_5), judge(s, LEGACY)
    assert new._replace(under_replicated=None) == old._replace(under_replicated=None)
    overlap = _overlap(s.adding_replicas, s.replicas)
    n, isr = len(s.replicas), len(s.isr)
    differs = new.under_replicated != old.under_replicated
    assert differs == (_live_leader(s) and overlap > 0 and n - overlap <= isr < n)
    if differs:
        assert old.under_replicated and not new.under_replicated


@CHECK
@given(any_state)
def test_topic_command_vs_kafka_2_5_differ_only_for_leaderless_or_dead_leaders(s):
    tc, broker = judge(s, TOPIC_COMMAND), judge(s, KAFKA_2_5)
    assert tc.reassigning == broker.reassigning
    assert tc.unavailable == broker.unavailable == (not _live_leader(s))
    if _live_leader(s):
        assert (tc.under_replicated, tc.under_min_isr, tc.at_min_isr) == \
            (broker.under_replicated, broker.under_min_isr, broker.at_min_isr)
    else:
        # No leader, or a dead one: no broker gauge sees it; kafka-topics.sh goes by the numbers
        # (and lists it as under min ISR when it has no leader at all).
        rf = len(s.replicas) - (_overlap(s.adding_replicas, s.replicas))
        assert (broker.under_replicated, broker.under_min_isr, broker.at_min_isr) == (False, False, False)
        assert tc.under_replicated == (rf - len(s.isr) > 0)
        assert tc.at_min_isr == (len(s.isr) == s.min_isr)
        assert tc.under_min_isr == (not _has_leader(s) or len(s.isr) < s.min_isr)


@CHECK
@given(any_state)
def test_topic_command_can_be_at_and_under_min_together_only_without_a_leader(s):
    f = judge(s, TOPIC_COMMAND)
    if f.at_min_isr and f.under_min_isr:
        assert not _has_leader(s)


# --- adding replicas are a multiset difference --------------------------------------------------

@CHECK
@given(any_state, hs.lists(hs.integers(min_value=100, max_value=110), min_size=1, max_size=3))
def test_adding_ids_outside_the_replica_list_change_nothing(s, strangers):
    assume(s.adding_replicas or s.removing_replicas)
    more = PartitionState(s.topic, s.partition, s.leader, s.replicas, s.isr,
                          s.adding_replicas + tuple(strangers), s.removing_replicas, s.min_isr,
                          s.live_brokers)
    for profile in PROFILES.values():
        assert judge(more, profile) == judge(s, profile)


@CHECK
@given(any_state, hs.randoms(use_true_random=False))
def test_order_of_lists_does_not_matter(s, rnd):
    def shuffled(t):
        t = list(t)
        rnd.shuffle(t)
        return tuple(t)
    other = PartitionState(s.topic, s.partition, s.leader, shuffled(s.replicas), shuffled(s.isr),
                           shuffled(s.adding_replicas), shuffled(s.removing_replicas), s.min_isr,
                           s.live_brokers)
    for profile in PROFILES.values():
        assert judge(other, profile) == judge(s, profile)


@CHECK
@given(states(realistic=True))
def test_urp_rf_is_replicas_minus_adding(s):
    # In Kafka's own shapes adding replicas are a subset of replicas: rf = len - len(adding).
    rf = len(s.replicas) - len(s.adding_replicas)
    for profile in (KAFKA_3_7, KAFKA_2_5):
        assert judge(s, profile).under_replicated == (_live_leader(s) and len(s.isr) < rf)
    assert judge(s, TOPIC_COMMAND).under_replicated == (len(s.isr) < rf)


# --- effective min ISR uses the full replica list -----------------------------------------------

@CHECK
@given(states(realistic=True, with_leader=True))
def test_effective_min_isr_counts_adding_replicas(s):
    eff = min(s.min_isr, len(s.replicas))  # the FULL list, adding included
    f = judge(s, KAFKA_3_7)
    assert f.under_min_isr == (_live_leader(s) and len(s.isr) < eff)
    assert f.at_min_isr == (_live_leader(s) and len(s.isr) == eff)


# --- placeholders ---------------------------------------------------------------------------------

@CHECK
@given(states(placeholders=True))
def test_placeholders_never_crash_and_are_counted(s):
    assert placeholder_count(s) == sum(1 for r in s.replicas if r < 0)
    for profile in PROFILES.values():
        judge(s, profile)
    values = cluster_values([s])  # the recompute path takes them too
    assert all(b >= 0 for b in values.brokers)


@CHECK
@given(states(realistic=True, with_placeholder=True), hs.integers(min_value=200, max_value=210))
def test_a_placeholder_counts_like_any_missing_replica(s, fresh):
    # Replacing a placeholder by a real broker that is not in the ISR changes no verdict.
    i = next(i for i, r in enumerate(s.replicas) if r < 0)
    old = s.replicas[i]
    swap = lambda t: tuple(fresh if r == old else r for r in t)  # noqa: E731
    real = PartitionState(s.topic, s.partition, s.leader, swap(s.replicas), s.isr,
                          swap(s.adding_replicas), swap(s.removing_replicas), s.min_isr, s.live_brokers)
    for profile in PROFILES.values():
        assert judge(real, profile) == judge(s, profile)


@CHECK
@given(states(realistic=True, with_placeholder=True, with_leader=True))
def test_a_partition_with_placeholders_is_urp_while_it_has_a_leader(s):
    # Placeholders are never in the ISR, so the ISR is shorter than the list: URP.
    # legacy compares with the whole list, always; the KIP-352 rules unless a reassignment takes
    # replicas out of rf. (Broker gauges: while that leader is live.)
    assert judge(s, LEGACY).under_replicated == _live_leader(s)
    if not s.adding_replicas:
        assert judge(s, TOPIC_COMMAND).under_replicated
        for profile in (KAFKA_3_7, KAFKA_2_5):
            assert judge(s, profile).under_replicated == _live_leader(s)


# --- the ELR figures (KIP-966), typed out again -----------------------------------------------------

def spec_elr(s: PartitionState) -> tuple[bool, bool, bool] | None:
    """(led and under effective min ISR with an ELR member, leaderless with an ISR or ELR member,
    leaderless with neither); None where the ELR is not known."""
    if s.eligible_leader_replicas is None:
        return None
    has_leader = s.leader is not None and s.leader != -1
    live_leader = has_leader and (s.live_brokers is None or s.leader in s.live_brokers)
    candidates = len(s.isr) + len(s.eligible_leader_replicas)
    return (live_leader and len(s.isr) < min(s.min_isr, len(s.replicas)) and bool(s.eligible_leader_replicas),
            not live_leader and candidates > 0, not live_leader and candidates == 0)


@CHECK
@given(any_state)
@example(PartitionState("t", 0, 1, (2, 3, 1), (1,), (), (), 2, None, (2,), ()))
@example(PartitionState("t", 0, None, (2, 3), (), (), (), 2, None, (2, 3), ()))
@example(PartitionState("t", 0, None, (2, 3), (), (), (), 2, None, (), (3,)))
@example(PartitionState("t", 0, 1, (1, 2), (1,), (), (), 2, None, None, None))
def test_elr_figures_follow_their_definition(s):
    found = judge_elr(counts_of(s), KAFKA_4_1)
    assert (None if found is None else tuple(found)) == spec_elr(s)
    for profile in (KAFKA_3_7, KAFKA_2_5, LEGACY, TOPIC_COMMAND):
        assert judge_elr(counts_of(s), profile) is None, profile.name  # only the ELR profile has them


@CHECK
@given(states(realistic=True))
def test_elr_leaderless_partition_is_clean_or_unclean_never_both(s):
    found = judge_elr(counts_of(s), KAFKA_4_1)
    if found is not None:
        leaderless = judge(s, KAFKA_4_1).unavailable
        assert found.elr_offline_clean + found.elr_offline_unclean == int(leaderless)
        assert not (found.elr_under_min_isr and leaderless)
