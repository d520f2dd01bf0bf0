"""exporter/reassignment/stage.py: the series the sidecar next to one broker publishes about
reassignments, from stand-in Admin API views and meter counts, worked by hand.

The scenario: partition m-0 led by broker 1 moves from [1] to [1, 2] (broker 2 adding), throttled
at 10,000 B/s both ways (the tool's throttled-replica lists: leader "0:1", follower "0:2");
t-0 (RF 3, brokers 1, 2, 3) is not moving.
"""
from __future__ import annotations

import gzip
import logging
import math

from kafka_jmx_sidecar.exporter.source.admin.view import (AdminView, Broker, BrokerConfig, Cluster, Input, Partition, Reason, ReplicaSize,
                                 TopicConfig, Unknown)
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.reassignment.settings import ReassignmentSettings
from kafka_jmx_sidecar.exporter.reassignment.stage import ReassignmentStage
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.config.sidecar import sidecar_settings
from kafka_jmx_sidecar.exporter.poll.snapshot import OPENMETRICS, TEXT
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, ReadResult, SourceError

CLUSTER = Cluster("c", 1, (Broker(1, "h", 1), Broker(2, "h", 2), Broker(3, "h", 3)), "DescribeCluster")
STEADY = Partition("t", 0, 1, (1, 2, 3), (1, 2, 3))
MOVING = Partition("m", 0, 1, (1, 2), (1,), adding_replicas=(2,))
MOVED = Partition("m", 0, 1, (1, 2), (1, 2))
THROTTLED = {"m": TopicConfig(1, leader_throttled_replicas="0:1", follower_throttled_replicas="0:2"),
             "t": TopicConfig(1, leader_throttled_replicas="", follower_throttled_replicas="")}
RATES = {b: BrokerConfig(1, 10_000, 10_000) for b in (1, 2, 3)}


def sizes(m2, m1=50_000, t=7_000):
    """Every log on every broker: (topic, partition, broker) -> size."""
    return {("m", 0, 1): m1, ("m", 0, 2): m2, ("t", 0, 1): t, ("t", 0, 2): t, ("t", 0, 3): t}


class FakeAdminPoll:
    """A source.admin.poll.AdminPoll over stand-in views: DescribeLogDirs answers what the
    stage's scope asks of each live broker (recorded in `asked`)."""

    def __init__(self):
        self.source = type("Source", (), {"log_dir_scope": None})()
        self.partitions, self.logs, self.topics, self.brokers, self.unknowns = (), {}, THROTTLED, RATES, ()
        self.error = None
        self.cluster = CLUSTER
        self.log_dirs = True  # False: the brokers' release has no DescribeLogDirs (the scope is not asked)
        self.asked = {}

    def read(self):
        if self.error:
            raise self.error
        scope, found = self.source.log_dir_scope, []
        for b in sorted(self.cluster.live_brokers) if self.log_dirs else ():
            chosen = scope(b, list(self.partitions))
            self.asked[b] = chosen
            for (t, p, broker), size in self.logs.items():
                if broker == b and (chosen is None or p in chosen.get(t, ())):
                    found.append(ReplicaSize(b, "/d", t, p, size, 0, False))
        return AdminView(self.cluster, tuple(self.partitions), self.topics, self.brokers, tuple(found), tuple(self.unknowns))


def meters(repl_in, repl_out, re_in=None, re_out=None):
    out = {"ReplicationBytesInPerSec": repl_in, "ReplicationBytesOutPerSec": repl_out}
    if re_in is not None:
        out.update(ReassignmentBytesInPerSec=re_in, ReassignmentBytesOutPerSec=re_out)
    return out


def poll(stage, now, broker_id, version, counts):
    b = BrokerReadings(str(broker_id), version, meters=counts)
    stage.prepare(b)
    return {(s.name, s.labels): s.value for f in stage.families(b, now) for part in f.parts for s in part}


