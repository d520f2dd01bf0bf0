"""Reassignment traffic and progress: what KIP-352 deferred, as arithmetic on
plain values. The Kafka facts behind it (which broker reports what):

- `ReassignmentBytesInPerSec` (counted by a broker being added to a partition, for the bytes it
  fetches) and `ReassignmentBytesOutPerSec` (by the leader, for the bytes it serves to adding
  followers) are broker-wide meters of Kafka 2.5+. The same bytes are also counted in
  `ReplicationBytesIn/OutPerSec`, so the replication that is not reassignment is
  Replication - Reassignment.
- A broker without the reassignment meters (before 2.5) still shows what they would count: the
  growth of the logs of its adding replicas (In), and of the adding replicas of the partitions it
  leads (Out). Those are estimates (a log shrinks with retention, and grows by what a replica
  fetched, not by what was sent).
- An adding replica lacks `leader's log size - its own log size` bytes (DescribeLogDirs); a
  replica moving between a broker's log dirs, its current log's size minus its future log's.
- `leader.replication.throttled.rate` limits what a leader sends to its out-of-ISR throttled
  followers (Out), `follower.replication.throttled.rate` what a follower fetches for its
  out-of-ISR throttled replicas (In).

Counters here are the sidecar's own (`Total`): monotonic whatever the broker's meters do (a meter
MBean re-created by a broker restart counts again from 0). Rates come from successive polls over
a window (`Window`). Pure: no I/O; the stateful pieces are plain objects the caller feeds each poll
(exporter/reassignment/stage.py for the sidecar next to one broker; the cluster-wide mode can use
`adding_lags`, `log_dir_lags`, `max_lag`, `Progress` on a whole cluster's view).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Mapping, NamedTuple

from kafka_jmx_sidecar.mbeans import catalog

IN, OUT = "in", "out"
DIRECTIONS = (IN, OUT)
LEADER, FOLLOWER = "leader", "follower"
THROTTLES = (LEADER, FOLLOWER)
# the throttle that limits each direction of a broker's reassignment traffic
THROTTLE_OF = {OUT: LEADER, IN: FOLLOWER}
# what moves: replicas between brokers (a reassignment), or a replica between one broker's log dirs
REPLICAS, LOG_DIR = "replicas", "log_dir"

_METERS = {s.name: s for s in catalog.BROKER_TOPIC_METRICS if s.scope is catalog.Scope.BROKER}
REPLICATION = {IN: _METERS["ReplicationBytesInPerSec"], OUT: _METERS["ReplicationBytesOutPerSec"]}
REASSIGNMENT = {IN: _METERS["ReassignmentBytesInPerSec"], OUT: _METERS["ReassignmentBytesOutPerSec"]}
METERS = tuple(REPLICATION.values()) + tuple(REASSIGNMENT.values())


def has_reassignment_meters(version: str) -> bool:
    """Whether a broker of this release counts reassignment bytes itself (the catalog's `since`)."""
    return all(s.exists_in(version) for s in REASSIGNMENT.values())


# --- counters and rates -----------------------------------------------------------------------------

def count_delta(previous: float, current: float) -> float:
    """What a cumulative count gained since `previous`. A count below the previous one belongs to
    a re-created meter (a broker restart): it counted from 0."""
    return current - previous if current >= previous else current


class Total:
    """A counter the sidecar keeps: it grows by what is added and never falls. A negative amount
    (two counts read a moment apart, an estimate running ahead of a meter) is owed, and taken
    from later growth, so no byte is counted twice."""

    __slots__ = ("value", "_owed")

    def __init__(self, start: float = 0.0):
        self.value = max(0.0, float(start))
        self._owed = 0.0

    def add(self, amount: float) -> float:
        amount -= self._owed
        if amount > 0:
            self.value += amount
            self._owed = 0.0
        else:
            self._owed = -amount
        return self.value


class Window:
    """(time, value) points of the last `seconds`, plus the newest point before them (so two polls
    further apart than the window still make a slope)."""

    __slots__ = ("seconds", "points")

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.points: deque[tuple[float, float]] = deque()

    def add(self, t: float, value: float) -> None:
        points = self.points
        points.append((t, value))
        while len(points) > 2 and points[1][0] <= t - self.seconds:
            points.popleft()

    def slope(self) -> float | None:
        """Change per second across the window; None before two points."""
        if len(self.points) < 2:
            return None
        (t0, v0), (t1, v1) = self.points[0], self.points[-1]
        return (v1 - v0) / (t1 - t0) if t1 > t0 else None


def eta_seconds(remaining: float, slope: float | None) -> float | None:
    """Time until `remaining` reaches 0 at the rate it changed lately (`slope`, per second):
    0 when nothing remains, +Inf when it is not falling, None before a rate is known."""
    if remaining <= 0:
        return 0.0
    if slope is None:
        return None
    if slope >= 0:
        return math.inf
    return remaining / -slope


# --- progress: what the adding replicas still lack ----------------------------------------------

class Move(NamedTuple):
    """A reassigning partition: its leader (None: none) and the replicas being added."""

    topic: str
    partition: int
    leader: int | None
    adding: tuple[int, ...]


Replica = tuple[str, int, int]  # (topic, partition, broker)


class ReplicaLag(NamedTuple):
    topic: str
    partition: int
    broker: int
    lag: int  # bytes it lacks


def adding_lags(moves: Iterable[Move], sizes: Mapping[Replica, int], known: frozenset[int] | set[int]
                ) -> list[ReplicaLag]:
    """Each adding replica's lag: the leader's log size minus its own (never below 0). `sizes` are
    the current (not future) logs' sizes, `known` the brokers whose log dirs were read: an adding
    replica on such a broker without a log has not started (size 0). A replica whose leader or
    own size is not known is left out, as is the leader itself."""
    out = []
    for m in moves:
        if m.leader is None or m.leader not in known:
            continue
        leader = sizes.get((m.topic, m.partition, m.leader))
        if leader is None:
            continue
        for b in m.adding:
            if b == m.leader or b not in known:
                continue
            out.append(ReplicaLag(m.topic, m.partition, b, max(0, leader - sizes.get((m.topic, m.partition, b), 0))))
    return out


def log_dir_lags(sizes: Mapping[Replica, int], futures: Mapping[Replica, int]) -> list[ReplicaLag]:
    """Each replica moving between its broker's log dirs: its current log's size minus its future
    log's (never below 0)."""
    return [ReplicaLag(t, p, b, max(0, sizes[(t, p, b)] - size))
            for (t, p, b), size in futures.items() if (t, p, b) in sizes]


def max_lag(lags: Iterable[ReplicaLag]) -> int:
    """KIP-352's deferred ReassignmentMaxLag, in bytes: the largest lag of an adding replica (0: none)."""
    return max((l.lag for l in lags), default=0)


def remaining_by_partition(lags: Iterable[ReplicaLag]) -> dict[tuple[str, int], int]:
    """What a partition's adding replicas (or moving logs) still lack together."""
    out: dict[tuple[str, int], int] = {}
    for l in lags:
        out[(l.topic, l.partition)] = out.get((l.topic, l.partition), 0) + l.lag
    return out


class Progress:
    """Per partition and kind of move, the bytes remaining and the time to completion at the rate
    they fell over the window. A partition no longer moving is forgotten."""

    def __init__(self, window_seconds: float):
        self.window_seconds = window_seconds
        self._windows: dict[tuple[str, int, str], Window] = {}

    def update(self, now: float, remaining: Mapping[tuple[str, int, str], int]
               ) -> dict[tuple[str, int, str], tuple[int, float | None]]:
        """(topic, partition, move) -> (bytes remaining, ETA in seconds or None before a rate)."""
        windows = self._windows
        for key in [k for k in windows if k not in remaining]:
            del windows[key]
        out = {}
        for key, value in remaining.items():
            w = windows.get(key)
            if w is None:
                w = windows[key] = Window(self.window_seconds)
            w.add(now, value)
            out[key] = (value, eta_seconds(value, w.slope()))
        return out


# --- traffic: one broker's reassignment and other replication bytes -----------------------------

@dataclass
class Traffic:
    """One broker's replication bytes by direction, as counters, after an update."""

    reassignment: dict[str, float] = field(default_factory=dict)  # direction -> bytes (absent: not known)
    other: dict[str, float] = field(default_factory=dict)         # replication that is not reassignment
    rate: dict[str, float] = field(default_factory=dict)          # reassignment bytes/s over the window
    estimated: bool = False  # the reassignment bytes come from the adding replicas' growth


class BrokerTraffic:
    """One broker's reassignment and non-reassignment replication bytes, updated each poll.

    `update` takes the broker's Replication meters' counts, its Reassignment meters' counts (None
    for a broker without them: then the adding replicas' growth stands in, `estimated`), and what
    the growth needs: the reassigning partitions and the replicas' log sizes. A count not read this
    poll (None) leaves its counters as they were; the next poll's delta spans both. The first poll
    starts the counters at the broker's own counts (so other + reassignment = Replication); when
    the source of the reassignment bytes changes (a broker upgraded to 2.5+), the counters go on
    from where they were, from that poll's counts."""

    def __init__(self, broker: int, window_seconds: float):
        self.broker = broker
        self.window_seconds = window_seconds
        self._reassignment: dict[str, Total] = {}
        self._other: dict[str, Total] = {}
        self._windows = {d: Window(window_seconds) for d in DIRECTIONS}
        self._estimated: bool | None = None
        self._rebase()

    def _rebase(self) -> None:
        """Forget the last counts read: the next poll only takes them as its baseline."""
        self._replication: dict[str, float] = {}  # last count read
        self._meter: dict[str, float] = {}
        # the adding replicas at the last poll that read this broker's log dirs -> their size (None:
        # their broker's not read); None before such a poll
        self._adding: dict[Replica, int | None] | None = None
        self._leaders: dict[tuple[str, int], int | None] = {}

    def update(self, now: float, replication: Mapping[str, float | None],
               reassignment: Mapping[str, float | None] | None,
               moves: Iterable[Move] = (), sizes: Mapping[Replica, int] | None = None,
               known: frozenset[int] | set[int] = frozenset()) -> Traffic:
        estimated = reassignment is None
        if self._estimated is not None and estimated != self._estimated:
            self._rebase()
        self._estimated = estimated
        counts = (self._growth(moves, sizes, known) or {}) if estimated else reassignment
        out = Traffic(estimated=estimated)
        for d in DIRECTIONS:
            r, a = replication.get(d), counts.get(d)
            if r is None or a is None:
                self._carry(d, out)
                continue
            if d not in self._other:  # the first poll: the broker's counts so far
                start = 0.0 if estimated else a
                self._reassignment[d], self._other[d] = Total(start), Total(r - start)
            elif d in self._replication:
                gained = a if estimated else count_delta(self._meter[d], a)
                self._reassignment[d].add(gained)
                self._other[d].add(count_delta(self._replication[d], r) - gained)
            self._replication[d] = r
            if not estimated:
                self._meter[d] = a
            self._windows[d].add(now, self._reassignment[d].value)
            self._carry(d, out)
        return out

    def _carry(self, d: str, out: Traffic) -> None:
        if d in self._other:
            out.reassignment[d] = self._reassignment[d].value
            out.other[d] = self._other[d].value
            slope = self._windows[d].slope()
            if slope is not None:
                out.rate[d] = slope

    def _growth(self, moves: Iterable[Move], sizes: Mapping[Replica, int] | None,
                known: frozenset[int] | set[int]) -> dict[str, float] | None:
        """Bytes the adding replicas' logs grew by since the last poll that read them: In, this
        broker's own adding replicas; Out, the adding replicas of the partitions it leads. A
        replica that stopped adding since then still counts its growth until now (the copy's
        end); one that started adding since then counts its whole log. None: this broker's log
        dirs are not known this poll (no Admin API, or not answered); the next poll that knows
        them counts the growth since the last that did."""
        if sizes is None or self.broker not in known:
            return None
        me = self.broker
        adding_now: set[Replica] = set()
        leaders: dict[tuple[str, int], int | None] = {}
        for m in moves:
            leaders[(m.topic, m.partition)] = m.leader
            adding_now.update((m.topic, m.partition, b) for b in m.adding if b != m.leader)
        growth = {IN: 0.0, OUT: 0.0}
        if self._adding is not None:
            for key in adding_now | self._adding.keys():
                t, p, b = key
                if b not in known:
                    continue
                if key in self._adding:
                    base = self._adding[key]
                    if base is None:
                        continue  # adding last time, its broker not read then: no base
                elif key in adding_now:
                    base = 0  # started since: its whole log was copied
                else:
                    continue
                grew = max(0, sizes.get(key, 0) - base)
                if b == me:
                    growth[IN] += grew
                if leaders.get((t, p), self._leaders.get((t, p))) == me:
                    growth[OUT] += grew
        self._adding = {key: (sizes.get(key, 0) if key[2] in known else None) for key in adding_now}
        self._leaders = leaders
        return growth
