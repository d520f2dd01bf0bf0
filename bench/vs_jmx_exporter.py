"""Benchmark: the sidecar against the real Prometheus jmx_exporter standalone, over the same broker.

For each broker (a real Kafka 4.1 broker with as many partitions as this machine holds, and the
simulator at 10,000 and 40,000 partitions), each rule file (Strimzi's, unchanged, and the shipped
`rules/kafka-health.yml`: jmx_exporter is given the same file, which is what a user of those rules
with jmx_exporter pays) and each jmx_exporter release (0.20.0 against the sidecar's 0.x naming, the
newest 1.x, 1.6.0, against `sidecar: {naming: "1.x"}`), both are measured two ways:

- one-shot, what a cron job or a first scrape pays. jmx_exporter: from starting its standalone
  server to the last byte of its first /metrics response (it walks JMX on request, so that response
  is its first walk). Sidecar: the `kafka-jmx-sidecar scrape --config FILE` process, start to exit.
- steady. jmx_exporter: the duration of a later /metrics request (every request walks JMX again).
  Sidecar: a steady poll of `kafka-jmx-sidecar serve`, read from its self metrics: the poll
  (`jmx_scrape_duration_seconds`, the JMX read and the rules; the histogram
  `kafka_jmx_sidecar_poll_duration_seconds` gives the mean over the same window) plus the
  rendering of its snapshot (`kafka_jmx_sidecar_poll_phase_seconds{phase="render"}`), the
  first poll (which lists every MBean name) excluded. Not the sidecar's /metrics response time:
  that is served from the last snapshot and says nothing of the broker.

Before anything else is timed for a configuration, the outputs are checked to be the same: the
first one-shot readings of both (sidecar between two of jmx_exporter's readings) must have the same
families (TYPE, HELP) and the same series (names and label sets, compared as sets: order aside),
and the same values where jmx_exporter printed the same value before and after (a mismatch is read
again once, as a real broker's histogram percentiles drift and come back); the first snapshot of
`serve` must have the same families and series. Self metrics (`jmx_*`, `kafka_jmx_sidecar_*`,
`process_*`) are left out. A configuration whose outputs differ is not timed further: its
differences are printed, the other configurations are measured, and the exit code is 2.

The floor: for each broker and rule file, bench/FloorClient.java (a minimal read-only JMX client in
Java, no rules, no Python) lists the names the configuration includes, asks the health queries and
reads every other MBean with one getAttributes each, at 1, 2 and 4 connections (bench/floor.py).
Every figure is printed as a ratio to jmx_exporter and as a multiple of that floor: a steady poll
against the floor's queries and reads at the sidecar's connections, a one-shot against the floor's
JVM start, raw listing and one steady poll.

The broker's CPU: the broker process's CPU seconds (/proc) over each jmx_exporter request, and over
serve's steady polls at 1, 2 and 4 connections (`sidecar.connections`; the first release of each
rule file only), less what the broker spends idle, per poll; beside them serve's peak resident
memory.

Targets (bench/vs_jmx_exporter_report.py: TARGETS) are judged at 10,000 partitions and more;
smaller brokers are measured and printed, not judged.

jmx_exporter walks every MBean the rules select with getMBeanInfo and getAttributes over RMI, one
MBean at a time: at 40,000 partitions ~400,000 MBeans, minutes per scrape. So on brokers of
`--big` partitions and more it is measured `--big-repeat` times (default: 1 one-shot, 2 steady
requests); the output gives n for every figure.

    python -m bench.vs_jmx_exporter [--sizes 10000,40000] [--real-partitions N | --skip-real-broker]
        [--rules strimzi,health] [--releases 0.20.0,1.6.0] [--repeat 3] [--polls 5]
        [--big 10000] [--big-repeat 1,2] [--exporter-jvm-options "-Xmx2g"] [--poll-interval 5]
        [--connections 1,2,4] [--floor-polls 3]
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bench import sidecar_setup as setup
from bench.floor import HEALTH_FAMILIES, HEALTH_QUERIES, Floor, describe, run_floor
from bench.vs_jmx_exporter_brokers import DEFAULT_REAL_PARTITIONS, Broker, real_broker, simulated_broker
from bench.vs_jmx_exporter_report import report
from bench.vs_jmx_exporter_runs import Exporter, Steady, own_duration, serve_steady, sidecar_one_shot
from harness import compare
from harness.sidecar import config_text, naming_block

RULES = {"strimzi": setup.STRIMZI_RULES, "health": setup.HEALTH_RULES}
NAMING = {"0.20.0": "0.x", "1.0.1": "1.x", "1.6.0": "1.x"}
SELF_PREFIXES = ("jmx_", "kafka_jmx_sidecar_", "process_")


class OutputsDiffer(RuntimeError):
    pass


# -- the check -------------------------------------------------------------------------------

def parsed(text: str) -> compare.Exposition:
    return compare.parse(text).without(*SELF_PREFIXES)


def shape_differences(ours: compare.Exposition, theirs: compare.Exposition) -> list[str]:
    """Families (TYPE, HELP, UNIT) and series (names, label sets) that differ; order aside."""
    return compare.differences(ours, theirs, check_order=False)


def value_suspects(before: compare.Exposition, ours: compare.Exposition, after: compare.Exposition) -> set:
    """Series jmx_exporter printed alike before and after ours, with another value in ours."""
    return {k for k in compare.unmoved(before, after)
            if k in ours.series and ours.series[k] != before.series[k]}


def describe_values(keys, ours: compare.Exposition, theirs: compare.Exposition) -> list[str]:
    return [f"value of {k[0]}{k[1]}: sidecar {ours.series.get(k)} jmx_exporter {theirs.series.get(k)}"
            for k in sorted(keys)]


def abort_if(differences: list[str], what: str) -> None:
    if differences:
        shown = "\n  ".join(differences[:40])
        more = f"\n  ... and {len(differences) - 40} more" if len(differences) > 40 else ""
        raise OutputsDiffer(f"{what}: {len(differences)} difference(s):\n  {shown}{more}")


# -- one configuration -----------------------------------------------------------------------

@dataclass
class Result:
    broker: Broker
    rules: str
    release: str
    floor: Floor | None = None
    connections: int = 1      # serve's connections by default (the headline steady figure's)
    series: int = 0
    exporter_one_shot: list[float] = field(default_factory=list)
    exporter_steady: list[float] = field(default_factory=list)
    exporter_own: list[float] = field(default_factory=list)  # its jmx_scrape_duration_seconds, steady
    exporter_cpu: list[float] = field(default_factory=list)  # the broker's CPU seconds per steady request
    sidecar_one_shot: list[float] = field(default_factory=list)
    steady: Steady | None = None
    sweep: dict[int, Steady] = field(default_factory=dict)  # connections -> serve's steady polls
    value_rereads: int = 0

    @property
    def name(self) -> str:
        return f"{self.broker.label}, {self.rules} rules, jmx_exporter {self.release}"

    def ratio(self, way: str) -> float:
        if way == "one-shot":
            return statistics.median(self.exporter_one_shot) / statistics.median(self.sidecar_one_shot)
        return statistics.median(self.exporter_steady) / statistics.median(self.steady.polls)

    def over_floor(self, way: str) -> float:
        """The sidecar's figure as a multiple of the floor client's at the same connections."""
        if self.floor is None or self.connections not in self.floor.reads:
            return float("nan")
        if way == "one-shot":
            return statistics.median(self.sidecar_one_shot) / self.floor.one_shot(self.connections)
        return statistics.median(self.steady.polls) / self.floor.poll(self.connections)


def _configs(broker: Broker, rules: str, release: str, args, workdir: Path) -> tuple[Path, Path, Callable]:
    naming = NAMING[release]
    body = RULES[rules].read_text(encoding="utf-8")
    theirs_config = workdir / f"{rules}-{release}-jmx_exporter.yml"
    ours_config = workdir / f"{rules}-{release}-sidecar.yml"
    theirs_config.write_text(config_text(broker.host_port, body))
    block = naming_block(naming) + f"  pollIntervalSeconds: {args.poll_interval}\n"
    ours_config.write_text(config_text(broker.host_port, body, block))

    def with_connections(n: int) -> Path:
        path = workdir / f"{rules}-{release}-sidecar-{n}.yml"
        path.write_text(config_text(broker.host_port, body, block + f"  connections: {n}\n"))
        return path
    return theirs_config, ours_config, with_connections


def measure(broker: Broker, rules: str, release: str, args, workdir: Path, floor: Floor | None,
            sweep: bool) -> Result:
    from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings

    theirs_config, ours_config, with_connections = _configs(broker, rules, release, args, workdir)
    big = broker.partitions >= args.big
    ex_one_shots, ex_steady = args.big_repeat if big else (args.repeat, args.repeat)
    res = Result(broker, rules, release, floor, SidecarSettings().connections)
    print(f"\n== {res.name} (sidecar naming {NAMING[release]}); machine: {setup.machine()}", flush=True)

    def exporter_request() -> str:
        cpu0, t0 = broker.cpu(), time.monotonic()
        seconds, text = exporter.request()
        res.exporter_cpu.append(broker.busy_cpu(cpu0, t0))
        res.exporter_steady.append(seconds)
        res.exporter_own.append(own_duration(text))
        print(f"  jmx_exporter steady request: {seconds:.2f} s (its own scrape duration {own_duration(text):.2f} s; "
              f"broker CPU {res.exporter_cpu[-1]:.2f} s)", flush=True)
        return text

    exporter = Exporter(release, theirs_config, tuple(args.exporter_jvm_options), args.timeout)
    try:
        seconds, before_text = exporter.one_shot()
        res.exporter_one_shot.append(seconds)
        print(f"  jmx_exporter one-shot: {seconds:.2f} s (its own scrape duration {own_duration(before_text):.2f} s)",
              flush=True)
        seconds, ours_text = sidecar_one_shot(ours_config, args.timeout)
        res.sidecar_one_shot.append(seconds)
        print(f"  sidecar one-shot (scrape): {seconds:.2f} s", flush=True)
        after_text = exporter_request()

        before, ours, after = parsed(before_text), parsed(ours_text), parsed(after_text)
        abort_if(shape_differences(ours, before), f"{res.name}: `scrape` against jmx_exporter")
        res.series = len(before.series)
        suspects = value_suspects(before, ours, after)
        print(f"  outputs the same: {len(before.families):,} families, {res.series:,} series (as sets); "
              f"{len(compare.unmoved(before, after)):,} values unmoved in jmx_exporter, "
              f"{len(suspects)} differ in ours{' (read again)' if suspects else ''}", flush=True)
        i = 1
        while i < max(args.repeat, ex_steady) or suspects:
            previous = after
            if i < args.repeat or suspects:
                seconds, ours_text = sidecar_one_shot(ours_config, args.timeout)
                res.sidecar_one_shot.append(seconds)
                print(f"  sidecar one-shot (scrape): {seconds:.2f} s", flush=True)
            if i < ex_steady or suspects:
                after_text = exporter_request()
            if suspects:  # only a mismatch that repeats on a value that did not move counts
                res.value_rereads += 1
                ours, after = parsed(ours_text), parsed(after_text)
                suspects &= value_suspects(previous, ours, after)
                abort_if(describe_values(suspects, ours, previous), f"{res.name}: values that did not move")
            i += 1
    finally:
        exporter.stop()
    for _ in range(ex_one_shots - 1):
        exporter = Exporter(release, theirs_config, tuple(args.exporter_jvm_options), args.timeout)
        try:
            seconds, _text = exporter.one_shot()
        finally:
            exporter.stop()
        res.exporter_one_shot.append(seconds)
        print(f"  jmx_exporter one-shot: {seconds:.2f} s", flush=True)

    def check_serve(text: str) -> None:
        abort_if(shape_differences(parsed(text), before), f"{res.name}: `serve`'s first snapshot against jmx_exporter")

    res.steady = serve_steady(ours_config, args.polls, args.poll_interval, args.timeout, check_serve, broker)
    print_steady(f"serve ({res.connections} connection(s), the default)", res.steady)
    if sweep:
        for n in args.connections:
            if n == res.connections:
                res.sweep[n] = res.steady
                continue
            res.sweep[n] = serve_steady(with_connections(n), args.polls, args.poll_interval, args.timeout,
                                        check_serve, broker)
            print_steady(f"serve, connections: {n}", res.sweep[n])
    return res


def print_steady(what: str, s: Steady) -> None:
    print(f"  {what}: first poll {s.first_poll:.2f} s (lists the names); snapshot the same as jmx_exporter's; "
          f"steady polls (poll + render): {', '.join(f'{p:.3f}' for p in s.polls)} s; histogram mean "
          f"{s.histogram_mean:.3f} s over {s.window_polls} polls; broker CPU {s.broker_cpu:.3f} s per poll; "
          f"peak RSS {setup.memory(s.peak_rss)}", flush=True)


def measure_floor(broker: Broker, rules: str, args) -> Floor | None:
    """The floor client over the names the rule file includes (bench/floor.py), at --connections
    and at serve's default connections, which the headline figures are taken at."""
    from kafka_jmx_sidecar.exporter.config.sidecar import default_connections
    from kafka_jmx_sidecar.exporter.rule_engine.config import load_config

    config = load_config(str(RULES[rules]))
    include = tuple(p.text for p in config.include_object_names) or ("*:*",)
    exclude = tuple(p.text for p in config.exclude_object_names)
    try:
        floor = run_floor(f"service:jmx:rmi:///jndi/rmi://{broker.host_port}/jmxrmi", include=include,
                          exclude=exclude, queried=HEALTH_FAMILIES, queries=HEALTH_QUERIES,
                          connections=tuple(sorted({*args.connections, default_connections()})),
                          polls=args.floor_polls, broker_pid=broker.pid,
                          timeout=args.timeout)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"\n== floor client, {broker.label}, {rules} rules: NOT MEASURED: {e}", flush=True)
        return None
    print(f"\n== floor client, {broker.label}, {rules} rules: {describe(floor)}", flush=True)
    return floor