def test_a_2_5_plus_leader_from_its_meters_with_progress_throttles_and_the_end():
    admin = FakeAdminPoll()
    stage = ReassignmentStage(ReassignmentSettings(60), admin)
    admin.partitions, admin.logs = (MOVING, STEADY), sizes(20_000)
    v = poll(stage, 0, 1, "4.1.0", meters(5_000, 100_000, 0, 20_000))
    # broker 1's own logs, broker 2 only for the partition broker 1 leads that it is being added to
    assert admin.asked == {1: None, 2: {"m": [0]}, 3: {}}
    rem = (("topic", "m"), ("partition", "0"), ("move", "replicas"))
    assert v[("kafka_reassignment_partition_remaining_bytes", rem)] == 30_000
    assert ("kafka_reassignment_partition_eta_seconds", rem) not in v  # no rate yet
    assert v[("kafka_reassignment_max_lag_bytes", ())] == 30_000

    admin.logs = sizes(30_000)
    v = poll(stage, 10, 1, "4.1.0", meters(6_000, 130_000, 0, 30_000))
    flag = ("estimated", "false")
    assert v[("kafka_reassignment_bytes_total", (("direction", "out"), flag))] == 30_000
    assert v[("kafka_replication_non_reassignment_bytes_total", (("direction", "out"), flag))] == 100_000
    assert v[("kafka_reassignment_bytes_total", (("direction", "in"), flag))] == 0
    assert v[("kafka_replication_non_reassignment_bytes_total", (("direction", "in"), flag))] == 6_000
    assert v[("kafka_replication_throttled_rate_bytes_per_second", (("throttle", "leader"),))] == 10_000
    assert v[("kafka_replication_throttled_rate_bytes_per_second", (("throttle", "follower"),))] == 10_000
    # 10,000 B in 10 s out of 10,000 B/s
    assert v[("kafka_reassignment_throttle_used_ratio", (flag, ("throttle", "leader")))] == 0.1
    assert v[("kafka_reassignment_throttle_used_ratio", (flag, ("throttle", "follower")))] == 0.0
    # the leader list names m-0 on broker 1; the follower list only broker 2
    assert v[("kafka_replication_throttled_replicas", (("throttle", "leader"),))] == 1
    assert v[("kafka_replication_throttled_replicas", (("throttle", "follower"),))] == 0
    assert v[("kafka_reassignment_partition_remaining_bytes", rem)] == 20_000
    assert v[("kafka_reassignment_partition_eta_seconds", rem)] == 20.0  # 20,000 at 1,000 B/s
    assert v[("kafka_reassignment_max_lag_bytes", ())] == 20_000
    assert stage.outcome.moving == 1 and stage.outcome.unknowns == {}

    # complete: broker 2 still asked once (the copy's end), progress gone, max lag 0
    admin.partitions, admin.logs = (MOVED, STEADY), sizes(50_000)
    v = poll(stage, 20, 1, "4.1.0", meters(7_000, 151_000, 0, 50_000))
    assert admin.asked[2] == {"m": [0]}
    assert not any(name.startswith("kafka_reassignment_partition") for name, _ in v)
    assert v[("kafka_reassignment_max_lag_bytes", ())] == 0
    assert v[("kafka_reassignment_bytes_total", (("direction", "out"), flag))] == 50_000
    assert v[("kafka_replication_non_reassignment_bytes_total", (("direction", "out"), flag))] == 101_000
    v = poll(stage, 30, 1, "4.1.0", meters(7_000, 151_000, 0, 50_000))
    assert admin.asked == {1: None, 2: {}, 3: {}}


def test_a_2_4_adding_broker_estimates_from_its_replica_growth():
    admin = FakeAdminPoll()
    stage = ReassignmentStage(ReassignmentSettings(60), admin)
    admin.partitions, admin.logs = (MOVING, STEADY), sizes(20_000)
    poll(stage, 0, 2, "2.4.1", meters(30_000, 0))
    assert admin.asked == {1: {}, 2: None, 3: {}}  # broker 2 leads nothing moving
    admin.logs = sizes(24_000, t=7_500)
    v = poll(stage, 10, 2, "2.4.1", meters(34_500, 0))
    flag = ("estimated", "true")
    assert v[("kafka_reassignment_bytes_total", (("direction", "in"), flag))] == 4_000
    assert v[("kafka_replication_non_reassignment_bytes_total", (("direction", "in"), flag))] == 30_500
    assert v[("kafka_reassignment_throttle_used_ratio", (flag, ("throttle", "follower")))] == 0.04
    # broker 2 leads no moving partition: no progress of its own, max lag 0
    assert not any(name.startswith("kafka_reassignment_partition") for name, _ in v)
    assert v[("kafka_reassignment_max_lag_bytes", ())] == 0
    assert v[("kafka_replication_throttled_replicas", (("throttle", "follower"),))] == 1
    assert stage.outcome.estimated is True


