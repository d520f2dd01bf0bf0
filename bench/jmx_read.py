"""Benchmark of exporter.source.jmx against the bare JMX test JVM (harness/jmx_target.py).

    python -m bench.jmx_read [--topics 100 --partitions 100] [--delay-ms 1]

Prints, for one target JVM serving topics x partitions x 4 Kafka-shaped gauges:
- listing, first read (MBeanInfo included), steady reads with the compiled helper on 1/2/4
  connections and with plain JPype calls (the baseline), as MBeans/s and ratios;
- the Python cost per MBean of a read (the part that is not the helper's Java call);
- with --delay-ms, a second target whose every getAttributes sleeps that long (a network round
  trip), read on 1/4/8 connections: how far parallel connections overlap their waits.
Numbers depend on the machine: both JVMs and Python share its cores on loopback.
"""
from __future__ import annotations

import argparse
import time

from kafka_jmx_sidecar.exporter.source.jmx import JmxClient, JmxSettings
from harness.jmx_target import Target


def best_of(n: int, fn) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def wall_and_cpu(n: int, fn) -> tuple[float, float]:
    """Best wall time and best CPU time of this process (Python and its JVM's threads)."""
    walls, cpus = [], []
    for _ in range(n):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--delay-ms", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    include = ("kafka.*:*", "test:type=ByteGauge,*")
    with Target(topics=a.topics, partitions=a.partitions, extra=("-Xmx4g",), fast_start=False) as t:
        base = dict(host_port=t.host_port, include_object_names=include)
        with JmxClient(JmxSettings(**base)) as c:  # warm both JVMs up (JIT) before measuring
            for _ in range(3):
                c.read()
        results = {}
        for engine, conns in (("java", 1), ("java", 2), ("java", 4), ("jpype", 1), ("jpype", 2)):
            with JmxClient(JmxSettings(engine=engine, connections=conns, **base)) as c:
                t0 = time.perf_counter()
                names = c.list_names()
                listing = time.perf_counter() - t0
                t0 = time.perf_counter()
                c.read()
                first = time.perf_counter() - t0
                infos = c.take_stats().infos_read
                steady, cpu = wall_and_cpu(a.repeat, c.read)
                rt = c.take_stats().round_trips // a.repeat
                results[(engine, conns)] = steady, cpu
                print(f"{engine:5} connections={conns}: {len(names):,} MBeans; list {listing:.2f}s; first read "
                      f"{first:.2f}s ({infos} getMBeanInfo); steady read {steady:.2f}s = {len(names) / steady:,.0f} "
                      f"MBeans/s, {rt:,} round trips, sidecar CPU {cpu / len(names) * 1e6:.0f} us/MBean")
        (j1, j1cpu), (p1, p1cpu) = results[("java", 1)], results[("jpype", 1)]
        print(f"helper vs plain JPype, 1 connection: {p1 / j1:.1f}x the speed, {p1cpu / j1cpu:.1f}x less sidecar CPU; "
              f"java 2 and 4 connections vs 1: {j1 / results[('java', 2)][0]:.2f}x, {j1 / results[('java', 4)][0]:.2f}x")

        with JmxClient(JmxSettings(**base)) as c:
            n = len(c.list_names())
            c.read()
            c.read()
            engine = c._engine
            real = engine.read
            spent: list[float] = []

            def timed(*args, **kw):
                t0 = time.perf_counter()
                r = real(*args, **kw)
                spent.append(time.perf_counter() - t0)
                return r

            engine.read = timed
            unchanged, changed = [], []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                c.read()
                unchanged.append((time.perf_counter() - t0 - spent[-1]) / n)
                c._plans.listed.prev_raw = None  # every record decoded: the cost when every value changed
                t0 = time.perf_counter()
                c.read()
                changed.append((time.perf_counter() - t0 - spent[-1]) / n)
            engine.read = real
            java_per = min(spent) / n
            print(f"per MBean: helper call {java_per * 1e6:.1f} us (RMI included); Python {min(unchanged) * 1e6:.2f} us "
                  f"unchanged, {min(changed) * 1e6:.2f} us when every value changed")

    if a.delay_ms:
        with Target(topics=1, partitions=500, extra=(f"-Dtarget.delay.ms={a.delay_ms}",)) as t:
            timings = {}
            for conns in (1, 4, 8):
                with JmxClient(JmxSettings(host_port=t.host_port, include_object_names=include, connections=conns)) as c:
                    n = len(c.list_names())
                    c.read()
                    timings[conns] = best_of(a.repeat, c.read)
            print(f"{a.delay_ms} ms per round trip, {n} MBeans: " + ", ".join(
                f"{k} connection(s) {v:.2f}s ({n / v:,.0f}/s, {timings[1] / v:.1f}x)" for k, v in timings.items()))


if __name__ == "__main__":
    main()
