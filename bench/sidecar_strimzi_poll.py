"""Benchmark: a steady sidecar poll with Strimzi's rules (the file unchanged, so every MBean of the
broker is read) against the RMI floor, on a simulated broker of 40,000 partitions.

Floor: (MBeans the poll covers) x (one getAttributes round trip) / connections: what reading each
MBean once costs with nothing else done, on the same machine and in the same run. The round trip
is timed on a random sample of the MBeans the poll reads with getAttributes, one call at a time on
one connection, both through plain JPype calls and through the client's compiled bulk reader; the
smaller (the stricter floor) is used. The sidecar covers part of the MBeans (Kafka's small-integer
partition gauges) with a few server-side queries instead of reads, so the floor of the MBeans it
actually reads one by one is printed too.

Targets: poll within 1.5x of the floor, and after the first poll rule matching (RuleEngine.series)
under 10% of the poll. Each connection count gets its own JmxSource (a listing and a first poll),
sharing the collector and its rule engine.

    python -m bench.sidecar_strimzi_poll [--partitions N] [--connections 1,2,4] [--polls N] [--rt-sample N]
"""
from __future__ import annotations

import argparse
import random
import shlex
import statistics
import sys
import time

from bench import sidecar_setup as setup

TARGET_FLOOR_RATIO = 1.5
TARGET_RULES_SHARE = 0.10