def test_a_2_4_leader_estimates_out_from_the_adding_replica_and_eta_stalls_to_inf():
    admin = FakeAdminPoll()
    stage = ReassignmentStage(ReassignmentSettings(60), admin)
    admin.partitions, admin.logs = (MOVING, STEADY), sizes(20_000)
    poll(stage, 0, 1, "2.4.1", meters(0, 14_000))
    admin.logs = sizes(20_000)  # the copy stalled
    v = poll(stage, 10, 1, "2.4.1", meters(0, 15_000))
    rem = (("topic", "m"), ("partition", "0"), ("move", "replicas"))
    assert v[("kafka_reassignment_partition_eta_seconds", rem)] == math.inf
    assert v[("kafka_reassignment_bytes_total", (("direction", "out"), ("estimated", "true")))] == 0
    assert v[("kafka_replication_non_reassignment_bytes_total", (("direction", "out"), ("estimated", "true")))] \
        == 15_000


def test_hidden_rates_and_unknown_throttled_replicas_leave_their_series_out(caplog):
    caplog.set_level(logging.WARNING, logger="kafka_jmx_sidecar.reassignment")
    admin = FakeAdminPoll()
    stage = ReassignmentStage(ReassignmentSettings(60), admin)
    admin.partitions, admin.logs = (MOVING, STEADY), sizes(20_000)
    admin.brokers = {b: BrokerConfig(1) for b in (1, 2, 3)}
    admin.topics = {"m": TopicConfig(1), "t": THROTTLED["t"]}
    admin.unknowns = (Unknown(Input.THROTTLE_RATES, Reason.HIDDEN, "broker 1: sent as sensitive", broker=1),
                      Unknown(Input.THROTTLED_REPLICAS, Reason.UNAUTHORIZED, "topic m: denied", topic="m"))
    v = poll(stage, 0, 1, "2.4.1", meters(0, 0))
    names = {name for name, _ in v}
    assert not names & {"kafka_replication_throttled_rate_bytes_per_second", "kafka_reassignment_throttle_used_ratio",
                        "kafka_replication_throttled_replicas"}
    assert "kafka_reassignment_partition_remaining_bytes" in names
    assert stage.outcome.unknowns == {("throttle_rates", "hidden"): 1, ("throttled_replicas", "unauthorized"): 1}
    told = [r.getMessage() for r in caplog.records]
    poll(stage, 10, 1, "2.4.1", meters(0, 0))
    assert len(caplog.records) == len(told) == 2  # once each
    assert "sent as sensitive" in told[0] and "the throttled rates and their use are not published" in told[0]


def test_without_the_admin_api_only_the_meters_split():
    stage = ReassignmentStage(ReassignmentSettings(60), None)
    v = poll(stage, 0, 1, "4.1.0", meters(900, 2_000, 100, 500))
    assert v == {("kafka_reassignment_bytes_total", (("direction", "in"), ("estimated", "false"))): 100,
                 ("kafka_replication_non_reassignment_bytes_total", (("direction", "in"), ("estimated", "false"))): 800,
                 ("kafka_reassignment_bytes_total", (("direction", "out"), ("estimated", "false"))): 500,
                 ("kafka_replication_non_reassignment_bytes_total", (("direction", "out"), ("estimated", "false"))):
                     1_500}
    assert stage.outcome.unknowns == {("admin_api", "not_configured"): 1}
    # a 2.4 broker without the Admin API: nothing to estimate from
    stage = ReassignmentStage(ReassignmentSettings(60), None)
    assert poll(stage, 0, 1, "2.4.1", meters(900, 2_000)) == {}


