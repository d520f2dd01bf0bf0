"""`kafka-jmx-sidecar demo`: the broker simulator and the sidecar together, playing a scenario.

The simulated broker 1 poses as an old Kafka (2.2 by default: no AtMinIsr gauges, no
ReassigningPartitions, and a reassignment counted as under-replicated) and the sidecar next to it
recomputes under `kafka-3.7` (`sidecar.recompute`, mode `outdated`, the topics' min ISR from the
configuration). At each step it prints what the sidecar's /metrics endpoint now shows for the
health MBeans, beside what the `health` formulas (mbeans.recompute) say a Kafka 3.7+ broker would
report for the same partition states (the two must agree), and what the old broker itself says.

With no Admin API in the demo, the reassignment is not known to the sidecar: it falls back, as
documented, to judging the partition as not moving (so it shows as under-replicated and not
reassigning), and the expected values are worked out the same way.
"""
from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from importlib import resources

from prometheus_client.parser import text_string_to_metric_families

from kafka_jmx_sidecar.mbeans.catalog import default_metadata_mode
from kafka_jmx_sidecar.mbeans.health import KAFKA_3_7
from kafka_jmx_sidecar.mbeans.recompute import cluster_values

POLL_SECONDS = 1.0
DEMO_VERSION = "2.2"
SEMANTICS = KAFKA_3_7
# (column, metric on the endpoint under the default rules, recompute key)
COLUMNS = (
    ("URP", "kafka_server_replicamanager_underreplicatedpartitions", "UnderReplicatedPartitions"),
    ("UnderMinIsr", "kafka_server_replicamanager_underminisrpartitioncount", "UnderMinIsrPartitionCount"),
    ("AtMinIsr", "kafka_server_replicamanager_atminisrpartitioncount", "AtMinIsrPartitionCount"),
    ("Reassigning", "kafka_server_replicamanager_reassigningpartitions", "ReassigningPartitions"),
    ("Offline", "kafka_controller_kafkacontroller_offlinepartitionscount", "OfflinePartitionsCount"),
)
BYTES_OUT = "kafka_server_brokertopicmetrics_reassignmentbytesout_total"


