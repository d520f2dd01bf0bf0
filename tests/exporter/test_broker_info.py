"""kafka_jmx_sidecar_broker_info: which broker a target is (app-info's id and Version, the ClusterId
gauge), read with the names whatever the rules include, served from the first poll that knows it and
kept while polls fail; the cluster-wide mode's kafka_jmx_sidecar_cluster_broker_info, one per live
broker. The JMX side runs against a real JVM (harness/JmxTarget.java); the simulator and a real
Kafka 4.1 broker serve it end to end (tests/e2e/test_dashboard_at_40k.py,
tests/real/test_dashboard_vs_broker.py)."""
from __future__ import annotations

import re

from harness.jmx_target import Target
from kafka_jmx_sidecar.exporter.config.load import broker_settings
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.poll.snapshot import TEXT
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.source.broker import JmxSource
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, ReadResult, SourceError
from tests.exporter.test_cluster_source import FakeAdmin, collector, poll, view
from tests.exporter.test_collector import URP, Clock, ScriptedSource, gauge

INFO = "kafka_jmx_sidecar_broker_info"
BROKER_CLUSTER_ID = "kafka.server:type=KafkaServer,name=ClusterId"
CONTROLLER_CLUSTER_ID = "kafka.server:type=ControllerServer,name=ClusterId"


def info_lines(text: str, name: str = INFO) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{")]


def test_the_identity_is_read_with_the_names_whatever_the_rules_include():
    """A JVM with no app-info MBean (as brokers before 0.9): no id nor release, and the reason
    for the recompute's log; the cluster id from ControllerServer's gauge (a KRaft controller-only
    node), KafkaServer's when both are there; read again only with the names."""
    clock = Clock(0.0)
    with Target() as target:
        config = parse_config(f'hostPort: {target.host_port}\n'
                              'includeObjectNames: ["kafka.server:type=ReplicaManager,*"]\n')
        source = JmxSource(config, broker_settings(config, SidecarSettings(names_refresh_seconds=60)), clock=clock)
        try:
            first = source.read().broker
            assert (first.broker_id, first.version, first.cluster_id) == (None, None, None)
            assert first.problems == ["the broker has no kafka.server:type=app-info,id=N MBean"]

            target.command(f"add {CONTROLLER_CLUSTER_ID} string c0ntr0ller")
            clock.t = 30.0  # before the names refresh: what was read with the names
            assert source.read().broker.cluster_id is None
            clock.t = 60.0
            assert source.read().broker.cluster_id == "c0ntr0ller"

            target.command(f"add {BROKER_CLUSTER_ID} string br0ker")
            clock.t = 120.0
            after = source.read().broker
            assert (after.broker_id, after.cluster_id, after.problems) == (None, "br0ker", first.problems)
            assert after.hosted is None and after.meters == {}  # neither recompute nor reassignment asked
        finally:
            source.close()
        fresh = JmxSource(config, broker_settings(config, SidecarSettings()))
        try:  # the health MBeans read before a first complete poll come with it too
            assert fresh.read_health().broker.cluster_id == "br0ker"
        finally:
            fresh.close()


def test_the_series_says_what_is_known_and_follows_the_last_poll():
    m = SelfMetrics()
    assert INFO not in m.render(TEXT, 0, False).decode()  # nothing read yet: no series, not an empty one
    m.record_broker(BrokerReadings("3", "4.1.0", cluster_id="DrB5golCTxqhD-vC6hjQ8A"))
    m.record_broker(BrokerReadings("3", None))  # another broker version's answer: the old series goes
    assert info_lines(m.render(TEXT, 0, False).decode()) == [
        f'{INFO}{{broker_id="3",broker_version="",cluster_id=""}} 1.0']


class IdentifiedSource(ScriptedSource):
    """The scripted source of test_collector.py, naming its broker as JmxSource does."""

    readings = BrokerReadings("2", "3.6.0", cluster_id="abc")

    def read(self) -> ReadResult:
        result = super().read()
        result.broker = self.readings
        return result

    def read_health(self) -> ReadResult:
        return ReadResult([gauge(URP, 0)], broker=self.readings)


def test_the_collector_serves_it_from_the_health_read_first_and_keeps_it_while_polls_fail():
    src = IdentifiedSource([[gauge(URP, 0)], SourceError("connection refused")])
    clock = Clock()
    c = Collector(lambda cfg: src, parse_config("{}"), SidecarSettings(withdraw_after_seconds=0), clock=clock)
    expected = [f'{INFO}{{broker_id="2",broker_version="3.6.0",cluster_id="abc"}} 1.0']
    assert c.poll_health_first() and c.partial
    assert info_lines(c.exposition(TEXT)[1].decode()) == expected
    assert c.poll_once()
    clock.t += 1
    assert not c.poll_once() and c.withdrawn()  # the broker's series are gone; it is still that broker
    assert info_lines(c.exposition(TEXT)[1].decode()) == expected


def test_the_cluster_mode_serves_one_per_live_broker_under_its_own_name():
    """Under another name than the broker's info: a join on `instance` with
    kafka_jmx_sidecar_broker_info stays one-to-one when a cluster-wide instance is scraped too."""
    c = collector(FakeAdmin(view()))
    _, own = poll(c)
    assert info_lines(own, "kafka_jmx_sidecar_cluster_broker_info") == [
        f'kafka_jmx_sidecar_cluster_broker_info{{broker_id="{b}",cluster_id="kRaFtClUsTeR"}} 1.0' for b in (1, 2, 3)]
    assert not re.search(rf"^{INFO}\b", own, re.M)