def test_an_unreachable_admin_api_and_an_unknown_broker_id():
    admin = FakeAdminPoll()
    admin.error = SourceError("no broker of k:9092 answered")
    stage = ReassignmentStage(ReassignmentSettings(60), admin)
    v = poll(stage, 0, 1, "4.1.0", meters(900, 2_000, 100, 500))
    assert len(v) == 4 and stage.outcome.unknowns == {("admin_api", "unreachable"): 1}
    b = BrokerReadings(None, None)
    stage.prepare(b)
    assert stage.families(b, 10) == [] and stage.outcome.unknowns == {("broker_id", "unknown"): 1}


# --- in the poll: the collector, the exposition --------------------------------------------------------------

class MeterSource:
    target = "127.0.0.1:9999"
    connected = True

    def __init__(self, counts):
        self.counts = list(counts)

    def read(self):
        return ReadResult([], 0, broker=BrokerReadings("1", "4.1.0", meters=self.counts.pop(0)))

    def close(self):
        pass


def test_the_collector_publishes_them_as_counters_in_both_namings():
    for naming in ("0.x", "1.x"):
        config = parse_config(f'sidecar:\n  naming: "{naming}"\n  reassignment: {{}}\nrules:\n- pattern: ".*"\n',
                              source="s.yml")
        source = MeterSource([meters(900, 2_000, 100, 500), meters(400, 300, 0, 0)])
        c = Collector(lambda cfg: source, config, sidecar_settings(config))
        assert c.poll_once() and c.poll_once()
        text = gzip.decompress(c._snapshot.gzipped(TEXT)).decode()
        assert "# TYPE kafka_reassignment_bytes_total counter" in text
        om = gzip.decompress(c._snapshot.gzipped(OPENMETRICS)).decode()
        assert "# TYPE kafka_reassignment_bytes counter" in om and "kafka_reassignment_bytes_total{" in om
        # the second poll: the broker restarted (meters from 0); the counters went on
        assert 'kafka_reassignment_bytes_total{direction="in",estimated="false",} 100.0' in text \
            or 'kafka_reassignment_bytes_total{direction="in",estimated="false"} 100.0' in text
        assert 'kafka_replication_non_reassignment_bytes_total{direction="in",estimated="false"' in text
        line = next(l for l in text.splitlines()
                    if l.startswith('kafka_replication_non_reassignment_bytes_total{direction="in"'))
        assert float(line.rsplit(" ", 1)[1]) == 800 + 400


def test_a_broker_whose_log_dirs_are_not_known_publishes_no_progress():
    admin = FakeAdminPoll()
    stage = ReassignmentStage(ReassignmentSettings(60), admin)
    admin.partitions, admin.logs = (MOVING, STEADY), sizes(20_000)
    # broker 1 not among the live brokers as the Admin API sees them (fenced, say)
    admin.cluster = Cluster("c", 2, (Broker(2, "h", 2), Broker(3, "h", 3)), "DescribeCluster")
    v = poll(stage, 0, 1, "4.1.0", meters(0, 0, 0, 0))
    assert not any(name.startswith("kafka_reassignment_partition") or name == "kafka_reassignment_max_lag_bytes"
                   for name, _ in v)
    assert ("kafka_reassignment_bytes_total", (("direction", "in"), ("estimated", "false"))) in v  # the split still
    assert stage.outcome.unknowns == {("log_dirs", "unreachable"): 1}
    # DescribeLogDirs unsupported (Kafka before 1.0): the view says so, and so does the stage
    admin.cluster, admin.log_dirs = CLUSTER, False
    admin.unknowns = (Unknown(Input.LOG_DIRS, Reason.UNSUPPORTED, "broker 0.11.0 has no DescribeLogDirs", broker=1),)
    poll(stage, 10, 1, "4.1.0", meters(0, 0, 0, 0))
    assert stage.outcome.unknowns == {("log_dirs", "unsupported"): 1}
