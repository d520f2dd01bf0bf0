"""exporter/source/cluster.py and the cluster-wide mode (`sidecar.mode: cluster`): an Admin API view
in, the series rules/kafka-cluster.yml names out, with the self metrics saying what the Admin API
could not tell; its settings and check-config. No Kafka: the AdminView is made here as
exporter/source/admin makes it (tests/real/test_cluster_vs_brokers.py runs real brokers).

Every expected line below is worked by hand (kafka-3.7 unless said; the comments show how)."""
from __future__ import annotations

import logging
import re
from io import StringIO
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.source.admin.errors import AdminError
from kafka_jmx_sidecar.exporter.source.admin.settings import AdminSettings
from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Broker, Cluster, Input, Partition, Reason, TopicConfig, Unknown
from kafka_jmx_sidecar.exporter.source.cluster import ClusterSource
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings
from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.exporter.commands.serve import check_config
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from kafka_jmx_sidecar.exporter.poll.snapshot import TEXT, Snapshot, assemble

REPO = Path(__file__).resolve().parents[2]
CLUSTER_RULES = (REPO / "rules" / "kafka-cluster.yml").read_text()


def partition(topic, index, leader, replicas, isr, adding=(), removing=()):
    return Partition(topic, index, leader, tuple(replicas), tuple(isr), (), tuple(adding), tuple(removing))


# Brokers 1, 2, 3 live; broker 4 is down (named only in a replica list).
PARTITIONS = (
    partition("ex1", 0, 2, [1, 2, 3], [2, 3]),          # min ISR 2: 3 - 2 > 0 URP; 2 == 2 at min
    partition("ex2", 0, None, [4], [4]),                # no leader: unavailable, on no broker gauge
    partition("ex2", 1, 1, [1, 2], [1, 2]),             # min ISR 1: healthy
    partition("moving", 0, 1, [1, 2, 3], [1, 2], adding=[3], removing=[2]),  # KIP-352: rf 3 - 1 = 2, 2 in sync
    partition("nomin", 0, 3, [3], [3]),                 # min ISR unknown: the configured default 2;
                                                        # effective min(2, 1) = 1 == 1 at min
    partition("ph", 0, 1, [1, -1], [1]),                # a placeholder: 2 - 1 > 0 URP; min(1, 2) = 1 at min
)
TOPICS = {"ex1": TopicConfig(2), "ex2": TopicConfig(1), "moving": TopicConfig(1), "nomin": TopicConfig(None),
          "ph": TopicConfig(1)}
UNKNOWN_MIN_ISR = Unknown(Input.MIN_ISR, Reason.UNAUTHORIZED, "topic nomin: DescribeConfigs denied", topic="nomin")


def view(partitions=PARTITIONS, unknowns=(UNKNOWN_MIN_ISR,)):
    if any(u.input is Input.REASSIGNMENTS for u in unknowns):  # as source/admin/convert reads them then
        partitions = [partition(p.topic, p.partition, p.leader, p.replicas, p.isr) for p in partitions]
    cluster = Cluster("kRaFtClUsTeR", 1, tuple(Broker(b, "127.0.0.1", 9092) for b in (1, 2, 3)), "DescribeCluster")
    return AdminView(cluster, tuple(partitions), dict(TOPICS), {}, (), tuple(unknowns))


class FakeAdmin:
    target = "kafka-0:9092"

    def __init__(self, *views):
        self.views = list(views)
        self.closed = 0
        self.requests = {"DescribeCluster": 1, "DescribeTopicPartitions": 1, "ListPartitionReassignments": 1,
                         "DescribeConfigs": 4}

    @property
    def connected(self):
        return True

    def read(self):
        v = self.views.pop(0) if len(self.views) > 1 else self.views[0]
        if isinstance(v, Exception):
            raise v
        return v

    def close(self):
        self.closed += 1


def settings(semantics="kafka-3.7", default=2):
    return SidecarSettings(mode="cluster", admin=AdminSettings(("kafka-0:9092",)),
                           recompute=RecomputeSettings(semantics, "outdated", default, {}))


def collector(admin, rules=CLUSTER_RULES, semantics="kafka-3.7"):
    s = settings(semantics)
    return Collector(lambda cfg: ClusterSource(cfg, s, admin=admin), parse_config(rules), s)


