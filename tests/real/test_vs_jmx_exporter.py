"""The sidecar against the real jmx_exporter, over the same real Kafka 4.4 broker at the same moment.

For Strimzi's, Confluent's, the shipped and no rule file, in both naming modes (0.x against
jmx_exporter 0.20.0; 1.x against the newest 1.x collector, 1.6.0, and the newest packaged 1.x
server, 1.0.1) and both formats (text 0.0.4 and OpenMetrics), `kafka-jmx-sidecar scrape` prints the
same families (TYPE, HELP, UNIT), the same series with the same label text, in the same order, as
the standalone jmx_exporter. Values are compared where they do not move: each reading of ours is
taken between two of jmx_exporter's, and a series whose value jmx_exporter printed alike before and
after ours must have that value in ours (a mismatch is read again once, because a histogram's
percentiles drift and come back). `serve` is checked the same way, plus jmx_exporter's self metrics.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from harness import compare
from harness.sidecar import Serve, config_text, naming_block, scrape_file

REPO = Path(__file__).resolve().parents[2]
REFERENCE_RULES = REPO.parent / "shared" / "reference" / "rules"
RULE_FILES = {
    "strimzi": REFERENCE_RULES / "strimzi-kafka-metrics.yml",
    "confluent": REFERENCE_RULES / "confluent-kafka-broker.yml",
    "shipped": REPO / "rules" / "kafka-health.yml",
    "none": None,
}
# jmx_exporter 1.x's metricCustomizers (exporter/rule_engine/customizers.py): labels from attribute
# values and extra metrics, on MBeans read whole (app-info, a ReplicaManager gauge) and on the
# per-partition gauges the sidecar otherwise reads as columns; with rules and with default naming.
# 0.20.0 does not know the key (nor does the sidecar's 0.x naming); 1.0.1 predates it.
CUSTOMIZERS = r"""lowercaseOutputLabelNames: true
metricCustomizers:
  - mbeanFilter: {domain: kafka.server, properties: {type: app-info}}
    attributesAsLabels: [Version, CommitId, NoSuchAttribute]
    extraMetrics:
      - {name: broker_up, value: true, description: "the broker answers JMX"}
  - mbeanFilter: {domain: kafka.server, properties: {type: ReplicaManager, name: PartitionCount}}
    extraMetrics:
      - {name: partition_budget, value: 4000}
  - mbeanFilter: {domain: kafka.cluster, properties: {type: Partition, name: UnderReplicated}}
    attributesAsLabels: [Value]
    extraMetrics:
      - {name: checked, value: 1.5, description: per partition}
"""
CUSTOMIZED_RULES = r"""rules:
  - pattern: 'kafka.server<type=app-info, id=(\d+)><>(StartTimeMs|broker_up)'
    name: kafka_app_info_$2
    labels: {id: "$1"}
  - pattern: 'kafka.server<type=ReplicaManager, name=(\w+)><>(Value|partition_budget)'
    name: kafka_replicamanager_$1_$2
  - pattern: 'kafka.cluster<type=Partition, name=(\w+), topic=(.+), partition=(\d+)><>(Value|checked)'
    name: kafka_partition_$1_$4
    labels: {topic: "$2", partition: "$3"}
