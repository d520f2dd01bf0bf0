"""The Admin API source (exporter/source/admin) against real Kafka clusters: what it reads equals what the
release's own `kafka-topics.sh --describe` prints at the same moment, and what a release cannot
say is an Unknown with the right reason, never a value.

Each release (4.4 and 3.6 under KRaft; 2.4 and 0.11 under ZooKeeper) gets one 3-broker cluster that plays

    healthy -> reassigning `moving` 1 -> 2,3 (throttled) -> reassigned -> broker 3 down

and in each state the source's partitions (leader, replicas, ISR, adding/removing replicas), min
ISR per topic (override and broker default), throttle rates and throttled replicas, and log-dir
sizes are checked: partitions against --describe (read again until both agree, as ISR changes
take a moment), the rest against what the test set up. While the throttled reassignment copies,
the adding replicas' log-dir sizes grow between reads and stay below the leader's. Requests are
batched: one DescribeConfigs for all topics plus one per live broker, one DescribeLogDirs per live
broker.
"""
from __future__ import annotations

import re
import time

import pytest

from kafka_jmx_sidecar.exporter.source.admin.fallback import MinIsrResolver
from kafka_jmx_sidecar.exporter.source.admin.settings import AdminSettings
from kafka_jmx_sidecar.exporter.source.admin.source import AdminSource
from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Input, Reason
from kafka_jmx_sidecar.mbeans.partition_states import Parsed, read_describe
from harness.kafka import KafkaCluster

RELEASES = ("4.4", "3.6", "2.4", "0.11")
# The throttle holds only with small fetches: a follower fetching the default 1 MiB moves ~1 MiB
# per 11 s quota window whatever the rate (see test_health_vs_brokers.py).
BROKER_CONFIG = {"replica.fetch.max.bytes": "16384", "controlled.shutdown.retry.backoff.ms": "200"}
THROTTLE = 10_000
MOVING_RECORDS, RECORD_SIZE = 20_000, 100
AGREE_TIMEOUT = 60.0

TOPICS = {  # name -> (assignment, min.insync.replicas or None for the broker default)
    "orders": ([[1, 2, 3], [2, 3, 1], [3, 1, 2]], 2),
    "relaxed": ([[2, 3], [3, 1]], None),
    "strict": ([[1, 3]], 2),
    "moving": ([[1]], None),
}
MOVE = {("moving", 0): [2, 3]}


def _version(release: str) -> tuple[int, ...]:
    return {"4.4": (4, 4), "3.6": (3, 6), "2.4": (2, 4), "0.11": (0, 11)}[release]


@pytest.fixture
def cluster(request, own_kafka) -> KafkaCluster:
    """A cluster of its own (not real_kafka's shared one): small replica fetches for the throttle
    to hold, and the scenario ends with broker 3 stopped; every partition of the cluster is
    compared with --describe, so another test's topics would be compared too."""
    kafka = own_kafka(request.param, brokers=3, broker_config=BROKER_CONFIG)
    kafka.create_topics({name: dict(assignment=assignment, min_isr=min_isr)
                         for name, (assignment, min_isr) in TOPICS.items()})
    kafka.produce("moving", records=MOVING_RECORDS, record_size=RECORD_SIZE)
    return kafka


def _source(kafka: KafkaCluster) -> AdminSource:
    return AdminSource(AdminSettings(bootstrap_servers=tuple(kafka.bootstrap.split(",")), request_timeout_seconds=10))


# --- the same moment through kafka-topics.sh -----------------------------------------------------

_ELR = re.compile(r"Topic: ?(\S+)\tPartition: ?(\d+).*\tElr: ?([\d,]*)\tLastKnownElr: ?([\d,]*)")


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",")) if text else ()


def _described(text: str) -> dict[tuple[str, int], tuple]:
    states = {}
    for item in read_describe(text.splitlines()):
        assert isinstance(item, Parsed), f"describe line {item}"
        s = item.state
        states[(s.topic, s.partition)] = (s.leader, s.replicas, s.isr, s.adding_replicas, s.removing_replicas, s.min_isr)
    return states


def _read(view: AdminView, adding_shown: bool) -> dict[tuple[str, int], tuple]:
    """The view as --describe shows it (adding/removing only where the release's describe does)."""
    resolve = MinIsrResolver(view)
    return {(p.topic, p.partition): (p.leader, p.replicas, p.isr,
                                     p.adding_replicas if adding_shown else (),
                                     p.removing_replicas if adding_shown else (), resolve(p.topic))
            for p in view.partitions if not p.topic.startswith("__")}


def agreeing_read(kafka: KafkaCluster, source: AdminSource, what: str) -> tuple[AdminView, str]:
    """A read and a --describe that agree on every partition (read again until they do)."""
    deadline = time.monotonic() + AGREE_TIMEOUT
    while True:
        view = source.read()
        text = kafka.describe()
        described = {k: v for k, v in _described(text).items() if not k[0].startswith("__")}
        read = _read(view, "Adding Replicas" in text)
        if read == described:
            return view, text
        if time.monotonic() > deadline:
            diff = {k: (read.get(k), described.get(k)) for k in read.keys() | described.keys()
                    if read.get(k) != described.get(k)}
            pytest.fail(f"{what}: the Admin API read and --describe disagree (read, describe): {diff}\n{text}")
        time.sleep(1.0)


