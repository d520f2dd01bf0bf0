"""The rules on a real Kafka 4.4 broker against the same rules on a real Kafka 4.1 broker.

The 4.4 and 4.1 scenes (tests/real/scenes.py: each release's 3-broker cluster through one story,
every MBean of broker 1 read whole, in the kafka.* domains and in org.apache.kafka.*) are shared
with the simulator-vs-broker test, so this module costs no broker of its own. Where both releases
serve an MBean attribute (the same ObjectName once what differs between any two clusters is
normalised: the log directory, the fetcher's leader address, the peers' client software version),
the shipped rules (rules/kafka-health.yml) and Strimzi's give the same series, through the
sidecar's rule engine: the same families (TYPE) and series (names, label names and values; values
not, they are two clusters'). The MBeans and attributes only one release serves are Kafka 4.2 to
4.4's additions and the chance of which requests a client sent to broker 1 (DIFFERENCES, each named;
docs/recompute.md lists them).

The MBean KIP-1100 renamed that every broker serves comes out under one name on both:
AssignmentsManager's QueuedReplicaToDirAssignments is org.apache.kafka.server's on 4.1, and both
that and kafka.server's on 4.4 (one gauge); the shipped rules and Strimzi's give one series,
kafka_server_assignmentsmanager_queuedreplicatodirassignments (with 1.x naming, 4.4's two MBeans
are two series told apart by `_objectname`, as jmx_exporter 1.x makes them).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.base.model import Attribute, MBean, ObjectName
from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine, parse_config
from harness.mbean_dump import Bean
from tests.real.scenes import POSED

REPO = Path(__file__).resolve().parents[2]
RULES = {"shipped": REPO / "rules" / "kafka-health.yml",
         "strimzi": REPO.parent / "shared" / "reference" / "rules" / "strimzi-kafka-metrics.yml"}
KIP_1100 = "kafka_server_assignmentsmanager_queuedreplicatodirassignments"
ASSIGNMENTS = ("kafka.server:type=AssignmentsManager,name=QueuedReplicaToDirAssignments",
               "org.apache.kafka.server:type=AssignmentsManager,name=QueuedReplicaToDirAssignments")
# What differs between any two clusters (the brokers' log directories, the fetcher's leader
# address) and the release's own version (the peers' client software), in ObjectNames and in the
# labels made of them.
NORMALISED = [(re.compile(r"/[^\"',]*/broker-\d+/data"), "<dir>"),
              (re.compile(r"(brokerHost=)[^,]*,(brokerPort=)\d+"), r"\1<host>,\2<port>"),
              (re.compile(r"127\.0\.0\.1:\d+"), "<host>:<port>"),
              (re.compile(r"(clientSoftwareVersion\W{1,4})\d+\.\d+\.\d+"), r"\1<version>")]

# Every difference between the two brokers' MBeans, each with its reason: (pattern, reason).
# Anything else only one of them serves fails the test.
DIFFERENCES = {
    "4.4": [
        (r"kafka\.controller:type=ControllerEventManager,name=AvgIdleRatio|"
         r"kafka\.server:type=MetadataLoader,name=AvgIdleRatio|"
         r"kafka\.server:type=KafkaRequestHandlerPool,name=(Broker|Controller)RequestHandlerAvgIdlePercent",
         "idle ratios (4.2)"),
        (r"kafka\.log:type=LogManager,name=(CordonedLogDirectoryCount|LogDirectoryCordoned,logDirectory=.*)",
         "cordoned log directories (KIP-1066, 4.3)"),
        (r"kafka\.log:type=Log,name=RetentionSizeInPercent,topic=.*", "retention size in percent (KIP-1257, 4.3)"),
        (r"kafka\.server:type=MetadataLoader,name=FinalizedLevel,featureName=\w+|"
         r"kafka\.server:type=node-metrics,feature-name=[\w-]+", "feature levels (4.2)"),
        (r"kafka\.server:type=AssignmentsManager,name=QueuedReplicaToDirAssignments", "KIP-1100's new name (4.2)"),
        (r"kafka\.server:type=(KafkaServer|ControllerServer),name=linux-disk-(rchar|wchar|syscr|syscw|"
         r"cancelled-write-bytes)", "more of /proc's I/O counters (4.4)"),
        (r"kafka\.server:type=app-info,client-id=\d+", "the node's app-info as a Kafka metric too (4.4)"),
        (r"kafka\.server:type=(DelayedProduceMetrics|DelayedRemoteListOffsetsMetrics),name=ExpiresPerSec",
         "purgatory expiry meters"),
        (r"kafka\.server:type=ShareGroupDLQManager-channel-metrics|"
         r"kafka\.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=Renew|"
         r"kafka\.server:type=group-coordinator-metrics,state=\w+", "share and group coordinators"),
        (r"kafka\.network:type=RequestMetrics,name=\w+,request=(UnregisterController|"
         r"StreamsGroupTopologyDescriptionUpdate)", "new request types (4.4)"),
    ],
    "4.1": [],
}
# Request metrics a client's choice of broker creates (tests/real/test_simulator_vs_broker.py's
# BY_CHANCE), and request versions that moved: on either side.
BY_CHANCE = r"kafka\.network:type=RequestMetrics,name=(RequestsPerSec|ErrorsPerSec),request=\w+,(version|error)=\w+"


def normaliser(scene):
    """ObjectName or label text -> the same with NORMALISED's parts and the scene's broker ports
    (a fetcher's leader, alone in a label of Strimzi's generic rules) replaced."""
    ports = re.compile(r"\b(%s)\b" % "|".join(str(p) for p in scene.ports))

    def normalise(text: str) -> str:
        for pattern, replacement in NORMALISED:
            text = pattern.sub(replacement, text)
        return ports.sub("<port>", text)
    return normalise


def _attributes(bean: Bean) -> dict[str, Attribute]:
    out = {}
    for attr, (declared, runtime, value, text) in bean.attrs.items():
        if runtime is not None:  # a null reads as no value, as jmx_exporter skips it
            out[attr] = Attribute(attr, text == "true" if runtime == "java.lang.Boolean" else value, "", declared)
    return out


class Release:
    """Broker 1's MBeans of a scene, every domain, by normalised ObjectName: (ObjectName, Bean)."""

    def __init__(self, scene):
        self.normalise = normaliser(scene)
        both = {**scene.real[POSED], **scene.real_other[POSED]}
        self.beans = {self.normalise(n): (n, b) for n, b in both.items()}

    def series(self, found) -> tuple[set, dict]:
        """Samples as normalised (name, labels) keys, and each family's type."""
        return ({(s.name, self.normalise(repr(s.labels))) for s in found}, {s.name: s.type for s in found})