def poll(c) -> tuple[list[str], str]:
    assert c.poll_once(), c.last_error
    body = b"".join(assemble(c.snapshot, TEXT, b"", gzip_wanted=False)[1]).decode()
    own = c.metrics.render(TEXT, c.snapshot.taken_at, False).decode()
    return [line for line in body.splitlines() if not line.startswith("#")], own


def series(lines, name):
    return sorted(line for line in lines if line.startswith(name + "{") or line.startswith(name + " "))


def test_every_partition_with_its_leader_and_the_totals():
    lines, _ = poll(collector(FakeAdmin(view())))
    assert series(lines, "kafka_cluster_partition_underreplicated") == [
        'kafka_cluster_partition_underreplicated{leader="1",partition="0",topic="moving",} 0.0',
        'kafka_cluster_partition_underreplicated{leader="1",partition="0",topic="ph",} 1.0',
        'kafka_cluster_partition_underreplicated{leader="1",partition="1",topic="ex2",} 0.0',
        'kafka_cluster_partition_underreplicated{leader="2",partition="0",topic="ex1",} 1.0',
        'kafka_cluster_partition_underreplicated{leader="3",partition="0",topic="nomin",} 0.0',
        'kafka_cluster_partition_underreplicated{leader="none",partition="0",topic="ex2",} 0.0',
    ]
    assert series(lines, "kafka_cluster_partition_atminisr") == [
        'kafka_cluster_partition_atminisr{leader="1",partition="0",topic="moving",} 0.0',  # 2 != min(1, 3)
        'kafka_cluster_partition_atminisr{leader="1",partition="0",topic="ph",} 1.0',
        'kafka_cluster_partition_atminisr{leader="1",partition="1",topic="ex2",} 0.0',
        'kafka_cluster_partition_atminisr{leader="2",partition="0",topic="ex1",} 1.0',
        'kafka_cluster_partition_atminisr{leader="3",partition="0",topic="nomin",} 1.0',
        'kafka_cluster_partition_atminisr{leader="none",partition="0",topic="ex2",} 0.0',
    ]
    assert all(line.endswith(" 0.0") for line in series(lines, "kafka_cluster_partition_underminisr"))
    assert len(series(lines, "kafka_cluster_partition_underminisr")) == 6
    assert series(lines, "kafka_cluster_partition_unavailable") == [
        f'kafka_cluster_partition_unavailable{{leader="{leader}",partition="{p}",topic="{t}",}} {v}'
        for leader, p, t, v in (("1", 0, "moving", "0.0"), ("1", 0, "ph", "0.0"), ("1", 1, "ex2", "0.0"),
                                ("2", 0, "ex1", "0.0"), ("3", 0, "nomin", "0.0"), ("none", 0, "ex2", "1.0"))]
    # the replica counts the leader serves (2.5+: without adding replicas: moving 3 - 1 = 2)
    assert 'kafka_cluster_partition_replicascount{leader="1",partition="0",topic="moving",} 2.0' in lines
    assert 'kafka_cluster_partition_insyncreplicascount{leader="2",partition="0",topic="ex1",} 2.0' in lines
    # placeholders: only where there are any
    assert series(lines, "kafka_cluster_partition_placeholderreplicas") == [
        'kafka_cluster_partition_placeholderreplicas{leader="1",partition="0",topic="ph",} 1.0']
    # URP: ex1-0, ph-0; at min: ex1-0, nomin-0, ph-0; reassigning: moving-0; led: all but ex2-0
    assert series(lines, "kafka_server_replicamanager_underreplicatedpartitions") == [
        "kafka_server_replicamanager_underreplicatedpartitions 2.0"]
    assert "kafka_server_replicamanager_underminisrpartitioncount 0.0" in lines
    assert "kafka_server_replicamanager_atminisrpartitioncount 3.0" in lines
    assert "kafka_server_replicamanager_reassigningpartitions 1.0" in lines
    assert "kafka_server_replicamanager_leadercount 5.0" in lines
    assert "kafka_controller_kafkacontroller_offlinepartitionscount 1.0" in lines


