"""mbeans/reassignment: reassignment traffic and progress, on hand-worked cases (which broker
reports what: Replication counts the reassignment bytes too; KIP-352's deferred max lag)."""
from __future__ import annotations

import math

from kafka_jmx_sidecar.mbeans.reassignment import (IN, OUT, BrokerTraffic, Move, Progress, ReplicaLag, Total, Window, adding_lags,
                                 count_delta, eta_seconds, has_reassignment_meters, log_dir_lags, max_lag,
                                 remaining_by_partition)


# --- counters ----------------------------------------------------------------------------------------

def test_count_delta_gains_and_restarts_from_zero():
    assert count_delta(100, 150) == 50
    assert count_delta(100, 100) == 0
    # a count below the last one: the meter was re-created (broker restart) and counted 30 since
    assert count_delta(100, 30) == 30


def test_total_never_falls_and_takes_what_is_owed_from_later_growth():
    t = Total()
    assert t.add(10) == 10
    assert t.add(-4) == 10   # owes 4
    assert t.add(6) == 12    # 6 - 4
    assert t.add(3) == 15
    assert t.add(-2) == 15 and t.add(-1) == 15  # owes 3
    assert t.add(2) == 15    # 2 - 3: still owes 1
    assert t.add(1) == 15
    assert t.add(5) == 20
    assert Total(-7).value == 0


# --- rates and ETA ------------------------------------------------------------------------------------

def test_window_slope_over_its_span_keeps_one_point_before_it():
    w = Window(60)
    assert w.slope() is None
    w.add(0, 0)
    assert w.slope() is None
    w.add(30, 300)
    assert w.slope() == 10.0
    w.add(90, 1500)  # (0, 0) is older than 90 - 60 and (30, 300) is not newer: (0, 0) goes
    assert list(w.points) == [(30, 300), (90, 1500)]
    assert w.slope() == 20.0
    w.add(300, 1500)  # a poll far later: the previous point still makes a slope
    assert list(w.points) == [(90, 1500), (300, 1500)]
    assert w.slope() == 0.0


def test_eta():
    assert eta_seconds(1000, -10.0) == 100.0
    assert eta_seconds(1000, 0.0) == math.inf
    assert eta_seconds(1000, 5.0) == math.inf
    assert eta_seconds(1000, None) is None
    assert eta_seconds(0, None) == 0.0
    assert eta_seconds(0, 3.0) == 0.0


def test_has_reassignment_meters_from_2_5():
    assert has_reassignment_meters("2.5.0") and has_reassignment_meters("4.1.0")
    assert not has_reassignment_meters("2.4.1") and not has_reassignment_meters("2.2.2")


# --- progress --------------------------------------------------------------------------------------------

def test_adding_lags_leader_size_minus_the_adding_replicas():
    moves = [Move("t", 0, 1, (2, 3)), Move("t", 1, None, (1,)), Move("u", 0, 2, (1,))]
    sizes = {("t", 0, 1): 10_000, ("t", 0, 2): 4_000, ("u", 0, 2): 500, ("u", 0, 1): 900}
    # broker 3 holds no log of t-0 yet (read, none found): it lacks all 10,000; u-0's adding replica
    # is ahead of its leader's size (a segment deleted on the leader first): 0, not negative;
    # t-1 has no leader: left out
    assert adding_lags(moves, sizes, {1, 2, 3}) == [ReplicaLag("t", 0, 2, 6_000), ReplicaLag("t", 0, 3, 10_000),
                                                    ReplicaLag("u", 0, 1, 0)]
    # broker 3's log dirs not read: its replica is not known, not taken for empty
    assert adding_lags(moves, sizes, {1, 2}) == [ReplicaLag("t", 0, 2, 6_000), ReplicaLag("u", 0, 1, 0)]
    # the leader's log dirs not read: nothing to compare against
    assert adding_lags([Move("t", 0, 1, (2,))], sizes, {2}) == []
    # the leader itself listed as adding (a replica moving back to its leader's broker): not its own lag
    assert adding_lags([Move("t", 0, 1, (1, 2))], sizes, {1, 2}) == [ReplicaLag("t", 0, 2, 6_000)]


