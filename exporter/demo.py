"""`kafka-jmx-sidecar demo`: the broker simulator and the sidecar together, playing a scenario.

At each step it prints what the sidecar's /metrics endpoint now shows for the health MBeans of
the broker it sits next to, and beside it what the `health` formulas (mbeans.recompute) say for
the same partition states: the two must agree.
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

from mbeans.recompute import cluster_values

POLL_SECONDS = 1.0
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
    """The recompute of the same states: what broker `broker` should report."""
    cv = cluster_values(sim.partition_states(), version=version, live_brokers=sim.live_brokers(),
                        controllers=sim.cluster()["controllers"])
    b = cv.brokers.get(broker)
    out = dict(b.replica_manager) if b else {}
    if b and b.controller:
        out.update(b.controller)
    return out


def run(keep_serving: bool = False, listen_port: int = 0, out=sys.stdout) -> int:
    from exporter.collector import Collector
    from exporter.http import MetricsServer
    from exporter.jmx_source import JmxSource
    from exporter.rule_engine.config import parse_config
    from exporter.sidecar_settings import SidecarSettings
    from exporter.web_config import WebConfig
    from mbeans.simulator import Simulator, scenario

    version = "4.1"
    scenario_file = resources.files("exporter").joinpath("demo-scenario.yml")
    with resources.as_file(scenario_file) as path:
        play = scenario.load(str(path))
    print(f"starting the broker simulator (Kafka {version}, brokers 1-3) ...", file=out, flush=True)
    stop = threading.Event()
    with Simulator.start(play.cluster, kafka_version=version, broker=1, clock="realtime") as sim:
        endpoint = re.search(r"rmi://([^/]+)/jmxrmi", sim.url).group(1)
        rules = resources.files("rules").joinpath("kafka-health.yml").read_text()
        config_path = os.path.join(tempfile.mkdtemp(prefix="sidecar-demo-"), "sidecar.yml")
        with open(config_path, "w") as f:
            f.write(f"hostPort: {endpoint}\n{rules}")
        from exporter.rule_engine.config import load_config

        config = load_config(config_path)
        settings = SidecarSettings(poll_interval_seconds=POLL_SECONDS, listen_address=f"127.0.0.1:{listen_port}")
        collector = Collector(lambda c: JmxSource(c, settings), config, settings, config_path=config_path)
        server = MetricsServer("127.0.0.1", listen_port, collector, WebConfig())
        server.start()
        poller = threading.Thread(target=collector.run, args=(stop,), daemon=True)
        poller.start()
        url = f"http://127.0.0.1:{server.port}/metrics"
        print(f"simulator JMX: {sim.url}\nsidecar:       {url}  (rules/kafka-health.yml, next to broker 1)\n",
              file=out, flush=True)
        header = f"{'t':>4}  {'step':<58} " + " ".join(f"{c:>11}" for c, _, _ in COLUMNS) + f" {'ReassignOut':>12}"
        print(header, file=out)
        mismatches = 0

        def on_step(step) -> None:
            nonlocal mismatches
            applied = time.time()
            # the first poll that started after the step shows it
            while collector.snapshot.taken_at < applied + POLL_SECONDS and not stop.is_set():
                time.sleep(0.05)
            if stop.is_set():  # interrupted: no poll shows this step
                return
            shown = endpoint_values(url)
            want = expected_values(sim, 1, version)
            cells = []
            for col, metric, key in COLUMNS:
                have = shown.get(metric)
                exp = want.get(key)
                ok = have is not None and exp is not None and int(have) == exp
                mismatches += not ok
                cells.append(f"{'-' if have is None else int(have):>5}/{'-' if exp is None else exp:<4}{' ' if ok else '!'}")
            note = (step.note or step.op)[:58]
            print(f"{step.at:>3.0f}s  {note:<58} " + " ".join(f"{c:>11}" for c in cells)
                  + f" {int(shown.get(BYTES_OUT, 0)):>12,}", file=out, flush=True)

        print("(each cell: endpoint/recompute; '!' marks a disagreement)\n", file=out)
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
