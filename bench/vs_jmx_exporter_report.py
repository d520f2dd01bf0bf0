"""bench/vs_jmx_exporter.py's report: the table of ratios to jmx_exporter and multiples of the
floor client, the broker's CPU per poll at each connection count, and the targets judged."""
from __future__ import annotations

import math
import statistics

from bench.sidecar_setup import memory

JUDGED_FROM = 10_000  # partitions: the targets are set at 10,000 and 40,000
# (rules, way) -> {partitions from: the least ratio jmx_exporter / sidecar}
TARGETS = {("strimzi", "one-shot"): {10_000: 6.0, 40_000: 8.0}, ("strimzi", "steady"): {10_000: 15.0},
           ("health", "one-shot"): {10_000: 5.0, 40_000: 10.0}, ("health", "steady"): {10_000: 80.0, 40_000: 100.0}}
# way -> the most the sidecar may take as a multiple of the floor client at the same connections
# (None: printed, not judged): Strimzi's rules steady (a health poll is a few queries the floor
# asks alike), and both rule files one-shot against JVM start + raw listing + one steady poll
FLOOR_TARGETS = {("strimzi", "steady"): 1.3, ("strimzi", "one-shot"): 1.3, ("health", "one-shot"): 1.3}
RSS_TARGET = (40_000, "strimzi", 4, 300e6)  # partitions, rules, connections, bytes


def target(rules: str, way: str, partitions: int) -> float | None:
    steps = TARGETS[(rules, way)]
    at = [p for p in steps if p <= partitions]
    return steps[max(at)] if at else None


def fmt(values: list[float]) -> str:
    m = statistics.median(values)
    text = f"{m:.2f} s" if m >= 0.995 else f"{m * 1000:.0f} ms"
    return f"{text} (n={len(values)})"


def phases(seconds: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f} s" for k, v in seconds.items()) or "not seen"


def _x(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.2f}x"


def table(results) -> None:
    print("\nOne-shot: jmx_exporter = server start to the last byte of its first /metrics response; "
          "sidecar = the `scrape` process, start to exit; floor = the floor client's JVM start, raw listing "
          "and one steady poll.")
    print("Steady: jmx_exporter = a later /metrics request; sidecar = a steady poll of `serve` from its self metrics "
          "(read + rules + render), not its /metrics response time (served from the last snapshot); floor = "
          "the floor client's health queries and reads at the sidecar's connections.")
    print("ratio = jmx_exporter / sidecar; floor = sidecar / floor client (1.00x: as fast as a minimal client). "
          "Medians of n runs.\n")
    head = (f"{'broker':<36} {'rules':<8} {'release':<8} {'series':>9} | {'one-shot: jmx_exporter':>24} "
            f"{'sidecar':>16} {'ratio':>7} {'floor':>7} | {'steady: jmx_exporter':>22} {'sidecar':>16} "
            f"{'ratio':>7} {'floor':>7}")
    print(head)
    print("-" * len(head))
    for r in results:
        print(f"{r.broker.label:<36} {r.rules:<8} {r.release:<8} {r.series:>9,} | {fmt(r.exporter_one_shot):>24} "
              f"{fmt(r.sidecar_one_shot):>16} {r.ratio('one-shot'):>6.1f}x {_x(r.over_floor('one-shot')):>7} | "
              f"{fmt(r.exporter_steady):>22} {fmt(r.steady.polls):>16} {r.ratio('steady'):>6.1f}x "
              f"{_x(r.over_floor('steady')):>7}")


def details(results) -> None:
    print("\nSidecar steady polls in detail (median): the poll (JMX read + rules) and the render; "
          "the histogram's mean over the window; jmx_exporter's own jmx_scrape_duration_seconds in its steady "
          "responses (1.x prints the previous scrape's):")
    for r in results:
        s = r.steady
        print(f"  {r.name}: poll {statistics.median(s.reads) * 1000:.0f} ms + render "
              f"{statistics.median(s.renders) * 1000:.0f} ms; histogram mean {s.histogram_mean * 1000:.0f} ms "
              f"over {s.window_polls} polls; first poll {s.first_poll:.2f} s"
              f"{f'; {s.names_polls} re-listed the names' if s.names_polls else ''}; {s.mbeans:,.0f} MBeans in "
              f"{s.round_trips:,.0f} RMI round trips; jmx_exporter's own {statistics.median(r.exporter_own):.2f} s"
              f"{f'; values read again {r.value_rereads}x' if r.value_rereads else ''}")
        print(f"    phases of the first poll: {phases(s.first_phases)}; of the last steady poll: {phases(s.phases)}")


def connections(results) -> None:
    print("\nBy connections (sidecar.connections): serve's steady poll and the broker's CPU seconds per poll, the "
          "floor client's poll and CPU at the same connections, jmx_exporter's broker CPU per scrape:")
    for r in results:
        if not r.sweep:
            continue
        ex_cpu = statistics.median(r.exporter_cpu) if r.exporter_cpu else float("nan")
        print(f"  {r.name}: jmx_exporter {statistics.median(r.exporter_steady):.2f} s a scrape, broker CPU "
              f"{ex_cpu:.2f} s a scrape")
        for n, s in sorted(r.sweep.items()):
            poll = statistics.median(s.polls)
            line = (f"    {n} connection(s): poll {poll:.3f} s ({statistics.median(r.exporter_steady) / poll:.1f}x "
                    f"jmx_exporter), broker CPU {s.broker_cpu:.3f} s a poll ({ex_cpu / s.broker_cpu:.1f}x less than "
                    f"jmx_exporter's), peak RSS {memory(s.peak_rss)}")
            f = r.floor
            if f is not None and n in f.reads:
                line += (f"; floor poll {f.poll(n):.3f} s (sidecar {poll / f.poll(n):.2f}x), floor broker CPU "
                         f"{f.broker_cpu(n):.3f} s")
            print(line)


def judged(results) -> bool:
    print(f"\nTargets (judged at {JUDGED_FROM:,} partitions and more):")
    ok_all = True
    for r in results:
        parts = []
        for way in ("one-shot", "steady"):
            want, ratio = target(r.rules, way, r.broker.partitions), r.ratio(way)
            if want is None:
                parts.append(f"{way} {ratio:.1f}x (not judged at this size)")
            else:
                ok = ratio >= want
                ok_all &= ok
                parts.append(f"{way} {ratio:.1f}x (target >= {want:.0f}x) {'OK' if ok else 'MISSED'}")
            most = FLOOR_TARGETS.get((r.rules, way))
            over = r.over_floor(way)
            if most is not None and want is not None and not math.isnan(over):
                ok = over <= most
                ok_all &= ok
                parts.append(f"{way} {over:.2f}x the floor (target <= {most}x) {'OK' if ok else 'MISSED'}")
        size, rules, conns, limit = RSS_TARGET
        if r.broker.partitions >= size and r.rules == rules and conns in r.sweep:
            rss = r.sweep[conns].peak_rss
            ok = rss < limit
            ok_all &= ok
            parts.append(f"peak RSS at {conns} connections {memory(rss)} (target < {limit / 1e6:.0f} MB) "
                         f"{'OK' if ok else 'MISSED'}")
        print(f"  {r.name}: " + "; ".join(parts))
    return ok_all


def report(results) -> bool:
    table(results)
    details(results)
    connections(results)
    print(f"\nOutputs: in the {len(results)} configuration(s) above, `scrape` and `serve` printed the families and "
          f"series jmx_exporter printed (0.x naming against 0.20.0, 1.x against 1.x), values alike where they did "
          f"not move")
    return judged(results)