def samples(rules: str, beans, naming: str = "0.x"):
    engine = RuleEngine(parse_config(RULES[rules].read_text(encoding="utf-8")), naming=naming)
    return engine.samples([MBean(ObjectName.parse(name), bean.cls, tuple(attrs.values()))
                           for name, bean, attrs in beans])


@pytest.fixture(scope="module")
def releases(scene_4_4, scene_4_1) -> dict[str, Release]:
    return {"4.4": Release(scene_4_4), "4.1": Release(scene_4_1)}


def _common(mine: dict, other: dict) -> list:
    """(ObjectName, Bean, attributes) of the MBeans both serve, with the attributes both have."""
    out = []
    for key, (name, bean) in mine.items():
        if key in other:
            theirs = _attributes(other[key][1])
            out.append((name, bean, {a: v for a, v in _attributes(bean).items() if a in theirs}))
    return out


@pytest.mark.parametrize("rules", ["shipped", "strimzi"])
def test_the_same_series_where_the_mbeans_are_the_same(rules, releases):
    seen = {r: releases[r].series(samples(rules, _common(releases[r].beans, releases[o].beans)))
            for r, o in (("4.4", "4.1"), ("4.1", "4.4"))}
    (series_44, types_44), (series_41, types_41) = seen["4.4"], seen["4.1"]
    assert sorted(series_44 - series_41) == [], "only 4.4's"
    assert sorted(series_41 - series_44) == [], "only 4.1's"
    assert types_44 == types_41
    assert len(series_44) > (20 if rules == "shipped" else 1000)  # not a vacuous comparison


@pytest.mark.parametrize("release", ["4.4", "4.1"])
def test_every_mbean_only_one_release_serves_is_named(release, releases):
    other = releases["4.1" if release == "4.4" else "4.4"].beans
    only = sorted(k for k in releases[release].beans if k not in other and not re.fullmatch(BY_CHANCE, k))
    named = [p for p, _reason in DIFFERENCES[release]]
    assert [k for k in only if not any(re.fullmatch(p, k) for p in named)] == []
    assert [p for p in named if not any(re.fullmatch(p, k) for k in only)] == [], "a difference no longer seen"


def test_kip_1100_one_series_on_either_release(releases):
    for release, named in releases.items():
        beans = named.beans
        served = [n for n in ASSIGNMENTS if n in beans]
        assert served == (list(ASSIGNMENTS) if release == "4.4" else [ASSIGNMENTS[1]]), release
        everything = [(name, bean, _attributes(bean)) for name, bean in beans.values()]
        for rules in RULES:
            found = [s for s in samples(rules, everything) if s.name == KIP_1100]
            assert [(s.labels, s.type) for s in found] == [((), "gauge")], (release, rules)
    four_four = [(name, bean, _attributes(bean)) for name, bean in releases["4.4"].beans.values()]
    one_x = [s for s in samples("shipped", four_four, naming="1.x") if s.name == KIP_1100]
    assert sorted(dict(s.labels)["_objectname"].split("<")[0] for s in one_x) == sorted(
        n.split(":")[0] for n in ASSIGNMENTS)
    assert len({s.value for s in one_x}) == 1  # the same gauge
