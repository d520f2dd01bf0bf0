"""Benchmark: the recompute's share of a poll at 40,000 partitions (target: under 10%).

One simulated broker posing as Kafka 2.2 (no AtMinIsr, pre-KIP-352 URP: the recompute adds and
replaces the most there), the default health rules, and two collectors polling it in turns, as
`serve` polls (gc.freeze included, only OpenMetrics rendered):

  baseline   no recompute: the poll jmx_exporter's configuration alone asks for
  recompute  sidecar.recompute {semantics: kafka-3.7, mode: outdated, minInsyncReplicas.default: 2}

After a warm-up poll each (the listing, on its slow clock, is not part of a steady poll), the
median of `--polls` polls each. The recompute's share is its two phases (`recompute_inputs`:
reading the broker's release and counts beyond what the rules read, here nothing as the default
rules list the counts; `recompute`: judging the led partitions and merging the MBeans) over the
recompute collector's whole poll; the ratio of the two polls is printed beside it.

    python -m bench.recompute_share [--partitions N] [--polls N] [--kafka-version V]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from bench import sidecar_setup as setup

TARGET_SHARE = 0.10


def collector(config_path: Path, recompute: bool):
    from kafka_jmx_sidecar.exporter.poll.collector import Collector
    from kafka_jmx_sidecar.exporter.source.broker import JmxSource
    from kafka_jmx_sidecar.exporter.config.load import broker_settings
    from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings
    from kafka_jmx_sidecar.exporter.rule_engine.config import load_config
    from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
    from kafka_jmx_sidecar.exporter.poll.snapshot import OPENMETRICS

    config = load_config(str(config_path))
    settings = SidecarSettings(names_refresh_seconds=3600, recompute=RecomputeSettings(
        "kafka-3.7", "outdated", min_isr_default=2) if recompute else None)
    c = Collector(lambda cfg: JmxSource(cfg, broker_settings(cfg, settings)), config, settings, freeze_gc=True)
    c._requested = {OPENMETRICS: time.monotonic()}  # what Prometheus asks for
    return c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--polls", type=int, default=5)
    ap.add_argument("--kafka-version", default="2.2")
    args = ap.parse_args()
    print(f"machine: {setup.machine()}")
    setup.start_jvm(None)

    t0 = time.monotonic()
    sim = setup.start_simulator(args.partitions, kafka_version=args.kafka_version)
    print(f"simulator: {args.partitions:,} partitions posing as Kafka {args.kafka_version}, ready in "
          f"{time.monotonic() - t0:.1f} s", flush=True)
    try:
        path = setup.write_config(sim.url, setup.HEALTH_RULES)
        base, recomputing = collector(path, False), collector(path, True)
        for c in (base, recomputing):
            setup.timed_poll(c)  # the listing
        times = {"baseline": [], "recompute": []}
        shares, phases_seen = [], []
        for _ in range(args.polls):
            for name, c in (("baseline", base), ("recompute", recomputing)):
                seconds, phases = setup.timed_poll(c)
                times[name].append(seconds)
                if name == "recompute":
                    part = phases.get("recompute_inputs", 0.0) + phases.get("recompute", 0.0)
                    shares.append(part / seconds)
                    phases_seen.append(phases)
        outcome = recomputing._recompute.outcome
        mid = sorted(range(len(shares)), key=lambda i: shares[i])[len(shares) // 2]
        p = phases_seen[mid]
        print(f"recompute: {outcome.led:,} led partitions judged; families "
              + ", ".join(f"{f.rsplit('=', 1)[1]} {s}" for f, s in outcome.states.items()))
        print(f"baseline poll:  {setup.spread(times['baseline'])}")
        print(f"recompute poll: {setup.spread(times['recompute'])}; its phases (median-share poll): "
              + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in p.items()))
        share = statistics.median(shares)
        ratio = statistics.median(times["recompute"]) / statistics.median(times["baseline"])
        print(f"recompute share of the poll: median {share:.1%} (min {min(shares):.1%}, max {max(shares):.1%}); "
              f"target < {TARGET_SHARE:.0%}: {setup.verdict(share < TARGET_SHARE)}")
        print(f"poll with recompute / without: {ratio:.2f}x")
        print(f"machine at the end: {setup.machine()}")
        for c in (base, recomputing):
            c.close()
        return 0 if share < TARGET_SHARE else 1
    finally:
        sim.stop()


if __name__ == "__main__":
    sys.exit(main())
