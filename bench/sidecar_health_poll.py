"""Benchmark: one sidecar poll with the default health rules against jmx_exporter's way of reading
the same MBeans, on a simulated broker of 40,000 partitions.

Sidecar: the collector as `serve` runs it (JmxSource.read, RuleEngine.samples, Snapshot.render
with gzip), after a warm-up poll that lists the names (the listing runs on its slow clock, not in
a steady poll), the median of `--polls` polls.

Baseline, measured in the same run and process: the way jmx_exporter scrapes, through plain JPype
calls on a fresh MBeanServerConnection: `queryNames` for each includeObjectNames pattern of the
same rules file, then, for each name, `getMBeanInfo` and `getAttributes` of its readable
attributes, one MBean at a time on one connection. At 40,000 partitions that is 200,000 MBeans
(minutes), so it is timed on a random sample of `--sample` names and extrapolated linearly to all
of them; the output says so.

Target: the poll at least 20 times faster than the baseline.

    python3 bench/sidecar_health_poll.py [--partitions N] [--polls N] [--sample N] [--connections N]
"""
from __future__ import annotations

import argparse
import random
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sidecar_setup as setup  # noqa: E402

TARGET_RATIO = 20.0


def baseline(jmx_url: str, patterns: list[str], sample_size: int, seed: int = 1) -> dict:
    """jmx_exporter's scrape with plain JPype calls: timed listing, timed sample of reads."""
    import jpype

    connector, mbsc = setup.plain_connection(jmx_url)
    ObjectName = jpype.JClass("javax.management.ObjectName")
    String = jpype.JClass("java.lang.String")
    try:
        t0 = time.perf_counter()
        names = set()
        for p in patterns:
            names.update(mbsc.queryNames(ObjectName(p), None))
        listing = time.perf_counter() - t0
        names = list(names)
        rng = random.Random(seed)
        sample = names if len(names) <= sample_size else rng.sample(names, sample_size)

        def scrape_one(name) -> int:
            info = mbsc.getMBeanInfo(name)
            attrs = [a.getName() for a in info.getAttributes() if a.isReadable()]
            values = mbsc.getAttributes(name, jpype.JArray(String)(attrs))
            n = 0
            for a in values:  # jmx_exporter looks at every value it got
                a.getValue()
                n += 1
            return n

        for name in rng.sample(names, min(200, len(names))):  # both JVMs warm before timing
            scrape_one(name)
        infos = reads = 0.0
        values = 0
        t0 = time.perf_counter()
        for name in sample:
            t1 = time.perf_counter()
            info = mbsc.getMBeanInfo(name)
            attrs = [a.getName() for a in info.getAttributes() if a.isReadable()]
            t2 = time.perf_counter()
            for a in mbsc.getAttributes(name, jpype.JArray(String)(attrs)):
                a.getValue()
                values += 1
            t3 = time.perf_counter()
            infos += t2 - t1
            reads += t3 - t2
        sampled = time.perf_counter() - t0
    finally:
        connector.close()
    per_mbean = sampled / len(sample)
    return {"names": len(names), "listing": listing, "sample": len(sample), "sampled": sampled,
            "per_mbean": per_mbean, "per_info": infos / len(sample), "per_read": reads / len(sample),
            "reads": per_mbean * len(names), "total": listing + per_mbean * len(names),
            "round_trips": len(patterns) + 2 * len(names), "values": values}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--polls", type=int, default=5, help="steady polls timed after the warm-up poll")
    ap.add_argument("--sample", type=int, default=4000, help="baseline MBeans timed (then extrapolated)")
    ap.add_argument("--connections", type=int, default=1, help="the sidecar's JMX connections")
    ap.add_argument("--jvm-options", default="",
                    help="options of this process's JVM, shared by the sidecar and the baseline (default: the JVM's own "
                         "defaults, as jmx_exporter would run; the sidecar's poll does little on the client side)")
    args = ap.parse_args()

    print(f"machine: {setup.machine()}")
    print(f"JVM options (sidecar and baseline): {setup.start_jvm(shlex.split(args.jvm_options)) or 'the JVM defaults'}")
    sim = setup.start_simulator(args.partitions)
    try:
        config_path = setup.write_config(sim.url, setup.HEALTH_RULES)
        pipe = setup.Pipeline(config_path, connections=args.connections)
        t0 = time.perf_counter()
        warm = pipe.poll()
        print(f"warm-up poll: {time.perf_counter() - t0:.2f} s (names listing {warm.phases['names']:.2f} s, "
              f"first sight of the rules {warm.phases['rules']:.2f} s), {warm.mbeans:,} MBeans, "
              f"{warm.round_trips} round trips", flush=True)
        polls = [pipe.poll() for _ in range(args.polls)]
        pipe.close()
        mid = setup.median_poll(polls)
        patterns = [p.text for p in pipe.config.include_object_names]
        print(f"baseline: listing {len(patterns)} patterns, then timing {args.sample:,} sampled MBeans ...",
              flush=True)
        base = baseline(sim.url, patterns, args.sample)
    finally:
        sim.stop()

    print()
    print(f"broker: {args.partitions:,} partitions; rules: {setup.HEALTH_RULES.name} "
          f"({len(patterns)} includeObjectNames patterns)")
    print(f"sidecar poll ({args.connections} connection{'s' if args.connections > 1 else ''}): "
          f"{setup.spread([p.seconds for p in polls])}")
    ph = mid.phases
    print(f"  median poll: queries {ph['queries']:.3f} s, reads {ph['reads']:.3f} s, assemble {ph['assemble']:.3f} s, "
          f"rules {ph['rules']:.3f} s, render+gzip {ph['render']:.3f} s (gzip alone {mid.gzip_seconds:.3f} s)")
    print(f"  {mid.mbeans:,} MBeans, {mid.series:,} series, {mid.round_trips} RMI round trips per poll "
          f"({mid.queries} queries, {mid.round_trips - mid.queries} getAttributes), "
          f"body {mid.body_bytes / 2**20:.1f} MiB, gzip {mid.gzip_bytes / 2**20:.2f} MiB")
    extrapolated = base["sample"] < base["names"]
    how = (f"{base['sample']:,} of {base['names']:,} MBeans timed (random sample), extrapolated linearly"
           if extrapolated else f"all {base['names']:,} MBeans timed")
    print(f"baseline, jmx_exporter's way (plain JPype, 1 connection, getMBeanInfo + getAttributes per MBean): "
          f"{base['total']:.1f} s{' (EXTRAPOLATED)' if extrapolated else ''}")
    print(f"  listing {base['listing']:.2f} s + {base['names']:,} x {base['per_mbean'] * 1e3:.3f} ms "
          f"(getMBeanInfo {base['per_info'] * 1e3:.3f} ms + getAttributes {base['per_read'] * 1e3:.3f} ms) "
          f"= {base['reads']:.1f} s; {how}")
    print(f"  {base['round_trips']:,} RMI round trips per scrape")
    ratio = base["total"] / mid.seconds
    ratio_reads = base["reads"] / mid.seconds
    ok = ratio >= TARGET_RATIO
    print()
    print(f"ratio: baseline / sidecar poll = {base['total']:.1f} s / {mid.seconds:.2f} s = {ratio:.1f}x "
          f"(target >= {TARGET_RATIO:.0f}x: {setup.verdict(ok)}); without the baseline's listing {ratio_reads:.1f}x; "
          f"round trips {base['round_trips'] / max(mid.round_trips, 1):,.0f}x fewer")
    print(f"machine at the end: {setup.machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