def endpoint_values(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    values = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.labels:
                values[s.name] = s.value
    return values


def expected_values(sim, broker: int, version: str) -> dict[str, int]:
    """What the sidecar should show next to `broker` of release `version`, recomputing under
    SEMANTICS without knowing reassignments: the ReplicaManager gauges a 3.7+ broker would report
    for the states with the reassignments left out, and the controller's own values."""
    states = sim.partition_states()
    live, controllers = sim.live_brokers(), sim.cluster()["controllers"]
    metadata = default_metadata_mode(version)
    unknown = [s._replace(adding_replicas=(), removing_replicas=()) for s in states]
    recomputed = cluster_values(unknown, version="4.1", profile=SEMANTICS, live_brokers=live, metadata=metadata,
                                controllers=controllers)
    own = cluster_values(states, version=version, live_brokers=live, controllers=controllers)
    b, o = recomputed.brokers.get(broker), own.brokers.get(broker)
    out = dict(b.replica_manager) if b else {}
    if o and o.controller:
        out.update(o.controller)
    return out


def own_values(sim, broker: int, version: str) -> dict[str, int]:
    """What the old broker itself reports (its release's gauges and formulas)."""
    cv = cluster_values(sim.partition_states(), version=version, live_brokers=sim.live_brokers(),
                        controllers=sim.cluster()["controllers"])
    b = cv.brokers.get(broker)
    return dict(b.replica_manager) if b else {}


def _scenario(version: str):
    """The demo's scenario, its cluster as broker 1 of release `version` can hold it, and the
    topics' min ISR."""
    from kafka_jmx_sidecar.mbeans.simulator import scenario

    scenario_file = resources.files("kafka_jmx_sidecar.exporter.commands").joinpath("demo-scenario.yml")
    with resources.as_file(scenario_file) as path:
        play = scenario.load(str(path))
    cluster = dict(play.cluster)
    if default_metadata_mode(version) == "zookeeper":
        cluster.pop("controllers", None)  # the scenario's KRaft controller: a ZooKeeper release has none
    min_isr = {t["name"]: t.get("config", {}).get("min.insync.replicas", 1) for t in cluster["topics"]}
    return play, cluster, min_isr


def _write_config(sim, min_isr: dict, directory: str) -> str:
    """The sidecar's config file (in `directory`): the simulator's broker 1, the recompute under
    SEMANTICS, the shipped health rules."""
    endpoint = re.search(r"rmi://([^/]+)/jmxrmi", sim.url).group(1)
    rules = resources.files("kafka_jmx_sidecar.rules").joinpath("kafka-health.yml").read_text()
    config_path = os.path.join(directory, "sidecar.yml")
    recompute = (f"sidecar:\n  recompute:\n    semantics: {SEMANTICS.name}\n    mode: outdated\n"
                 f"    minInsyncReplicas:\n      topics: {{{', '.join(f'{t}: {m}' for t, m in min_isr.items())}}}\n")
    with open(config_path, "w") as f:
        f.write(f"hostPort: {endpoint}\n{recompute}{rules}")
    return config_path


def _start_sidecar(config_path: str, listen_port: int):
    """The sidecar's collector and its HTTP server, started (the poll loop is the caller's)."""
    from kafka_jmx_sidecar.exporter.poll.collector import Collector
    from kafka_jmx_sidecar.exporter.http.server import MetricsServer
    from kafka_jmx_sidecar.exporter.source.broker import JmxSource
    from kafka_jmx_sidecar.exporter.config.load import broker_settings
    from kafka_jmx_sidecar.exporter.rule_engine.config import load_config
    from kafka_jmx_sidecar.exporter.config.sidecar import sidecar_settings
    from kafka_jmx_sidecar.exporter.http.web_config import WebConfig

    config = load_config(config_path)
    settings = sidecar_settings(config, {"poll_interval_seconds": POLL_SECONDS,
                                         "listen_address": f"127.0.0.1:{listen_port}"})
    collector = Collector(lambda c: JmxSource(c, broker_settings(c, settings)), config, settings, config_path=config_path)
    server = MetricsServer("127.0.0.1", listen_port, collector, WebConfig())
    server.start()
    return collector, server


def _show_step(step, collector, sim, url: str, version: str, stop: threading.Event, out) -> int:
    """Print the row of a scenario step once a poll shows it; the number of disagreements."""
    applied = time.time()
    # the first poll that started after the step shows it
    while collector.snapshot.taken_at < applied + POLL_SECONDS and not stop.is_set():
        time.sleep(0.05)
    if stop.is_set():  # interrupted: no poll shows this step
        return 0
    shown = endpoint_values(url)
    want = expected_values(sim, 1, version)
    cells = []
    mismatches = 0
    for col, metric, key in COLUMNS:
        have = shown.get(metric)
        exp = want.get(key)
        ok = have is not None and exp is not None and int(have) == exp
        mismatches += not ok
        cells.append(f"{'-' if have is None else int(have):>5}/{'-' if exp is None else exp:<4}{' ' if ok else '!'}")
    note = (step.note or step.op)[:58]
    own = own_values(sim, 1, version)
    itself = "/".join(str(own[k]) if k in own else "-" for _, _, k in COLUMNS[:3])
    print(f"{step.at:>3.0f}s  {note:<58} " + " ".join(f"{c:>11}" for c in cells)
          + f" {int(shown.get(BYTES_OUT, 0)):>12,}  {itself:>14}", file=out, flush=True)
    return mismatches


def run(keep_serving: bool = False, listen_port: int = 0, out=sys.stdout, kafka_version: str = DEMO_VERSION) -> int:
    from kafka_jmx_sidecar.mbeans.simulator import Simulator, scenario

    version = kafka_version
    play, cluster, min_isr = _scenario(version)
    print(f"starting the broker simulator (brokers 1-3, broker 1 posing as Kafka {version}) ...", file=out,
          flush=True)
    stop = threading.Event()
    with Simulator.start(cluster, kafka_version=version, broker=1, clock="realtime") as sim, \
            tempfile.TemporaryDirectory(prefix="sidecar-demo-") as work:
        collector, server = _start_sidecar(_write_config(sim, min_isr, work), listen_port)
        poller = threading.Thread(target=collector.run, args=(stop,), daemon=True)
        poller.start()
        url = f"http://127.0.0.1:{server.port}/metrics"
        print(f"simulator JMX: {sim.url}\nsidecar:       {url}  (rules/kafka-health.yml, next to broker 1)\n"
              f"recompute:     semantics {SEMANTICS.name}, mode outdated (broker 1 is Kafka {version}; no Admin API:"
              f" reassignments unknown)\n", file=out, flush=True)
        header = f"{'t':>4}  {'step':<58} " + " ".join(f"{c:>11}" for c, _, _ in COLUMNS) + \
            f" {'ReassignOut':>12}  {version + ' itself':>14}"
        print(header, file=out)
        mismatches = 0

        def on_step(step) -> None:
            nonlocal mismatches
            mismatches += _show_step(step, collector, sim, url, version, stop, out)

        print(f"(each cell: endpoint/recompute under {SEMANTICS.name}; '!' marks a disagreement; the last column: "
              f"URP/UnderMinIsr/AtMinIsr as Kafka {version} computes them itself, '-' where it has no such gauge)\n",
              file=out)
        # Ctrl-C sets `stop` rather than raising KeyboardInterrupt: raised inside a py4j call to the
        # simulator, the interrupt turns into py4j's own AttributeError (its connection cleanup)
        interrupted = threading.Event()
        previous = signal.signal(signal.SIGINT, lambda *_: (interrupted.set(), stop.set()))
        try:
            scenario.run(sim, play, realtime=True, on_step=on_step, stop=stop.is_set)
            if not interrupted.is_set():
                print(f"\n{'all steps agree' if not mismatches else f'{mismatches} disagreement(s)'}; "
                      f"{'Ctrl-C stops everything' if keep_serving else 'done'}", file=out, flush=True)
            while keep_serving and not stop.is_set():
                stop.wait(1)
            if interrupted.is_set():
                print("\nstopping", file=out)
        finally:
            signal.signal(signal.SIGINT, previous)
            stop.set()
            poller.join(10)
            server.stop()
    return 0 if interrupted.is_set() or not mismatches else 1
