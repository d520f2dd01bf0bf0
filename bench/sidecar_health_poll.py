"""Benchmark: one sidecar poll with the default health rules against jmx_exporter's way of reading
the same MBeans, on a simulated broker of 40,000 partitions.

Sidecar: the collector as `serve` runs it (JmxSource.read, RuleEngine.series, Snapshot.render
with gzip), after a warm-up poll that lists the names (the listing runs on its slow clock, not in
a steady poll), the median of `--polls` polls.

Baseline, measured in the same run and process: the way jmx_exporter scrapes, through plain JPype
calls on a fresh MBeanServerConnection: `queryNames` for each includeObjectNames pattern of the
same rules file, then, for each name, `getMBeanInfo` and `getAttributes` of its readable
attributes, one MBean at a time on one connection. At 40,000 partitions that is 200,000 MBeans
(minutes), so it is timed on a random sample of `--sample` names and extrapolated linearly to all
of them; the output says so. The sample is read in `--polls` chunks, each after one of the timed
sidecar polls, so that both see the same load on a shared machine.

Target: the poll at least 20 times faster than the baseline.

    python -m bench.sidecar_health_poll [--partitions N] [--polls N] [--sample N] [--connections N]
"""
from __future__ import annotations

import argparse
import random
import shlex
import sys
import time

from bench import sidecar_setup as setup
from kafka_jmx_sidecar.exporter.config.sidecar import default_connections

TARGET_RATIO = 20.0


class Baseline:
    """jmx_exporter's scrape with plain JPype calls on a fresh connection: a timed listing, then
    timed chunks of a random sample of the names (getMBeanInfo, then getAttributes of its
    readable attributes, one MBean at a time)."""

    def __init__(self, jmx_url: str, patterns: list[str], sample_size: int, seed: int = 1):
        import jpype

        self.jpype = jpype
        self.connector, self.mbsc = setup.plain_connection(jmx_url)
        self.String = jpype.JClass("java.lang.String")
        ObjectName = jpype.JClass("javax.management.ObjectName")
        t0 = time.perf_counter()
        names = set()
        for p in patterns:
            names.update(self.mbsc.queryNames(ObjectName(p), None))
        self.listing = time.perf_counter() - t0
        self.names = list(names)
        self.patterns = len(patterns)
        rng = random.Random(seed)
        self.sample = self.names if len(self.names) <= sample_size else rng.sample(self.names, sample_size)
        self.done = 0
        self.infos = self.reads = 0.0
        for name in rng.sample(self.names, min(200, len(self.names))):  # both JVMs warm before timing
            self._scrape(name)

    def _scrape(self, name) -> tuple[float, float]:
        t1 = time.perf_counter()
        info = self.mbsc.getMBeanInfo(name)
        attrs = [a.getName() for a in info.getAttributes() if a.isReadable()]
        t2 = time.perf_counter()
        for a in self.mbsc.getAttributes(name, self.jpype.JArray(self.String)(attrs)):
            a.getValue()  # jmx_exporter looks at every value it got
        return t2 - t1, time.perf_counter() - t2

    def run(self, count: int) -> None:
        for name in self.sample[self.done:self.done + count]:
            info, read = self._scrape(name)
            self.infos += info
            self.reads += read
        self.done = min(len(self.sample), self.done + count)

    def close(self) -> dict:
        self.connector.close()
        n = max(self.done, 1)
        per_mbean = (self.infos + self.reads) / n
        return {"names": len(self.names), "listing": self.listing, "sample": self.done,
                "per_mbean": per_mbean, "per_info": self.infos / n, "per_read": self.reads / n,
                "reads": per_mbean * len(self.names), "total": self.listing + per_mbean * len(self.names),
                "round_trips": self.patterns + 2 * len(self.names)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--polls", type=int, default=5, help="steady polls timed after the warm-up poll")
    ap.add_argument("--sample", type=int, default=5000, help="baseline MBeans timed (then extrapolated)")
    ap.add_argument("--connections", type=int, default=default_connections(),
                    help="the sidecar's JMX connections (default: the sidecar's default on this machine)")
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
        patterns = [p.text for p in pipe.config.include_object_names]
        print(f"baseline: listing {len(patterns)} patterns; then {args.polls} rounds of one sidecar poll and "
              f"{args.sample // args.polls:,} sampled MBeans read jmx_exporter's way (the two see the same load) ...",
              flush=True)
        baseline = Baseline(sim.url, patterns, args.sample)
        polls = []
        for i in range(args.polls):
            polls.append(pipe.poll())
            baseline.run(-(-len(baseline.sample) // args.polls))
        pipe.close()
        base = baseline.close()
        mid = setup.median_poll(polls)
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