def test_log_dir_lags_current_minus_future():
    sizes = {("t", 0, 1): 8_000, ("t", 1, 1): 100}
    futures = {("t", 0, 1): 2_500, ("t", 1, 1): 300, ("t", 2, 1): 50}
    # t-2's current log not read: left out; t-1's future ahead (the current still being written): 0
    assert log_dir_lags(sizes, futures) == [ReplicaLag("t", 0, 1, 5_500), ReplicaLag("t", 1, 1, 0)]


def test_max_lag_and_remaining_by_partition():
    lags = [ReplicaLag("t", 0, 2, 6_000), ReplicaLag("t", 0, 3, 10_000), ReplicaLag("u", 0, 1, 0)]
    assert max_lag(lags) == 10_000
    assert max_lag([]) == 0
    assert remaining_by_partition(lags) == {("t", 0): 16_000, ("u", 0): 0}


def test_progress_eta_from_the_falling_remaining_and_forgets_finished_moves():
    p = Progress(60)
    k = ("t", 0, "replicas")
    assert p.update(0, {k: 1_000}) == {k: (1_000, None)}
    assert p.update(10, {k: 800}) == {k: (800, 40.0)}        # 20 B/s: 800 / 20
    assert p.update(20, {k: 800}) == {k: (800, 80.0)}        # 200 over 20 s: 10 B/s
    assert p.update(30, {k: 0}) == {k: (0, 0.0)}
    assert p.update(40, {}) == {}
    assert p.update(50, {k: 500}) == {k: (500, None)}         # a new move of the same partition: no rate yet


# --- traffic ---------------------------------------------------------------------------------------------

def test_traffic_from_the_meters_splits_replication_and_survives_a_meter_reset():
    b = BrokerTraffic(2, 60)
    t = b.update(0, {IN: 1_000, OUT: 5_000}, {IN: 200, OUT: 0})
    assert not t.estimated
    assert t.reassignment == {IN: 200, OUT: 0} and t.other == {IN: 800, OUT: 5_000}
    assert t.rate == {}
    t = b.update(10, {IN: 1_600, OUT: 5_100}, {IN: 500, OUT: 0})
    assert t.reassignment == {IN: 500, OUT: 0} and t.other == {IN: 1_100, OUT: 5_100}
    assert t.rate == {IN: 30.0, OUT: 0.0}
    # the broker restarted: its meters count from 0 again (100 replication, 40 of it reassignment)
    t = b.update(20, {IN: 100, OUT: 0}, {IN: 40, OUT: 0})
    assert t.reassignment == {IN: 540, OUT: 0} and t.other == {IN: 1_160, OUT: 5_100}
    assert t.rate == {IN: 17.0, OUT: 0.0}  # (540 - 200) / 20 s


def test_traffic_a_count_not_read_is_spanned_by_the_next_delta():
    b = BrokerTraffic(2, 60)
    b.update(0, {IN: 1_000, OUT: 0}, {IN: 200, OUT: 0})
    t = b.update(10, {IN: None, OUT: 0}, {IN: 300, OUT: 0})
    assert t.reassignment[IN] == 200 and t.other[IN] == 800  # as they were
    t = b.update(20, {IN: 1_700, OUT: 0}, {IN: 600, OUT: 0})
    assert t.reassignment[IN] == 600 and t.other[IN] == 1_100


def _estimated_poll(b, now, repl, moves, sizes, known=frozenset({1, 2})):
    return b.update(now, repl, None, moves, sizes, known)


