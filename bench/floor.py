"""The floor client (bench/FloorClient.java): compiled once, run against a broker, its lines parsed.

    floor = run_floor(url, include=("kafka.*:*",), queried=HEALTH_FAMILIES, queries=HEALTH_QUERIES,
                      connections=(1, 2, 4), polls=3, broker_pid=pid)
    floor.jvm_start, floor.listing, floor.reads[4], floor.queries, floor.broker_cpu[4]

Not a benchmark itself: bench/vs_jmx_exporter.py runs it in the same run as jmx_exporter and the
sidecar. The Java program knows no rules and runs no Python: a minimal read-only JMX client.
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.jmx_target import java_home
from harness.processes import compiled

SOURCE = Path(__file__).resolve().parent / "FloorClient.java"
_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-jmx-sidecar" / "bench"

# What the sidecar learns by server-side queries, not reads: the per-partition health flags and
# replica counts (mbeans/catalog.py's Partition gauges but LastStableOffsetLag), and the queries it
# asks for them on a healthy broker.
HEALTH_FAMILIES = tuple(f"kafka.cluster:type=Partition,name={n},*" for n in
                        ("UnderReplicated", "UnderMinIsr", "AtMinIsr", "InSyncReplicasCount", "ReplicasCount"))
HEALTH_QUERIES = ("kafka.cluster:type=Partition,*;Value!=0",
                  "kafka.cluster:type=Partition,name=InSyncReplicasCount,*;Value!=0&Value!=3",
                  "kafka.cluster:type=Partition,name=ReplicasCount,*;Value!=0&Value!=3")


@dataclass
class Floor:
    jvm_start: float = 0.0           # spawn to the program's first line
    connect: float = 0.0
    listing: float = 0.0             # the includes' queryNames, one connection
    names: int = 0
    listing_cpu: float = float("nan")  # the broker's CPU seconds over the listing
    infos: float = 0.0
    queries: list[tuple[str, float, int]] = field(default_factory=list)  # (pattern;expr, seconds, hits)
    query_cpu: float = 0.0
    reads: dict[int, list[float]] = field(default_factory=dict)  # connections -> seconds per poll
    read_cpu: dict[int, list[float]] = field(default_factory=dict)  # connections -> broker CPU s per poll
    mbeans: int = 0                  # MBeans a poll reads (one round trip each)

    def read(self, connections: int) -> float:
        return statistics.median(self.reads[connections])

    def poll(self, connections: int) -> float:
        """A steady poll at the floor: the health queries and the reads."""
        return self.read(connections) + sum(s for _, s, _ in self.queries)

    def broker_cpu(self, connections: int) -> float:
        return statistics.median(self.read_cpu[connections]) + self.query_cpu

    def one_shot(self, connections: int) -> float:
        """What a one-shot needs at the least: the JVM's start, a raw listing, one steady poll."""
        return self.jvm_start + self.connect + self.listing + self.poll(connections)


def classes() -> Path:
    return compiled(SOURCE, _CACHE, javac=str(java_home() / "bin" / "javac"))


def _fields(line: str) -> dict[str, str]:
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S+)", line))


def run_floor(url: str, *, include=("*:*",), exclude=(), queried=(), queries=(), connections=(1, 2, 4),
              polls: int = 3, broker_pid: int | None = None, timeout: float = 3600.0,
              jvm_options: tuple[str, ...] = ("-Xmx1g",)) -> Floor:
    cmd = [str(java_home() / "bin" / "java"), *jvm_options, "-cp", str(classes()), "FloorClient", "--url", url,
           "--connections", ",".join(map(str, connections)), "--polls", str(polls)]
    for flag, values in (("--include", include), ("--exclude", exclude), ("--queried", queried),
                         ("--query", queries)):
        for v in values:
            cmd += [flag, v]
    if broker_pid is not None:
        cmd += ["--broker-pid", str(broker_pid), "--clk-tck", str(os.sysconf("SC_CLK_TCK"))]
    f = Floor()
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            for line in proc.stdout:
                if not line.startswith("FLOOR "):
                    continue
                step, v = line.split()[1], _fields(line)
                if step == "started":
                    f.jvm_start = time.perf_counter() - t0
                elif step == "connect":
                    f.connect = float(v["seconds"])
                elif step == "listing":
                    f.listing, f.names, f.listing_cpu = float(v["seconds"]), int(v["names"]), float(v["broker_cpu"])
                elif step == "infos":
                    f.infos = float(v["seconds"])
                elif step == "query":
                    f.queries.append((f"{v['pattern']};{v['expr']}", float(v["seconds"]), int(v["hits"])))
                    f.query_cpu += float(v["broker_cpu"])
                elif step == "read":
                    c = int(v["connections"])
                    f.reads.setdefault(c, []).append(float(v["seconds"]))
                    f.read_cpu.setdefault(c, []).append(float(v["broker_cpu"]))
                    f.mbeans = int(v["mbeans"])
            proc.wait(timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err = proc.stderr.read()
    if proc.returncode != 0:
        raise RuntimeError(f"the floor client exited {proc.returncode}: {err.strip()[-2000:]}")
    return f


def describe(f: Floor) -> str:
    parts = [f"JVM start {f.jvm_start:.2f} s", f"connect {f.connect:.2f} s",
             f"listing {f.listing:.2f} s ({f.names:,} names)"]
    parts += [f"query {q.split(';')[1]} on {q.split(';')[0]} {s * 1000:.0f} ms ({h:,} hits)" for q, s, h in f.queries]
    parts += [f"read {f.mbeans:,} MBeans on {c} connection(s) {f.read(c):.2f} s, broker CPU "
              f"{statistics.median(f.read_cpu[c]):.2f} s" for c in sorted(f.reads)]
    return "; ".join(parts)