def prepare_sidecar(workdir: Path) -> None:
    """What an installed sidecar has before its first run: its modules' bytecode and its Java
    helper compiled. This machine's environment sets PYTHONDONTWRITEBYTECODE and the repository
    is installed editable, so without this every `scrape` would compile the sidecar's modules
    again; the bytecode goes to the bench's own directory, never into the working tree."""
    from kafka_jmx_sidecar import exporter

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")  # inherited by every sidecar process
    root = Path(exporter.__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "exporter"), str(root / "mbeans")],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-c", "from kafka_jmx_sidecar.exporter.source.jmx.jvm import helper, start_jvm; start_jvm(); helper()"],
                   check=True)


def code_version() -> str:
    """The commit of the sidecar code measured, and whether its files differ from it."""
    from kafka_jmx_sidecar import exporter

    root = Path(exporter.__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "exporter", "mbeans", "rules"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"{root} (not a git checkout)"
    return f"{root} at {head}" + (" with uncommitted changes in exporter/, mbeans/ or rules/" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,40000",
                    help="simulator sizes in partitions, comma-separated ('' for none)")
    ap.add_argument("--real-partitions", type=int, default=DEFAULT_REAL_PARTITIONS,
                    help="partitions of the real Kafka 4.1 broker")
    ap.add_argument("--skip-real-broker", action="store_true")
    ap.add_argument("--rules", default="strimzi,health", help="rule files: strimzi, health")
    ap.add_argument("--releases", default="0.20.0,1.6.0", help=f"jmx_exporter releases: {', '.join(NAMING)}")
    ap.add_argument("--repeat", type=int, default=3, help="one-shot runs and steady requests of each side")
    ap.add_argument("--polls", type=int, default=5, help="steady polls of serve watched")
    ap.add_argument("--big", type=int, default=10_000, help="from this many partitions jmx_exporter runs --big-repeat")
    ap.add_argument("--big-repeat", default="1,2", help="jmx_exporter one-shots and steady requests on big brokers")
    ap.add_argument("--exporter-jvm-options", default="-Xmx2g",
                    help="jmx_exporter's JVM options (its defaults but a heap large enough for big brokers)")
    ap.add_argument("--poll-interval", type=float, default=5.0, help="serve's pollIntervalSeconds")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed for one scrape or poll")
    ap.add_argument("--connections", default="1,2,4",
                    help="serve's connections measured (the first release of each rule file) and the floor client's")
    ap.add_argument("--floor-polls", type=int, default=3, help="the floor client's polls at each connection count")
    args = ap.parse_args(argv)
    args.connections = tuple(int(x) for x in args.connections.split(",") if x.strip())
    args.exporter_jvm_options = shlex.split(args.exporter_jvm_options)
    args.big_repeat = tuple(int(x) for x in args.big_repeat.split(","))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    releases = [r.strip() for r in args.releases.split(",") if r.strip()]
    for r in rules:
        if r not in RULES:
            ap.error(f"--rules: unknown {r!r}; known: {', '.join(RULES)}")
    for r in releases:
        if r not in NAMING:
            ap.error(f"--releases: unknown {r!r}; known: {', '.join(NAMING)}")
    if len(args.big_repeat) != 2 or min(args.big_repeat) < 1 or args.repeat < 1 or args.polls < 1:
        ap.error("--repeat, --polls and both --big-repeat counts are at least 1")
    if not args.connections or min(args.connections) < 1 or args.floor_polls < 1:
        ap.error("--connections are numbers of at least 1, --floor-polls at least 1")

    from kafka_jmx_sidecar.exporter.config.sidecar import DEFAULT_JVM_OPTIONS, ONE_SHOT_JVM_OPTIONS

    print(f"machine: {setup.machine()}")
    print(f"sidecar code: {code_version()}")
    print(f"jmx_exporter JVM options: {' '.join(args.exporter_jvm_options) or 'the JVM defaults'} "
          f"(0.20.0 and 1.0.1: the packaged jmx_prometheus_httpserver jar; 1.6.0: its collector and client_java's "
          f"HTTPServer through harness/JmxExporterStandalone.java)")
    print(f"sidecar JVM options: its defaults, serve's {' '.join(DEFAULT_JVM_OPTIONS)} and scrape's "
          f"{' '.join(ONE_SHOT_JVM_OPTIONS)}; serve's pollIntervalSeconds "
          f"{args.poll_interval:g}, other settings default; its bytecode and Java helper compiled before timing, "
          f"as an installed sidecar has them")
    brokers = [] if args.skip_real_broker else [(f"real Kafka broker, {args.real_partitions:,} partitions",
                                                  lambda: real_broker(args.real_partitions))]
    brokers += [(f"simulator, {n:,} partitions", lambda n=n: simulated_broker(n)) for n in sizes]
    results: list[Result] = []
    failed: list[str] = []  # what could not be measured, and why: reported, never dropped
    differ: list[str] = []  # configurations whose outputs differ: not timed further
    workdir = Path(tempfile.mkdtemp(prefix="bench-vs-jmx_exporter-"))
    try:
        prepare_sidecar(workdir)
        for label, start in brokers:
            try:
                with start() as broker:
                    for r in rules:
                        floor = measure_floor(broker, r, args)
                        for k, release in enumerate(releases):
                            try:
                                results.append(measure(broker, r, release, args, workdir, floor, sweep=k == 0))
                            except OutputsDiffer as e:
                                differ.append(str(e))
                                print(f"  OUTPUTS DIFFER, not timed further: {e}", flush=True)
                            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                                failed.append(f"{broker.label}, {r} rules, jmx_exporter {release}: {e}")
                                print(f"  NOT MEASURED: {e}", flush=True)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                failed.append(f"{label}: {e}")
                print(f"\n{label}: NOT MEASURED: {e}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    ok = report(results) if results else False
    for line in failed:
        print(f"NOT MEASURED: {line}")
    for line in differ:
        print(f"OUTPUTS DIFFER (not timed): {line}")
    print(f"\nmachine at the end: {setup.machine()}")
    return 2 if differ else 0 if ok and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