def test_traffic_estimated_from_the_adding_replicas_growth_until_the_copy_ends():
    # m-0 led by broker 1 moves to add broker 2; broker 2 also follows another partition (200 B per 10 s)
    moving = [Move("m", 0, 1, (2,))]
    follower, leader = BrokerTraffic(2, 60), BrokerTraffic(1, 60)
    s0 = {("m", 0, 1): 10_000, ("m", 0, 2): 0}
    t = _estimated_poll(follower, 0, {IN: 500, OUT: 0}, moving, s0)
    assert t.estimated and t.reassignment == {IN: 0, OUT: 0} and t.other == {IN: 500, OUT: 0}
    t = _estimated_poll(leader, 0, {IN: 0, OUT: 1_000}, moving, s0)
    assert t.reassignment == {IN: 0, OUT: 0} and t.other == {IN: 0, OUT: 1_000}

    s1 = {("m", 0, 1): 10_000, ("m", 0, 2): 3_000}
    t = _estimated_poll(follower, 10, {IN: 3_700, OUT: 0}, moving, s1)
    assert t.reassignment == {IN: 3_000, OUT: 0} and t.other == {IN: 700, OUT: 0}
    assert t.rate[IN] == 300.0
    t = _estimated_poll(leader, 10, {IN: 0, OUT: 4_200}, moving, s1)
    assert t.reassignment == {IN: 0, OUT: 3_000} and t.other == {IN: 0, OUT: 1_200}

    # the copy ended between the polls: the replica's last 7,000 bytes still count, once
    s2 = {("m", 0, 1): 10_000, ("m", 0, 2): 10_000}
    t = _estimated_poll(follower, 20, {IN: 10_900, OUT: 0}, [], s2)
    assert t.reassignment == {IN: 10_000, OUT: 0} and t.other == {IN: 900, OUT: 0}
    t = _estimated_poll(leader, 20, {IN: 0, OUT: 11_400}, [], s2)
    assert t.reassignment == {IN: 0, OUT: 10_000} and t.other == {IN: 0, OUT: 1_400}
    # and not again
    t = _estimated_poll(follower, 30, {IN: 11_100, OUT: 0}, [], s2)
    assert t.reassignment == {IN: 10_000, OUT: 0} and t.other == {IN: 1_100, OUT: 0}


def test_traffic_estimated_a_copy_started_between_polls_counts_its_whole_log():
    b = BrokerTraffic(2, 60)
    _estimated_poll(b, 0, {IN: 0, OUT: 0}, [], {})
    t = _estimated_poll(b, 10, {IN: 2_500, OUT: 0}, [Move("m", 0, 1, (2,))], {("m", 0, 1): 9_000, ("m", 0, 2): 2_500})
    assert t.reassignment[IN] == 2_500 and t.other[IN] == 0


def test_traffic_estimated_unknown_log_dirs_wait_for_the_next_poll_that_knows_them():
    b = BrokerTraffic(2, 60)
    moving = [Move("m", 0, 1, (2,))]
    _estimated_poll(b, 0, {IN: 0, OUT: 0}, moving, {("m", 0, 1): 9_000, ("m", 0, 2): 1_000})
    t = _estimated_poll(b, 10, {IN: 2_000, OUT: 0}, moving, None)  # DescribeLogDirs failed
    assert t.reassignment[IN] == 0 and t.other[IN] == 0
    t = _estimated_poll(b, 20, {IN: 4_100, OUT: 0}, moving, {("m", 0, 1): 9_000, ("m", 0, 2): 5_000})
    assert t.reassignment[IN] == 4_000 and t.other[IN] == 100


def test_traffic_goes_on_from_where_it_was_when_the_broker_gains_the_meters():
    b = BrokerTraffic(2, 60)
    _estimated_poll(b, 0, {IN: 500, OUT: 0}, [Move("m", 0, 1, (2,))], {("m", 0, 1): 900, ("m", 0, 2): 100})
    t = _estimated_poll(b, 10, {IN: 800, OUT: 0}, [Move("m", 0, 1, (2,))], {("m", 0, 1): 900, ("m", 0, 2): 300})
    assert t.reassignment[IN] == 200 and t.other[IN] == 600
    # upgraded to 2.5+ (restarted: its meters count from 0): this poll's counts are the new baseline
    t = b.update(20, {IN: 40, OUT: 0}, {IN: 10, OUT: 0})
    assert not t.estimated and t.reassignment == {IN: 200, OUT: 0} and t.other == {IN: 600, OUT: 0}
    t = b.update(30, {IN: 140, OUT: 0}, {IN: 70, OUT: 0})
    assert t.reassignment == {IN: 260, OUT: 0} and t.other == {IN: 640, OUT: 0}
