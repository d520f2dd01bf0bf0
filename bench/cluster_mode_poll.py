"""Benchmark: one poll of the cluster-wide mode (`sidecar.mode: cluster`) against reading every
partition's gauges over JMX, on one simulated cluster of 40,000 partitions.

The cluster: mbeans/simulator/cluster.py's synthetic one (3 brokers, RF 3, leaders spread, min
ISR 2), served twice from the same model:
  - over JMX by the simulator, every broker on its own port; each hosts every partition (RF 3 on
    3 brokers) and serves its Partition MBeans, a partition's gauges set on its leader only, so
    reading every partition's gauges means reading every broker's;
  - over the Kafka Admin API by harness/admin_wire.py, in a process of its own (the simulator
    speaks JMX only; no real cluster of that size runs here): real TCP, requests and answers in
    Kafka's wire format, decoded by kafka-python as from a real broker. What it leaves out is a
    real broker's own work behind the answers.

Cluster-wide poll: the collector as `serve` runs it in that mode (ClusterSource.read: the Admin
API read, every partition judged under kafka-3.7, then rules/kafka-cluster.yml, then rendering
with gzip), after a warm-up poll; the median of `--polls` polls.

Baselines, measured in the same run and process:
  - the target's: jmx_exporter's way on every broker, plain JPype calls on a fresh connection
    to each: `queryNames` for the Partition gauges kafka-health.yml lists, then `getMBeanInfo`
    and `getAttributes` per MBean, one at a time. 600,000 MBeans take many minutes, so `--sample`
    names (a third on each broker) are timed, read in `--polls` rounds between the timed cluster
    polls so that both see the same load, the brokers taking turns by 50 MBeans so that a burst
    of load on the machine falls on all three alike; the mean time per MBean over all of them
    (the brokers are alike) is extrapolated linearly to every MBean; the output says so;
  - beside it, the sidecar's own JMX poll (its batched reads and the same rules) of broker 1
    alone: what the fastest JMX reader here costs for one broker of the three.

Target: the cluster-wide poll at least 50 times faster than jmx_exporter's way.

    python -m bench.cluster_mode_poll [--partitions N] [--polls N] [--sample N]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import sidecar_setup as setup
from bench.sidecar_health_poll import Baseline

TARGET_RATIO = 50.0
TURN = 50  # MBeans a broker's baseline reads before the next broker's takes its turn
CLUSTER_RULES = setup.REPO / "rules" / "kafka-cluster.yml"
# every partition's gauges as a broker serves them, named as rules/kafka-health.yml names them
PARTITION_RULES = r"""includeObjectNames:
  - "kafka.cluster:type=Partition,name=UnderReplicated,*"
  - "kafka.cluster:type=Partition,name=UnderMinIsr,*"
  - "kafka.cluster:type=Partition,name=AtMinIsr,*"
  - "kafka.cluster:type=Partition,name=InSyncReplicasCount,*"
  - "kafka.cluster:type=Partition,name=ReplicasCount,*"
lowercaseOutputName: true
rules:
  - pattern: kafka.cluster<type=Partition, name=(\w+), topic=(.+), partition=(\d+)><>Value
    name: kafka_cluster_partition_$1
    type: GAUGE
    labels:
      topic: "$2"
      partition: "$3"
"""


class ClusterPipeline(setup.Pipeline):
    """setup.Pipeline's polling and rendering, with the collector `serve` makes in the cluster-wide mode."""

    def __init__(self, config_path: Path):
        from kafka_jmx_sidecar.exporter.config.load import load
        from kafka_jmx_sidecar.exporter.commands.serve import make_collector
        from kafka_jmx_sidecar.exporter.poll.snapshot import OPENMETRICS

        loaded = load(str(config_path))
        self.config, self.settings = loaded.config, loaded.settings
        self.collector = make_collector(loaded, None)
        self.format = OPENMETRICS
        self.collector._requested = {OPENMETRICS: time.monotonic()}