def round_trip(jmx_url: str, names: list, size: int, seed: int = 2) -> dict:
    """One getAttributes on one connection: plain JPype calls, and the client's bulk reader."""
    import jpype

    from kafka_jmx_sidecar.exporter.source.jmx import JmxClient, JmxSettings

    rng = random.Random(seed)
    sample = names if len(names) <= size else rng.sample(names, size)
    connector, mbsc = setup.plain_connection(jmx_url)
    ObjectName = jpype.JClass("javax.management.ObjectName")
    String = jpype.JClass("java.lang.String")
    try:
        plan = []
        for n in sample:  # what the poll reads of each: its readable attributes (MBeanInfo, untimed)
            on = ObjectName(str(n))
            attrs = [a.getName() for a in mbsc.getMBeanInfo(on).getAttributes() if a.isReadable()]
            plan.append((on, jpype.JArray(String)(attrs)))
        for on, attrs in plan[:200]:
            mbsc.getAttributes(on, attrs)
        calls = []
        for on, attrs in plan:
            t0 = time.perf_counter()
            mbsc.getAttributes(on, attrs)
            calls.append(time.perf_counter() - t0)
    finally:
        connector.close()
    with JmxClient(JmxSettings(jmx_url=jmx_url, connections=1)) as client:
        client.read(sample)  # MBeanInfo, plan
        t0 = time.perf_counter()
        client.read(sample)
        bulk = (time.perf_counter() - t0) / len(sample)
    plain = statistics.mean(calls)
    return {"sample": len(sample), "plain": plain, "plain_median": statistics.median(calls), "bulk": bulk,
            "rt": min(plain, bulk)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--connections", default="1,2,4", help="comma-separated connection counts to try")
    ap.add_argument("--polls", type=int, default=2, help="steady polls timed per connection count")
    ap.add_argument("--rt-sample", type=int, default=2000, help="MBeans timed for the round trip")
    ap.add_argument("--jvm-options", default=None,
                    help="options of this process's JVM (default: the sidecar's defaults, as serve starts it)")
    args = ap.parse_args()
    counts = [int(c) for c in args.connections.split(",")]

    print(f"machine: {setup.machine()}")
    options = setup.start_jvm(None if args.jvm_options is None else shlex.split(args.jvm_options))
    print(f"JVM options (sidecar and round-trip measurement): {options or 'the JVM defaults'}")
    sim = setup.start_simulator(args.partitions)
    runs = []
    try:
        config_path = setup.write_config(sim.url, setup.STRIMZI_RULES)
        pipe = None
        for conns in counts:
            if pipe is None:
                pipe = setup.Pipeline(config_path, connections=conns)
            else:  # a new source with more connections; the collector and its rule engine stay
                from kafka_jmx_sidecar.exporter.source.broker import JmxSource
                from kafka_jmx_sidecar.exporter.config.load import broker_settings
                from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings

                pipe.collector.source.close()
                pipe.settings = SidecarSettings(connections=conns, names_refresh_seconds=3600)
                pipe.collector.source = JmxSource(pipe.config, broker_settings(pipe.config, pipe.settings))
            t0 = time.perf_counter()
            warm = pipe.poll()
            print(f"{conns} connection(s): first poll {time.perf_counter() - t0:.1f} s (names listing "
                  f"{warm.phases['names']:.1f} s, rules {warm.phases['rules']:.1f} s), {warm.mbeans:,} MBeans",
                  flush=True)
            polls = [pipe.poll() for _ in range(args.polls)]
            for p in polls:
                print(f"  steady poll {p.seconds:.2f} s", flush=True)
            runs.append((conns, warm, polls))
        # the MBeans a poll reads with getAttributes: the names read whole, and the members of the
        # tabulated families read member by member (not queried)
        src = pipe.source
        rest = list(src._rest_texts) + [f.members.name(i) for f in src._families if f.max_value is None
                                        for i in range(len(f.members))]
        pipe.close()
        rt = round_trip(sim.url, rest, args.rt_sample)
    finally:
        sim.stop()

    print()
    print(f"broker: {args.partitions:,} partitions; rules: {setup.STRIMZI_RULES.name} (unchanged)")
    print(f"one getAttributes round trip, 1 connection, {rt['sample']:,} sampled MBeans: plain JPype "
          f"{rt['plain'] * 1e3:.3f} ms (median {rt['plain_median'] * 1e3:.3f}), bulk reader {rt['bulk'] * 1e3:.3f} ms "
          f"per MBean -> {rt['rt'] * 1e3:.3f} ms")
    ok_all = True
    for conns, warm, polls in runs:
        mid = setup.median_poll(polls)
        ph = mid.phases
        floor = mid.mbeans * rt["rt"] / conns
        fetched = mid.round_trips - mid.queries
        floor_fetched = fetched * rt["rt"] / conns
        ratio = mid.seconds / floor
        rules_share = ph["rules"] / mid.seconds
        ok = ratio <= TARGET_FLOOR_RATIO and rules_share < TARGET_RULES_SHARE
        ok_all &= ok
        print()
        print(f"{conns} connection(s): steady poll {setup.spread([p.seconds for p in polls])}")
        print(f"  breakdown (median poll): names listing {ph['names']:.2f} s (first poll: {warm.phases['names']:.2f} s; "
              f"re-read every namesRefreshSeconds), queries {ph['queries']:.2f} s, reads {ph['reads']:.2f} s, "
              f"assemble {ph['assemble']:.2f} s, rules {ph['rules']:.2f} s, render+gzip {ph['render']:.2f} s "
              f"(gzip alone {mid.gzip_seconds:.2f} s)")
        print(f"  {mid.mbeans:,} MBeans covered: {fetched:,} by getAttributes, the rest by {mid.queries} queries; "
              f"{mid.series:,} series; body {mid.body_bytes / 2**20:.1f} MiB, gzip {mid.gzip_bytes / 2**20:.1f} MiB")
        print(f"  floor = {mid.mbeans:,} x {rt['rt'] * 1e3:.3f} ms / {conns} = {floor:.2f} s -> poll / floor = "
              f"{ratio:.2f} (target <= {TARGET_FLOOR_RATIO}: {setup.verdict(ratio <= TARGET_FLOOR_RATIO)})")
        print(f"  floor of the getAttributes reads alone = {fetched:,} x {rt['rt'] * 1e3:.3f} ms / {conns} = "
              f"{floor_fetched:.2f} s -> poll / that = {mid.seconds / floor_fetched:.2f}")
        print(f"  rules: {ph['rules']:.2f} s = {rules_share:.1%} of the poll (target < {TARGET_RULES_SHARE:.0%}: "
              f"{setup.verdict(rules_share < TARGET_RULES_SHARE)}); first poll: {warm.phases['rules']:.1f} s")
    print()
    print(f"machine at the end: {setup.machine()}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