def test_the_self_metrics_say_what_the_admin_api_could_not_tell(caplog):
    caplog.set_level(logging.WARNING, logger="kafka_jmx_sidecar.cluster")
    no_reassignments = Unknown(Input.REASSIGNMENTS, Reason.UNSUPPORTED, "broker 2.3 has no ListPartitionReassignments")
    c = collector(FakeAdmin(view(), view(unknowns=(UNKNOWN_MIN_ISR, no_reassignments)), view(unknowns=())))
    _, own = poll(c)
    assert 'kafka_jmx_sidecar_cluster_info{cluster_id="kRaFtClUsTeR",semantics="kafka-3.7"} 1.0' in own
    assert "kafka_jmx_sidecar_cluster_partitions 6.0" in own
    assert "kafka_jmx_sidecar_cluster_live_brokers 3.0" in own
    assert 'kafka_jmx_sidecar_admin_unknown{input="min_isr",reason="unauthorized"} 1.0' in own
    # nomin's min ISR: the configured default (2), no topic override configured
    assert 'kafka_jmx_sidecar_cluster_input_fallbacks{fallback="configured_default",input="min_isr"} 1.0' in own
    assert "jmx_scrape_error 0.0" in own and "kafka_jmx_sidecar_rmi_round_trips 7.0" in own

    # reassignments unknown: every partition judged without them; moving-0 then counts its adding
    # replica (3 - 2 > 0): under-replicated, as kafka-topics.sh counts it
    lines, own = poll(c)
    assert 'kafka_jmx_sidecar_cluster_input_fallbacks{fallback="admin_api_unsupported",input="reassignments"} 6.0' \
        in own
    assert 'kafka_jmx_sidecar_admin_unknown{input="reassignments",reason="unsupported"} 1.0' in own
    assert 'kafka_cluster_partition_underreplicated{leader="1",partition="0",topic="moving",} 1.0' in lines
    assert "kafka_server_replicamanager_reassigningpartitions 0.0" in lines
    assert "kafka_server_replicamanager_underreplicatedpartitions 3.0" in lines

    # known again: listed at 0
    _, own = poll(c)
    assert 'kafka_jmx_sidecar_admin_unknown{input="min_isr",reason="unauthorized"} 0.0' in own
    assert 'kafka_jmx_sidecar_cluster_input_fallbacks{fallback="admin_api_unsupported",input="reassignments"} 0.0' \
        in own
    messages = [r.getMessage() for r in caplog.records]
    assert sum("reassignments are not known (admin_api_unsupported)" in m for m in messages) == 1
    assert sum("no min.insync.replicas from the Admin API for topic nomin; using 2 (configured_default)" in m
               for m in messages) == 1


def test_topic_command_judges_leaderless_partitions_too():
    lines, _ = poll(collector(FakeAdmin(view()), semantics="topic-command"))
    # ex2-0: no leader, ISR [4] of 1, min ISR 1: 1 - 1 = 0 not URP; no leader: under min ISR;
    # 1 == 1 at min ISR; unavailable. kafka-topics.sh has no ReplicasCount gauge.
    assert 'kafka_cluster_partition_underminisr{leader="none",partition="0",topic="ex2",} 1.0' in lines
    assert 'kafka_cluster_partition_atminisr{leader="none",partition="0",topic="ex2",} 1.0' in lines
    assert not series(lines, "kafka_cluster_partition_replicascount")
    # at min: ex1-0, ex2-0 (1 == 1), nomin-0 (topic-command compares the raw min ISR: 1 != 2, so
    # not it; 1 < 2: under min ISR), ph-0; under min: ex2-0, nomin-0
    assert "kafka_server_replicamanager_atminisrpartitioncount 3.0" in lines
    assert "kafka_server_replicamanager_underminisrpartitioncount 2.0" in lines


def test_the_filters_apply_to_the_cluster_mbeans():
    rules = ("includeObjectNames:\n- 'kafka.cluster:type=Partition,name=UnderReplicated,*'\n"
             "- 'kafka.controller:*'\nexcludeObjectNames:\n- 'kafka.cluster:type=Partition,leader=none,*'\n"
             + CLUSTER_RULES)
    lines, _ = poll(collector(FakeAdmin(view()), rules=rules))
    names = {re.match(r"(\w+)", line).group(1) for line in lines}
    assert names == {"kafka_cluster_partition_underreplicated", "kafka_controller_kafkacontroller_offlinepartitionscount"}
    assert not any('leader="none"' in line for line in lines) and len(lines) == 6


def test_member_lists_are_kept_while_they_do_not_change():
    admin = FakeAdmin(view())
    source = ClusterSource(parse_config(CLUSTER_RULES), settings(), admin=admin)
    first, second = source.read(), source.read()
    assert all(a.topic is b.topic and a.partition is b.partition for a, b in zip(first.tables, second.tables))
    # ranks: the totals, then one run per table (gauge, then leader, `none` last)
    assert list(first.ranks) == list(range(6))
    keys = [dict(t.keys) for t in first.tables]
    assert [(k["name"], k["leader"]) for k in keys[:4]] == [("UnderReplicated", "1"), ("UnderReplicated", "2"),
                                                           ("UnderReplicated", "3"), ("UnderReplicated", "none")]
    starts = [t.rank[0] for t in first.tables]
    assert starts == sorted(starts) and starts[0] == 6