"""
TEXTS = {"customizers": CUSTOMIZERS + CUSTOMIZED_RULES, "customizers-default": CUSTOMIZERS}
# (our naming mode, the jmx_exporter release that defines it)
ANCHORS = [("0.x", "0.20.0"), ("1.x", "1.6.0"), ("1.x", "1.0.1")]
SCRAPES = [(rules, naming, release) for rules in [*RULE_FILES, *TEXTS] for naming, release in ANCHORS
           if not (rules in TEXTS and release == "1.0.1")]
# Self metrics: jmx_exporter's own (compared by family below), the sidecar's own, and the
# sidecar process's (process_*, as every Prometheus exporter exposes of itself).
SELF_PREFIXES = ("jmx_", "kafka_jmx_sidecar_", "process_")
# Values the scrape itself changes: the broker's open files include the scraper's JMX sockets
# (jmx_exporter opens two per scrape, the registry's and the connector's; the sidecar one), so
# the count depends on who asks and when. The JDK's CPU loads are measured over the time since the
# previous call of any reader of that JVM (its /proc/stat counters are kept between calls), so
# each reader's value depends on who asked last: two readings close together give 0.0, ours
# taken after a pause can give 1.0 on a loaded machine.
OBSERVED_BY_THE_SCRAPER = {f"java_lang_OperatingSystem_{name}".lower()
                           for name in ("OpenFileDescriptorCount", "SystemCpuLoad", "ProcessCpuLoad", "CpuLoad")}
# A network processor's IdlePercent is its io-wait ratio over a sampled window, clamped to 1.0 by
# the broker: an idle processor reads 1.0 before and after, and 0.9993 in between when a client's
# request passed through it (CI run: processor 2). Equal at the clamp is not unmoved. Matched
# without underscores: Strimzi's rules name it kafka_network_processor_idle_percent. Kafka 4.2+'s
# AvgIdleRatio gauges (the metadata loader's and the controller's event queue thread) are the same
# kind: 1.0 from jmx_exporter before and after, 0.9993 from ours when the loader's thread worked
# in between (CI run, 4.4).
CLAMPED_RATIOS = ("idlepercent", "idleratio")


def _rules(name: str) -> str:
    """The rule file's text; Confluent's asks jmx_exporter to wait 120 s before its first scrape,
    set to 0 for both sides here."""
    if name in TEXTS:
        return TEXTS[name]
    path = RULE_FILES[name]
    return re.sub(r"(?m)^startDelaySeconds: \d+$", "startDelaySeconds: 0", path.read_text(encoding="utf-8")) if path else ""


@pytest.fixture(scope="module")
def broker(real_kafka):
    """Broker 1 of a 3-broker Kafka 4.4 cluster holding partitions in every health state a steady
    cluster can show: fully replicated, at min ISR (RF 1, min ISR 2: the effective min ISR is 1),
    and with per-topic traffic (which creates the per-topic BrokerTopicMetrics MBeans)."""
    cluster = real_kafka("4.4", brokers=3)
    existing = cluster.describe()
    if "diff-orders" not in existing:
        cluster.create_topics({"diff-orders": dict(partitions=3, replication_factor=3, min_isr=2),
                               "diff-single": dict(assignment=[[1], [1]], min_isr=2)})
        cluster.produce("diff-orders", records=3000)
        cluster.produce("diff-single", records=500)
    return cluster


class Readings:
    """jmx_exporter's reading, ours, jmx_exporter's again: for one rule file, anchor and format."""

    def __init__(self, theirs_before: str, ours: str, theirs_after: str):
        self.before = compare.parse(theirs_before).without(*SELF_PREFIXES)
        self.ours = compare.parse(ours)
        self.after = compare.parse(theirs_after).without(*SELF_PREFIXES)

    def mismatched_values(self) -> set:
        return {k for k in compare.unmoved(self.before, self.after)
                if k in self.ours.series and self.ours.series[k] != self.before.series[k]
                and k[0].lower() not in OBSERVED_BY_THE_SCRAPER and not self._another_collection(k)
                and not any(ratio in (k[0] + k[1]).lower().replace("_", "") for ratio in CLAMPED_RATIOS)}

    def _another_collection(self, key) -> bool:
        """A collector's LastGcInfo describes its latest collection, and each scrape makes the
        broker collect: the duration jmx_exporter printed before and after ours can be equal for
        two different collections (2 ms and 2 ms) while ours saw a third (3 ms). Its `id` says
        which collection a reading saw; the values count as unmoved only if all three saw the same."""
        name, _labels = key
        head, found, _tail = name.partition("LastGcInfo_")
        if not found:
            return False
        ids = [k for k in self.before.series if k[0] == head + "LastGcInfo_id"]
        return not ids or any(len({r.series.get(k) for r in (self.before, self.ours, self.after)}) != 1
                              for k in ids)


def _displaced_allowed(theirs: compare.Exposition, naming: str) -> int:
    """0.x lists a family's series in the order MBeans were visited. MBeans sharing a hash bucket
    come in the broker repository's order, which the sidecar models from the names it sees
    (exporter/rule_engine/order.py); a domain whose MBeans were removed and re-added keeps a larger
    table than its count says, and a few of those land elsewhere: at most 1 in 500. 1.x sorts."""
    return len(theirs.series) // 500 if naming == "0.x" else 0


def _read(exporter, config: Path, openmetrics: bool) -> Readings:
    return Readings(exporter.scrape(openmetrics), scrape_file(config, openmetrics), exporter.scrape(openmetrics))


@pytest.fixture(scope="module")
def configs(broker, tmp_path_factory):
    d = tmp_path_factory.mktemp("configs")

    def write(rules: str, naming: str) -> tuple[Path, Path]:
        theirs = d / f"{rules}-theirs.yml"
        ours = d / f"{rules}-{naming}-ours.yml"
        theirs.write_text(config_text(broker.jmx_host_port(1), _rules(rules)))
        ours.write_text(config_text(broker.jmx_host_port(1), _rules(rules), naming_block(naming)))
        return theirs, ours
    return write


@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
@pytest.mark.parametrize("rules,naming,release", SCRAPES, ids=[f"{r}-{n}-vs-{v}" for r, n, v in SCRAPES])
def test_scrape_prints_what_jmx_exporter_prints(rules, naming, release, openmetrics, configs, shared_jmx_exporter):
    theirs_config, ours_config = configs(rules, naming)
    exporter = shared_jmx_exporter(release, theirs_config)
    first = _read(exporter, ours_config, openmetrics)
    ours, theirs = compare.settled(first.ours, first.before, first.after)
    shape = compare.differences(ours, theirs, displaced_allowed=_displaced_allowed(theirs, naming))
    assert shape == [], f"{len(shape)} difference(s) from jmx_exporter {release}:\n" + "\n".join(shape[:40])
    suspects = first.mismatched_values()
    if suspects:  # read once more: only a mismatch that repeats on an unmoved value counts
        again = _read(exporter, ours_config, openmetrics)
        suspects &= again.mismatched_values()
        shown = [f"{compare._show(k)}: ours {again.ours.series[k]} theirs {again.before.series[k]}"
                 for k in sorted(suspects)]
        assert not suspects, f"values that did not move differ from jmx_exporter {release}:\n" + "\n".join(shown)
    assert len(first.before.series) > (5 if rules in ("shipped", "customizers") else 1000)
    if rules.startswith("customizers") and naming == "1.x":  # the customizers did something
        assert 'version="4.4.0"' in first.before.text and "broker_up" in first.before.text
        assert 'value="0"' in first.before.text


def _self_families(text: str, prefix: str = "jmx_") -> dict:
    exp = compare.parse(text)
    return {name: fam for name, fam in exp.families.items() if name.startswith(prefix)}


# Confluent's file has 37 `cache: true` rules, which jmx_scrape_cached_beans counts.
@pytest.mark.parametrize("rules,naming,release", [("strimzi", "0.x", "0.20.0"), ("confluent", "0.x", "0.20.0"),
                                                  ("strimzi", "1.x", "1.6.0"), ("confluent", "1.x", "1.6.0")],
                         ids=["strimzi-0.x-vs-0.20.0", "confluent-0.x-vs-0.20.0", "strimzi-1.x-vs-1.6.0",
                              "confluent-1.x-vs-1.6.0"])
def test_serve_serves_what_jmx_exporter_serves(rules, naming, release, broker, configs, jmx_exporter, tmp_path):
    theirs_config, _ = configs(rules, naming)
    ours_config = tmp_path / "serve.yml"
    ours_config.write_text(config_text(broker.jmx_host_port(1), _rules(rules),
                                       naming_block(naming) + "  pollIntervalSeconds: 1\n"))
    exporter = jmx_exporter(release, theirs_config)
    with Serve(ours_config) as sidecar:
        # past the first scrape and poll on both sides: 1.x counts jmx_scrape_cached_beans from
        # the second on (the first finds its cache empty)
        exporter.scrape()
        sidecar.wait_for_poll_after(time.time())
        for openmetrics in (False, True):
            theirs_text = exporter.scrape(openmetrics)
            ours_text = sidecar.get(openmetrics=openmetrics)
            theirs_after = compare.parse(exporter.scrape(openmetrics)).without(*SELF_PREFIXES)
            ours, theirs = compare.settled(compare.parse(ours_text).without(*SELF_PREFIXES),
                                           compare.parse(theirs_text).without(*SELF_PREFIXES), theirs_after)
            # the snapshot served was polled up to a poll interval ago: compare what is there, and
            # that nothing is missing or extra
            shape = compare.differences(ours, theirs, displaced_allowed=_displaced_allowed(theirs, naming))
            assert shape == [], "\n".join(shape[:40])
            # jmx_exporter's self metrics: the same families, TYPE, HELP and UNIT; the same series
            # and values but for the build info's label values, the counters' creation times and
            # the scrape's duration
            theirs_self, ours_self = compare.parse(theirs_text), compare.parse(ours_text)
            assert _self_families(ours_text) == _self_families(theirs_text)
            for (name, labels), value in theirs_self.series.items():
                if not name.startswith("jmx_"):
                    continue
                if name.startswith("jmx_exporter_build_info"):
                    ours_build = [k for k in ours_self.series if k[0] == name]
                    assert [re.findall(r'(\w+)="', k[1]) for k in ours_build] == [re.findall(r'(\w+)="', labels)]
                elif not name.endswith("_created") and name != "jmx_scrape_duration_seconds":
                    assert ours_self.series.get((name, labels)) == value, (name, labels, value)
