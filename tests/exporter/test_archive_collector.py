"""The poll loop with `sidecar.archive`: what a poll archives is what the broker served (before the
recompute replaced anything), and a disk that fails never fails the poll. A stand-in source, no JVM."""
from __future__ import annotations

from array import array

from kafka_jmx_sidecar.exporter.archive.reader import Rejects, read_archive, states_at
from kafka_jmx_sidecar.exporter.archive.settings import ArchiveSettings
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from kafka_jmx_sidecar.exporter.poll.snapshot import TEXT
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, ReadResult
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions
from tests.exporter.test_collector import URP, Clock, gauge

RULES = "rules:\n  - pattern: kafka.(\\w+)<type=(.+), name=(.+)><>Value\n    name: kafka_$1_$2_$3\n"


class Broker22:
    """A 2.2 broker leading orders-0 with its whole ISR (3 of 3) whose own URP gauge says 5."""

    target = "127.0.0.1:9999"
    connected = True

    def read(self) -> ReadResult:
        hosted = HostedPartitions(["orders"], array("i", [0]), array("i", [0]), array("q", [3]), array("q", [3]))
        return ReadResult([gauge(URP, 5)], broker=BrokerReadings("1", "2.2.1", hosted))

    def close(self):
        pass


def collector(tmp_path, directory) -> Collector:
    settings = SidecarSettings(poll_interval_seconds=15, archive=ArchiveSettings(str(directory)),
                               recompute=RecomputeSettings("kafka-3.7", "all", min_isr_default=2))
    return Collector(lambda cfg: Broker22(), parse_config(RULES), settings, clock=Clock(1_795_000_000.0))


def test_the_archive_keeps_what_the_broker_served_and_the_rules_serve_the_recompute(tmp_path):
    c = collector(tmp_path, tmp_path / "archive")
    assert c.poll_once()
    c._archive.close()
    polls = list(read_archive([tmp_path / "archive"], rejects := Rejects()))
    assert rejects.total == 0 and len(polls) == 1
    state = list(states_at(iter(polls), [1_795_000_000.0]))[0][1]
    assert state.leaves == {(URP, "Value"): 5}  # the broker's own value
    assert state.counts == {("orders", 0): (3, 3)} and state.version == "2.2.1" and state.broker == "1"
    assert state.min_isr == {"orders": (2, "configured_default")}
    # while /metrics serves the recomputed 0 (a full ISR is not under-replicated)
    text = b"".join(c.response(TEXT, False)[1]).decode()
    assert "kafka_server_ReplicaManager_UnderReplicatedPartitions 0.0" in text, text


def test_a_failing_archive_never_fails_the_poll(tmp_path):
    (tmp_path / "archive").write_text("a file where the directory should be")
    c = collector(tmp_path, tmp_path / "archive")
    assert c.poll_once() and c.poll_once()
    c._archive.close()
    assert c.ready and c.last_error is None
    failed = c.metrics.registry.get_sample_value("kafka_jmx_sidecar_archive_polls_total", {"outcome": "failed"})
    assert failed == 2