def test_a_failed_read_fails_the_poll_and_an_outdated_client_is_made_anew():
    failed = Unknown(Input.REASSIGNMENTS, Reason.ERROR, "UnknownBrokerIdError")
    admin = FakeAdmin(AdminError("Kafka Admin API at kafka-0:9092: no broker answered"), view(unknowns=(failed,)))
    c = collector(admin)
    assert not c.poll_once() and "no broker answered" in c.last_error
    assert c.poll_once() and admin.closed == 1


def test_the_same_rules_name_a_brokers_partition_mbeans_alike():
    # rules/kafka-cluster.yml gives the cluster's series the names rules/kafka-health.yml gives a broker's
    from kafka_jmx_sidecar.exporter.base.model import Attribute, MBean, ObjectName

    def names(rules, keys):
        mb = MBean(ObjectName("kafka.cluster", keys), "c", (Attribute("Value", 1, "", "java.lang.Object"),))
        families = RuleEngine(parse_config(rules)).series([mb])
        snap = Snapshot.render_families(families, 1.0, 0.0, [TEXT], "0.x")
        text = b"".join(assemble(snap, TEXT, b"", gzip_wanted=False)[1]).decode()
        return [line for line in text.splitlines() if not line.startswith("#")]

    health = (REPO / "rules" / "kafka-health.yml").read_text()
    base = (("type", "Partition"), ("name", "AtMinIsr"))
    assert names(health, base + (("topic", "orders"), ("partition", "3"))) == [
        'kafka_cluster_partition_atminisr{topic="orders",partition="3",} 1.0']
    assert names(CLUSTER_RULES, base + (("leader", "2"), ("topic", "orders"), ("partition", "3"))) == [
        'kafka_cluster_partition_atminisr{leader="2",partition="3",topic="orders",} 1.0']


# --- settings and check-config ----------------------------------------------------------------------

CLUSTER_FILE = "sidecar:\n  mode: cluster\n  admin:\n    bootstrapServers: kafka-0:9092\n" + CLUSTER_RULES


def check(tmp_path, text):
    path = tmp_path / "cluster.yml"
    path.write_text(text)
    out, err = StringIO(), StringIO()
    code = check_config(str(path), out, err)
    return code, out.getvalue().replace(str(path), "F"), err.getvalue().replace(str(path), "F")


def test_check_config_accepts_the_cluster_mode_without_a_jmx_target(tmp_path):
    code, out, err = check(tmp_path, CLUSTER_FILE)
    assert (code, err) == (0, "")
    assert out == ("F: OK: 2 rule(s), the whole cluster from the Admin API at kafka-0:9092 (sidecar.mode: cluster), "
                   "listening on 0.0.0.0:9404\n")
    loaded = load(str(tmp_path / "cluster.yml"))
    assert loaded.settings.cluster and loaded.settings.recompute is None


@pytest.mark.parametrize("text, expected", [
    # a JMX target it would never read
    ("hostPort: 127.0.0.1:9999\n" + CLUSTER_FILE,
     "F:1: hostPort: the cluster-wide mode (sidecar.mode: cluster) reads no JMX: it asks the Admin API "
     "(sidecar.admin) for every partition; remove hostPort, or remove sidecar.mode to run next to that broker\n"),
    # no Admin API to read
    ("sidecar:\n  mode: cluster\n" + CLUSTER_RULES,
     "F:2: sidecar.mode: the cluster-wide mode reads every partition from the Kafka Admin API, and sidecar.admin "
     "is not set; add sidecar.admin with bootstrapServers (the brokers' listeners)\n"),
    ("sidecar:\n  mode: clusters\n  admin:\n    bootstrapServers: k:9092\n",
     "F:2: sidecar.mode: must be \"broker\" (next to one broker, over JMX) or \"cluster\" (every partition of the "
     "cluster, from the Admin API alone), got 'clusters'; set mode to \"broker\" (next to one broker, over JMX) or "
     "\"cluster\" (every partition of the cluster, from the Admin API alone)\n"),
    # recompute.mode keeps or replaces a broker's values: nothing to keep here
    (CLUSTER_FILE.replace("  admin:", "  recompute:\n    mode: all\n  admin:"),
     "F:4: sidecar.recompute.mode: has no meaning in the cluster-wide mode (sidecar.mode: cluster computes every "
     "value from the Admin API; nothing is read from a broker to keep or replace); remove recompute.mode\n"),
    # topic-command is a broker sidecar's mistake, and says where it belongs
    ("hostPort: 127.0.0.1:9999\nsidecar:\n  recompute:\n    semantics: topic-command\n",
     "F:4: sidecar.recompute.semantics: 'topic-command' is not a broker-gauge profile (topic-command describes "
     "kafka-topics.sh, not a broker's gauges); use one of kafka-3.7, kafka-4.1, kafka-2.5, legacy (or topic-command with "
     "sidecar.mode: cluster)\n"),
])
def test_check_config_refuses_with_file_line_key_and_fix(tmp_path, text, expected):
    code, out, err = check(tmp_path, text)
    assert (code, out, err) == (2, "", expected)