def start_admin_wire(model: dict, directory: Path) -> tuple[subprocess.Popen, str]:
    path = directory / "cluster.json"
    path.write_text(json.dumps(model))
    proc = subprocess.Popen([sys.executable, "-m", "harness.admin_wire", str(path)], cwd=setup.REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    if line[:1] != ["bootstrap"]:
        proc.kill()
        raise RuntimeError(f"harness/admin_wire.py did not start: {line}")
    return proc, line[1]


def main() -> int:
    from kafka_jmx_sidecar.mbeans.simulator import cluster as clusters

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--polls", type=int, default=5, help="steady polls timed after the warm-up poll")
    ap.add_argument("--sample", type=int, default=5000, help="baseline MBeans timed (then extrapolated)")
    args = ap.parse_args()

    print(f"machine: {setup.machine()}")
    setup.start_jvm(None)
    model = clusters.synthetic(args.partitions)
    directory = Path(tempfile.mkdtemp(prefix="cluster-mode-bench-"))
    from kafka_jmx_sidecar.mbeans.simulator import Simulator

    t0 = time.monotonic()
    sim = Simulator.start(model, serve="all")
    print(f"simulator: {args.partitions:,} partitions, brokers {sorted(sim.urls)} each on its own JMX port, ready "
          f"in {time.monotonic() - t0:.1f} s", flush=True)
    wire, bootstrap = start_admin_wire(clusters.normalize(model), directory)
    try:
        print(f"Admin API: harness/admin_wire.py at {bootstrap} (one port per broker), answering from the same model",
              flush=True)
        cluster_config = directory / "cluster.yml"
        cluster_config.write_text(f"{CLUSTER_RULES.read_text()}\nsidecar:\n  mode: cluster\n  recompute:\n"
                                  f"    semantics: kafka-3.7\n  admin:\n    bootstrapServers: {bootstrap}\n")
        cluster = ClusterPipeline(cluster_config)
        t0 = time.perf_counter()
        warm = cluster.poll()
        judged = cluster.source.outcome.partitions
        print(f"cluster-wide warm-up poll: {time.perf_counter() - t0:.2f} s, {judged:,} partitions judged, "
              f"{warm.series:,} series", flush=True)
        if judged != args.partitions:
            raise RuntimeError(f"the Admin API read {judged:,} partitions of {args.partitions:,}")

        rules = directory / "partition-rules.yml"
        rules.write_text(PARTITION_RULES)
        (directory / "jmx").mkdir()
        jmx = setup.Pipeline(setup.write_config(sim.urls[1], rules, directory=str(directory / "jmx")))
        t0 = time.perf_counter()
        jmx_warm = jmx.poll()
        print(f"sidecar JMX warm-up poll: {time.perf_counter() - t0:.2f} s, {jmx_warm.mbeans:,} MBeans", flush=True)
        patterns = [p.text for p in jmx.config.include_object_names]
        brokers = sorted(b for b in sim.urls if b in model["brokers"])
        print(f"baseline: listing {len(patterns)} patterns on brokers {brokers}; then {args.polls} rounds of one "
              f"cluster-wide poll, one sidecar JMX poll of broker 1 and {args.sample // args.polls:,} sampled MBeans "
              f"read jmx_exporter's way ...", flush=True)
        baselines = [Baseline(sim.urls[b], patterns, args.sample // len(brokers), seed=b) for b in brokers]
        polls, jmx_polls = [], []
        for _ in range(args.polls):
            polls.append(cluster.poll())
            jmx_polls.append(jmx.poll())
            for baseline in baselines:
                baseline.round_end = min(len(baseline.sample), baseline.done + -(-len(baseline.sample) // args.polls))
            while any(b.done < b.round_end for b in baselines):
                for baseline in baselines:
                    baseline.run(min(TURN, baseline.round_end - baseline.done))
        cluster.close()
        jmx.close()
        bases = [b.close() for b in baselines]
    finally:
        wire.stdin.close()
        wire.wait(timeout=30)
        sim.stop()

    mid, jmx_mid = setup.median_poll(polls), setup.median_poll(jmx_polls)
    print()
    print(f"cluster: {args.partitions:,} partitions on 3 brokers (RF 3); judged under kafka-3.7")
    print(f"cluster-wide poll (Admin API + judging + {CLUSTER_RULES.name} + render): "
          f"{setup.spread([p.seconds for p in polls])}")
    ph = mid.phases
    print("  median poll: " + ", ".join(f"{k} {v:.3f} s" for k, v in ph.items())
          + f"; {mid.series:,} series, {mid.round_trips} Admin requests, body {mid.body_bytes / 2**20:.1f} MiB, "
          f"gzip {mid.gzip_bytes / 2**20:.2f} MiB")
    timed = sum(b["per_mbean"] * b["sample"] for b in bases)
    sampled, names = sum(b["sample"] for b in bases), sum(b["names"] for b in bases)
    per_mbean = timed / sampled
    total = sum(b["listing"] for b in bases) + per_mbean * names
    extrapolated = sampled < names
    print(f"baseline, jmx_exporter's way on every broker (plain JPype, 1 connection each, getMBeanInfo + "
          f"getAttributes per MBean): {total:.1f} s{' (EXTRAPOLATED)' if extrapolated else ''}")
    for broker, base in zip(brokers, bases):
        how = (f"{base['sample']:,} of {base['names']:,} MBeans timed (random sample), extrapolated linearly"
               if base["sample"] < base["names"] else f"all {base['names']:,} MBeans timed")
        print(f"  broker {broker}: listing {base['listing']:.2f} s; {base['names']:,} MBeans, "
              f"{base['per_mbean'] * 1e3:.3f} ms each on average; {how}; {base['round_trips']:,} RMI round trips")
    print(f"  every broker: listings {sum(b['listing'] for b in bases):.2f} s + {names:,} x {per_mbean * 1e3:.3f} ms "
          f"(the mean over the {sampled:,} MBeans timed) = {total:.1f} s")
    print(f"the sidecar's own JMX poll of the same MBeans on broker 1 alone: {setup.spread([p.seconds for p in jmx_polls])}"
          f" ({jmx_mid.mbeans:,} MBeans, {jmx_mid.round_trips} RMI round trips)")
    ratio = total / mid.seconds
    ok = ratio >= TARGET_RATIO
    print()
    print(f"ratio: jmx_exporter's way on every broker / cluster-wide poll = {total:.1f} s / {mid.seconds:.3f} s = "
          f"{ratio:.1f}x (target >= {TARGET_RATIO:.0f}x: {setup.verdict(ok)}); one broker's alone "
          f"{(bases[0]['listing'] + per_mbean * bases[0]['names']) / mid.seconds:.1f}x")
    print(f"beside it: the sidecar's own JMX poll of broker 1 / cluster-wide poll = {jmx_mid.seconds:.3f} s / "
          f"{mid.seconds:.3f} s = {jmx_mid.seconds / mid.seconds:.1f}x (one broker of {len(brokers)})")
    print("Admin API side: simulated (harness/admin_wire.py answering from the simulator's cluster model over TCP), "
          "not a real broker")
    print(f"machine at the end: {setup.machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
