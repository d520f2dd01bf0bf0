"""Benchmark: simulator start-up at the scale where exporters fall over (40,000 partitions).

Prints the time from launching the simulator to its READY line, the JVM heap used once it serves
(after a full GC) and the MBean count of the posed broker, each with its ratio against the target
(30 s, 2 GB), and, as the baseline measured in the same run, the same numbers for the captured
5-partition node, so the ratio of big to small shows what the partitions cost.

    python -m bench.simulator_startup [--partitions N] [--heap 2g]
"""
from __future__ import annotations

import argparse
import sys
import time

from kafka_jmx_sidecar.mbeans.simulator import Simulator, cluster

TARGET_SECONDS = 30.0
TARGET_HEAP = 2 * 1024 ** 3


def measure(label: str, **start_args) -> dict:
    t0 = time.monotonic()
    sim = Simulator.start(**start_args)
    ready = time.monotonic() - t0
    try:
        heap = sim.heap_used_bytes(gc=True)
        count = sim.mbean_count(sim.posed)
        info = sim.cluster()
        query, listing = jmx_timings(sim.url)
    finally:
        sim.stop()
    print(f"{label:>28}: {info['partitions']:>6} partitions, {count:>7} MBeans, ready in {ready:6.2f} s, "
          f"heap used {heap / 1024 ** 2:7.1f} MiB; over JMX: value-filtered query {query:.2f} s, "
          f"listing every kafka.* name {listing:.2f} s")
    return {"ready": ready, "heap": heap, "mbeans": count, "partitions": info["partitions"]}


def jmx_timings(url: str) -> tuple[float, float]:
    """What a scrape does (informational, no target): the partition gauges equal to 1, filtered
    inside the simulator's JVM (one round trip), and the list of every kafka.* ObjectName."""
    import jpype
    import jpype.imports  # noqa: F401

    if not jpype.isJVMStarted():
        jpype.startJVM()
    from javax.management import ObjectName, Query
    from javax.management.remote import JMXConnectorFactory, JMXServiceURL

    connector = JMXConnectorFactory.connect(JMXServiceURL(url), None)
    try:
        mbs = connector.getMBeanServerConnection()
        t0 = time.monotonic()
        mbs.queryNames(ObjectName("kafka.cluster:type=Partition,name=UnderReplicated,*"),
                       Query.eq(Query.attr("Value"), Query.value(jpype.JInt(1))))
        t1 = time.monotonic()
        mbs.queryNames(ObjectName("kafka.*:*"), None)
        t2 = time.monotonic()
    finally:
        connector.close()
    return t1 - t0, t2 - t1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40_000)
    ap.add_argument("--heap", default="2g", help="the JVM's -Xmx (the target is to stay under 2 GB used)")
    args = ap.parse_args()
    base = measure("baseline (captured node)", cluster=cluster.reference_4_1(), heap=args.heap)
    big = measure(f"{args.partitions} partitions", partitions=args.partitions, heap=args.heap)
    print()
    print(f"start to READY: {big['ready']:.2f} s = {big['ready'] / TARGET_SECONDS:.2f} x the {TARGET_SECONDS:.0f} s "
          f"target ({big['ready'] / base['ready']:.1f} x the baseline's {base['ready']:.2f} s)")
    print(f"heap used:      {big['heap'] / 1024 ** 3:.2f} GiB = {big['heap'] / TARGET_HEAP:.2f} x the 2 GiB target "
          f"({big['heap'] / max(base['heap'], 1):.1f} x the baseline's {base['heap'] / 1024 ** 2:.0f} MiB)")
    per = (big['heap'] - base['heap']) / max(big['mbeans'] - base['mbeans'], 1)
    print(f"MBeans:         {big['mbeans']} ({big['mbeans'] - base['mbeans']} more than the baseline, "
          f"{per:.0f} bytes of heap each)")
    ok = big["ready"] < TARGET_SECONDS and big["heap"] < TARGET_HEAP
    print("within targets" if ok else "OUTSIDE the targets")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