def test_topic_command_is_a_choice_in_the_cluster_mode(tmp_path):
    code, _, err = check(tmp_path, CLUSTER_FILE.replace("  admin:", "  recompute:\n    semantics: topic-command\n"
                                                                   "  admin:"))
    assert (code, err) == (0, "")


def test_a_reload_cannot_change_the_mode(tmp_path, caplog):
    path = tmp_path / "cluster.yml"
    path.write_text(CLUSTER_FILE)
    loaded = load(str(path))
    c = Collector(lambda cfg: ClusterSource(cfg, loaded.settings, admin=FakeAdmin(view())), loaded.config,
                  loaded.settings, config_path=str(path))
    import os
    path.write_text("hostPort: 127.0.0.1:9999\n" + CLUSTER_RULES)
    os.utime(path, (1, 1))
    with caplog.at_level(logging.ERROR, logger="kafka_jmx_sidecar.collector"):
        assert c.poll_once()
    assert c.metrics.reload_failure.value == 1
    assert any("sidecar.mode: changed from cluster to broker; restart the sidecar to change its mode" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_a_config_error_is_a_config_error():
    with pytest.raises(ConfigError):
        from kafka_jmx_sidecar.exporter.config.sidecar import require_source

        require_source(parse_config("sidecar:\n  mode: cluster\nhostPort: h:1\n"))


# --- eligible leader replicas (KIP-966) under the kafka-4.1 profile -------------------------------

def elr_view(known=True, level=1):
    """Brokers 1, 3 live (2 down), min ISR 2, as a real 4.x cluster with ELR on shows them."""
    def p(topic, leader, replicas, isr, elr, last=()):
        return Partition(topic, 0, leader, tuple(replicas), tuple(isr), (), (), (),
                         tuple(elr) if known else None, tuple(last) if known else None)
    partitions = (
        p("guarded", 1, [1, 2, 3], [1], [2]),        # 1 < 2 and ELR [2]: under min ISR, a clean candidate left
        p("bare", 3, [3, 2], [3], []),                # 1 < 2, ELR empty (cleared): under min ISR, none left
        p("waiting", None, [2, 4], [], [2, 4]),       # leaderless, ELR [2, 4]: clean once 2 or 4 is back
        p("lost", None, [4], [], [], [4]),            # leaderless, ISR and ELR empty: unclean or 4 back
        p("fine", 1, [1, 3], [1, 3], []),
    )
    cluster = Cluster("kRaFt", 1, tuple(Broker(b, "127.0.0.1", 9092) for b in (1, 3)), "DescribeCluster")
    unknowns = () if known else (Unknown(Input.ELIGIBLE_LEADERS, Reason.UNSUPPORTED,
                                         "broker 3.6: no DescribeTopicPartitions (Kafka 3.8+, KIP-966)"),)
    return AdminView(cluster, partitions, {t: TopicConfig(2) for t in ("guarded", "bare", "waiting", "lost", "fine")},
                     {}, (), unknowns, elr_level=level)


def test_elr_figures_per_partition_and_summed(caplog):
    c = collector(FakeAdmin(elr_view()), semantics="kafka-4.1")
    lines, own = poll(c)
    assert series(lines, "kafka_cluster_partition_elrunderminisr") == [
        'kafka_cluster_partition_elrunderminisr{leader="1",partition="0",topic="fine",} 0.0',
        'kafka_cluster_partition_elrunderminisr{leader="1",partition="0",topic="guarded",} 1.0',
        'kafka_cluster_partition_elrunderminisr{leader="3",partition="0",topic="bare",} 0.0',
        'kafka_cluster_partition_elrunderminisr{leader="none",partition="0",topic="lost",} 0.0',
        'kafka_cluster_partition_elrunderminisr{leader="none",partition="0",topic="waiting",} 0.0',
    ]
    assert 'kafka_cluster_partition_elrofflineclean{leader="none",partition="0",topic="waiting",} 1.0' in lines
    assert 'kafka_cluster_partition_elrofflineclean{leader="none",partition="0",topic="lost",} 0.0' in lines
    assert 'kafka_cluster_partition_elrofflineunclean{leader="none",partition="0",topic="lost",} 1.0' in lines
    assert 'kafka_cluster_partition_elrofflineunclean{leader="none",partition="0",topic="waiting",} 0.0' in lines
    assert "kafka_cluster_elr_underminisrpartitioncount 1.0" in lines
    assert "kafka_cluster_elr_offlinecleanpartitioncount 1.0" in lines
    assert "kafka_cluster_elr_offlineuncleanpartitioncount 1.0" in lines
    # the kafka-3.7 gauges are unchanged: both under min ISR, both leaderless offline
    assert "kafka_server_replicamanager_underminisrpartitioncount 2.0" in lines
    assert "kafka_controller_kafkacontroller_offlinepartitionscount 2.0" in lines
    assert 'kafka_jmx_sidecar_cluster_feature_level{feature="eligible.leader.replicas.version"} 1.0' in own
    # kafka-3.7 has no ELR figures: none published
    lines, _ = poll(collector(FakeAdmin(elr_view()), semantics="kafka-3.7"))
    assert not [line for line in lines if "elr" in line]


def test_elr_not_known_is_absent_not_zero_with_a_metric_and_one_log_line(caplog):
    caplog.set_level(logging.WARNING, logger="kafka_jmx_sidecar.cluster")
    c = collector(FakeAdmin(elr_view(known=False, level=None)), semantics="kafka-4.1")
    for _ in range(2):
        lines, own = poll(c)
        assert not [line for line in lines if "elr" in line]
        assert 'kafka_jmx_sidecar_admin_unknown{input="eligible_leader_replicas",reason="unsupported"} 1.0' in own
        assert "kafka_jmx_sidecar_cluster_feature_level{" not in own
    said = [r.getMessage() for r in caplog.records if "eligible leader replicas are not known" in r.getMessage()]
    assert said == ["cluster: the eligible leader replicas are not known (broker 3.6: no DescribeTopicPartitions "
                    "(Kafka 3.8+, KIP-966)): the kafka-4.1 profile's ELR figures are left out, not published as 0"]


def test_elr_on_or_off_is_followed_at_every_poll_and_decides_the_min_isr_default():
    """The feature level is read at every poll (no restart); with ELR on, a topic whose own
    min.insync.replicas is not known takes the cluster-level value (DescribeConfigs source
    DYNAMIC_DEFAULT_BROKER_CONFIG), the one the controller judges ELR by, even where a broker
    still reports a static value of its own."""
    from kafka_jmx_sidecar.exporter.source.admin.fallback import MinIsrResolver
    from kafka_jmx_sidecar.exporter.source.admin.view import BrokerConfig

    def v(level):
        base = elr_view(level=level)
        brokers = {1: BrokerConfig(2, min_isr_source="DYNAMIC_DEFAULT_BROKER_CONFIG"),
                   3: BrokerConfig(3, min_isr_source="STATIC_BROKER_CONFIG")}
        return AdminView(base.cluster, base.partitions, {**base.topics, "fine": TopicConfig(None)}, brokers,
                         (), base.unknowns, elr_level=level)
    assert MinIsrResolver(v(1)).resolve("fine") == (2, "admin_cluster_default")
    assert MinIsrResolver(v(0)).resolve("fine") == (1, "kafka_default")  # brokers disagree, nothing configured
    c = collector(FakeAdmin(v(1), v(0)), semantics="kafka-4.1")
    levels = []
    for _ in range(2):
        _, own = poll(c)
        levels += re.findall(r'kafka_jmx_sidecar_cluster_feature_level\{feature="eligible.leader.replicas.version"\} (\S+)',
                             own)
    assert levels == ["1.0", "0.0"]