# --- the checks of each state ---------------------------------------------------------------------

def check_min_isr(view: AdminView) -> None:
    assert view.topics["orders"].min_isr == 2 and not view.topics["orders"].min_isr_is_default
    assert view.topics["strict"].min_isr == 2
    assert view.topics["relaxed"].min_isr == 1 and view.topics["relaxed"].min_isr_is_default
    assert view.topics["moving"].min_isr == 1 and view.topics["moving"].min_isr_is_default
    assert {b: c.min_isr for b, c in view.brokers.items()} == {b: 1 for b in view.cluster.live_brokers}
    assert MinIsrResolver(view).fallbacks() == {}


def check_batching(source: AdminSource, view: AdminView, version: tuple[int, ...]) -> None:
    live = len(view.cluster.live_brokers)
    assert source.requests["DescribeConfigs"] == 1 + live, source.requests
    assert source.requests.get("DescribeLogDirs", 0) == (live if version >= (1, 0) else 0), source.requests
    assert source.requests.get("ListPartitionReassignments", 0) == (1 if version >= (2, 4) else 0)
    # the partitions: one request (DescribeTopicPartitions pages 2,000 partitions); before 2.8 the
    # cluster's brokers come from a Metadata request of their own (for no topic)
    assert source.requests.get("DescribeTopicPartitions", 0) == (1 if version >= (3, 7) else 0), source.requests
    # Kafka 2.8 to 3.6 answer DescribeCluster v0, which kafka-python 3.0 fails to read (it drops a
    # field v0 lacks): the cluster's brokers then come from Metadata as before 2.8
    assert source.requests.get("Metadata", 0) == 2 * (version < (3, 7)), source.requests
    assert source.requests.get("DescribeCluster", 0) == (1 if version >= (2, 8) else 0), source.requests


def check_unknowns_of_release(view: AdminView, version: tuple[int, ...]) -> None:
    """What each release cannot say, and why; nothing else is unknown while every broker runs."""
    expected = set()
    if version < (2, 4):
        expected.add((Input.REASSIGNMENTS, Reason.UNSUPPORTED, None))
    if version < (3, 7):
        expected.add((Input.ELIGIBLE_LEADERS, Reason.UNSUPPORTED, None))
    if version < (1, 0):
        expected |= {(Input.OFFLINE_REPLICAS, Reason.UNSUPPORTED, None), (Input.LOG_DIRS, Reason.UNSUPPORTED, None)}
    throttle_unknowns = {(u.input, u.reason, u.broker) for u in view.unknowns if u.input is Input.THROTTLE_RATES}
    rest = {(u.input, u.reason, u.broker) for u in view.unknowns if u.input is not Input.THROTTLE_RATES}
    assert rest == expected, view.unknowns
    if version < (1, 1):  # DescribeConfigs v0 does not report dynamic broker configs
        assert throttle_unknowns == {(Input.THROTTLE_RATES, Reason.UNSUPPORTED, b) for b in (1, 2, 3)}
    for u in view.unknowns:
        assert u.detail and ("Kafka" in u.detail or "broker" in u.detail), u


def check_sizes_grow(source: AdminSource, version: tuple[int, ...]) -> None:
    """While the throttled copy runs, each adding replica's size grows between reads and stays
    below the leader's (who holds all of it)."""
    if version < (1, 0):
        return
    def sizes() -> dict[int, int]:
        view = source.read()
        return {r.broker: r.size for r in view.sizes("moving", 0) if not r.is_future}
    first = sizes()
    leader_size = first[1]
    assert leader_size >= MOVING_RECORDS * RECORD_SIZE, first
    deadline = time.monotonic() + 60
    while True:
        time.sleep(3)
        later = sizes()
        grown = {b for b in (2, 3) if later.get(b, 0) > first.get(b, 0)}
        if grown == {2, 3}:
            break
        assert time.monotonic() < deadline, f"adding replicas' sizes did not grow: {first} -> {later}"
    for b in (2, 3):
        assert 0 < later[b] < leader_size, later


