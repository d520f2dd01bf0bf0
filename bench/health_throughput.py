"""`health` over 1,000,000 partition states against merely parsing the same input.

Target: the whole command, reading, judging and printing JSON Lines, within
2x of parsing alone (json.loads per line for JSON Lines; splitting the tab-separated fields for
describe text). Both sides run in this process on the same file, best of a few runs.

    python -m bench.health_throughput [--partitions N] [--repeat K]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

from kafka_jmx_sidecar.exporter.commands import health as health_report


def make_states(n: int, seed: int = 7):
    """A broker-fleet mix: mostly healthy RF3, some shrunk ISRs, reassignments, leaderless."""
    rnd = random.Random(seed)
    brokers = list(range(1, 13))
    for i in range(n):
        replicas = rnd.sample(brokers, 3)
        isr = list(replicas)
        roll = rnd.random()
        adding: list[int] = []
        removing: list[int] = []
        leader = replicas[0]
        if roll < 0.05:
            isr = isr[: rnd.randint(1, 2)]
            leader = isr[0]
        elif roll < 0.07:
            new = rnd.choice([b for b in brokers if b not in replicas])
            adding, removing = [new], [replicas[-1]]
            replicas = replicas + [new]
        elif roll < 0.075:
            leader = -1
        yield {"topic": f"topic-{i // 50}", "partition": i % 50, "leader": leader, "replicas": replicas,
               "isr": isr, "adding_replicas": adding, "removing_replicas": removing,
               "min_isr": rnd.choice((1, 2, 2, 2))}


def write_jsonl(path: str, n: int) -> None:
    with open(path, "w") as f:
        for s in make_states(n):
            f.write(json.dumps(s) + "\n")


def write_describe(path: str, n: int) -> None:
    with open(path, "w") as f:
        topic = None
        for s in make_states(n):
            if s["topic"] != topic:
                topic = s["topic"]
                f.write(f"Topic: {topic}\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 50\t"
                        f"ReplicationFactor: 3\tConfigs: min.insync.replicas={s['min_isr']}\n")
            ids = lambda xs: ",".join(map(str, xs))  # noqa: E731
            line = (f"\tTopic: {topic}\tPartition: {s['partition']}\t"
                    f"Leader: {'none' if s['leader'] < 0 else s['leader']}\t"
                    f"Replicas: {ids(s['replicas'])}\tIsr: {ids(s['isr'])}")
            if s["adding_replicas"]:
                line += f"\tAdding Replicas: {ids(s['adding_replicas'])}\tRemoving Replicas: {ids(s['removing_replicas'])}"
            f.write(line + "\tElr: N/A\tLastKnownElr: N/A\n")


def parse_jsonl(path: str) -> int:
    loads = json.loads
    n = 0
    with open(path) as f:
        for line in f:
            loads(line)
            n += 1
    return n


def parse_describe(path: str) -> int:
    """The describe-text equivalent of json.loads: every field split out, ids as integers."""
    n = 0
    with open(path) as f:
        for line in f:
            fields = dict(p.split(": ", 1) for p in line.strip().split("\t"))
            if "Partition" in fields:
                int(fields["Partition"])
                for key in ("Replicas", "Isr", "Adding Replicas", "Removing Replicas"):
                    v = fields.get(key)
                    if v:
                        [int(x) for x in v.split(",")]
            n += 1
    return n


def run_health(path: str) -> int:
    with open(os.devnull, "w") as out:
        code = health_report.run([path], output="jsonl", out=out)
    if code:
        raise SystemExit(f"health exited {code} on the benchmark input")
    return 0


def best(fn, path: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for form, write, parse in (("JSON Lines", write_jsonl, parse_jsonl),
                                   ("describe text", write_describe, parse_describe)):
            path = os.path.join(tmp, "states")
            write(path, args.partitions)
            t_parse = best(parse, path, args.repeat)
            t_health = best(run_health, path, args.repeat)
            ratio = t_health / t_parse
            worst = max(worst, ratio)
            print(f"{form}: {args.partitions:,} partitions  parse only {t_parse:.2f} s  "
                  f"health {t_health:.2f} s  ratio {ratio:.2f}x (target <= 2.00x)  "
                  f"{args.partitions / t_health / 1e3:.0f}k partitions/s")
    print(f"worst ratio {worst:.2f}x: {'OK' if worst <= 2.0 else 'OVER TARGET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