@pytest.mark.parametrize("cluster", RELEASES, indirect=True)
def test_admin_source_agrees_with_topic_command(cluster: KafkaCluster):
    kafka, version = cluster, _version(cluster.release.name)
    with _source(kafka) as source:
        # healthy
        view, _ = agreeing_read(kafka, source, "healthy")
        assert view.cluster.live_brokers == {1, 2, 3}
        assert view.cluster.controller_id in {1, 2, 3}
        assert view.cluster.cluster_id
        assert view.cluster.source == ("DescribeCluster" if version >= (3, 7) else "Metadata")
        check_min_isr(view)
        check_batching(source, view, version)
        check_unknowns_of_release(view, version)
        for b, config in view.brokers.items():
            assert (config.leader_throttled_rate, config.follower_throttled_rate) == (None, None), (b, config)
        if version >= (1, 0):
            assert {(r.broker, r.topic, r.partition) for r in view.replica_sizes} == \
                {(b, p.topic, p.partition) for p in view.partitions for b in p.replicas}
            assert view.sizes("moving", 0)[0].size >= MOVING_RECORDS * RECORD_SIZE
        if version >= (3, 7):
            assert all(p.eligible_leader_replicas == () for p in view.partitions)
            # DescribeTopicPartitions in pages of 2 partitions reads the same (7 here: 4 requests)
            with AdminSource(source.settings, page_partitions=2) as paged:
                assert paged.read().partitions == view.partitions
                assert paged.requests["DescribeTopicPartitions"] == -(-len(view.partitions) // 2), paged.requests

        # reassigning, throttled
        kafka.reassign(MOVE, throttle=THROTTLE)
        view, text = agreeing_read(kafka, source, "reassigning")
        moving = next(p for p in view.partitions if p.topic == "moving")
        assert sorted(moving.replicas) == [1, 2, 3]
        if version >= (2, 4):
            assert (moving.adding_replicas, moving.removing_replicas) == ((2, 3), (1,))
            assert view.unknown(Input.REASSIGNMENTS) is None
        else:
            assert (moving.adding_replicas, moving.removing_replicas) == ((), ())
            assert view.unknown(Input.REASSIGNMENTS).reason is Reason.UNSUPPORTED
        assert view.topics["moving"].leader_throttled_replicas == "0:1"
        assert sorted(view.topics["moving"].follower_throttled_replicas.split(",")) == ["0:2", "0:3"]
        rates = {b: (c.leader_throttled_rate, c.follower_throttled_rate) for b, c in view.brokers.items()}
        throttle_reasons = {u.broker: u.reason for u in view.unknowns if u.input is Input.THROTTLE_RATES}
        if version >= (2, 5):    # 4.4 here: the rates the tool set on every broker it involved
            assert (rates, throttle_reasons) == ({b: (THROTTLE, THROTTLE) for b in (1, 2, 3)}, {})
        elif version >= (1, 1):  # 2.4: set, but sent as sensitive without a value
            assert (rates, throttle_reasons) == ({b: (None, None) for b in (1, 2, 3)},
                                                 {b: Reason.HIDDEN for b in (1, 2, 3)})
        else:                    # 0.11: DescribeConfigs v0 has no dynamic broker configs
            assert (rates, throttle_reasons) == ({b: (None, None) for b in (1, 2, 3)},
                                                 {b: Reason.UNSUPPORTED for b in (1, 2, 3)})
        check_sizes_grow(source, version)

        # reassigned: the tool's --verify also lifts the throttles
        kafka.finish_reassignment()
        view, _ = agreeing_read(kafka, source, "reassigned")
        moving = next(p for p in view.partitions if p.topic == "moving")
        assert (sorted(moving.replicas), moving.adding_replicas, moving.removing_replicas) == ([2, 3], (), ())
        if version >= (2, 5):  # --verify removed the rates: not set, and known to be
            assert all((c.leader_throttled_rate, c.follower_throttled_rate) == (None, None)
                       for c in view.brokers.values())
            assert view.unknown(Input.THROTTLE_RATES, broker=1) is None
        assert view.topics["moving"].leader_throttled_replicas in ("", None)

        # broker 3 down
        kafka.stop_broker(3)
        # and out of every ISR: a follower's leader drops it only after replica.lag.time.max.ms (10 s on
        # 0.11) when the controller did not (seen in a full run: 0.11 still listed 3 in an ISR)
        kafka.wait_for(lambda: (v := source.read()).cluster.live_brokers == {1, 2}
                       and all(3 not in p.isr for p in v.partitions), "broker 3 out of the live brokers and ISRs", 60)
        view, text = agreeing_read(kafka, source, "broker 3 down")
        for what in (Input.BROKER_MIN_ISR, Input.THROTTLE_RATES, Input.LOG_DIRS):
            assert [(u.reason, "broker 3" in u.detail) for u in view.unknowns if u.input is what and u.broker == 3] \
                == [(Reason.UNREACHABLE, True)], (what, view.unknowns)
        assert 3 not in view.brokers
        assert all(3 not in p.isr for p in view.partitions)
        if version >= (1, 0):
            assert all(p.offline_replicas == ((3,) if 3 in p.replicas else ()) for p in view.partitions), view.partitions
            assert all(r.broker != 3 for r in view.replica_sizes)
        strict = next(p for p in view.partitions if p.topic == "strict")
        assert strict.isr == (1,)
        if version >= (3, 7):
            # KIP-966: the replica that left an ISR below min ISR is an eligible leader
            elr = {(m.group(1), int(m.group(2))): (_ids(m.group(3)), _ids(m.group(4))) for m in _ELR.finditer(text)}
            for p in view.partitions:
                if (p.topic, p.partition) in elr:
                    assert (p.eligible_leader_replicas, p.last_known_elr) == elr[(p.topic, p.partition)], p
            assert strict.eligible_leader_replicas == (3,), strict
