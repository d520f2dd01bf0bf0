"""bench/vs_jmx_exporter.py: its output check, and the whole benchmark end to end at a tiny size
(the simulator at 200 partitions, the health rules, jmx_exporter 0.20.0, the floor client, serve at
one connection count besides its default), so `make test` keeps the program `make bench` runs
working. The full-size run is `make bench`'s, not a test's."""
from __future__ import annotations

import importlib
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = "bench.vs_jmx_exporter"


@pytest.fixture(scope="module")
def bench():
    return importlib.import_module(BENCH)


THEIRS = """# HELP kafka_server_a A.
# TYPE kafka_server_a gauge
kafka_server_a{topic="t",partition="0",} 1.0
kafka_server_a{topic="t",partition="1",} 0.0
# HELP jmx_scrape_duration_seconds Time this JMX scrape took, in seconds.
# TYPE jmx_scrape_duration_seconds gauge
jmx_scrape_duration_seconds 3.5
"""


def test_the_check_takes_series_as_sets_and_leaves_self_metrics_out(bench):
    zero, one = 'kafka_server_a{topic="t",partition="0",} 1.0\n', 'kafka_server_a{topic="t",partition="1",} 0.0\n'
    reordered = THEIRS.replace(zero + one, one + zero)
    assert reordered != THEIRS
    ours = reordered.replace("jmx_scrape_duration_seconds 3.5", "jmx_scrape_duration_seconds 0.1")
    assert bench.shape_differences(bench.parsed(ours), bench.parsed(THEIRS)) == []
    bench.abort_if([], "nothing")


def test_the_check_reports_a_missing_series_a_help_text_and_a_value_that_did_not_move(bench):
    ours = THEIRS.replace('kafka_server_a{topic="t",partition="1",} 0.0\n', "").replace("# HELP kafka_server_a A.",
                                                                                       "# HELP kafka_server_a B.")
    found = bench.shape_differences(bench.parsed(ours), bench.parsed(THEIRS))
    assert "series missing: kafka_server_a{topic=\"t\",partition=\"1\",}" in found
    assert any(line.startswith("family kafka_server_a:") for line in found)
    with pytest.raises(bench.OutputsDiffer, match=r"2 difference\(s\)"):
        bench.abort_if(found, "here")

    moved = THEIRS.replace('partition="0",} 1.0', 'partition="0",} 5.0')
    ours = THEIRS.replace('partition="1",} 0.0', 'partition="1",} 7.0').replace('partition="0",} 1.0',
                                                                               'partition="0",} 9.0')
    suspects = bench.value_suspects(bench.parsed(THEIRS), bench.parsed(ours), bench.parsed(moved))
    # partition 0 moved between jmx_exporter's two readings; partition 1 did not, and ours differs
    assert suspects == {("kafka_server_a", '{topic="t",partition="1",}')}


def test_self_metrics_come_from_the_last_gzip_member():
    runs = importlib.import_module("bench.vs_jmx_exporter_runs")

    def member(text: str) -> bytes:
        z = zlib.compressobj(1, zlib.DEFLATED, 31)
        return z.compress(text.encode()) + z.flush()
    body = member("snapshot 1\n" * 10_000) + member("jmx_scrape_duration_seconds 0.25\n")
    assert runs._last_gzip_member(body) == b"jmx_scrape_duration_seconds 0.25\n"
    assert runs._last_gzip_member(member("only\n")) == b"only\n"


def test_the_benchmark_runs_end_to_end_at_a_tiny_size():
    proc = subprocess.run([sys.executable, "-m", BENCH, "--sizes", "200", "--skip-real-broker", "--rules", "health",
                           "--releases", "0.20.0", "--repeat", "1", "--polls", "2", "--poll-interval", "1",
                           "--timeout", "120", "--connections", "1", "--floor-polls", "1"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    out = proc.stdout
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{proc.stderr[-3000:]}"
    # the check passed on jmx_exporter's and the sidecar's outputs, and on serve's snapshot
    checked = re.search(r"outputs the same: ([\d,]+) families, ([\d,]+) series", out)
    assert checked and int(checked.group(2).replace(",", "")) > 200, out
    assert "snapshot the same as jmx_exporter's" in out
    assert "Outputs: in the 1 configuration(s) above, `scrape` and `serve` printed the families and series" in out
    # the table row: series, both ways' medians and ratios
    row = re.search(r"^simulator, 200 partitions\s+health\s+0\.20\.0\s+([\d,]+) \|(.*)\|(.*)$", out, re.M)
    assert row, out
    assert int(row.group(1).replace(",", "")) == int(checked.group(2).replace(",", ""))
    for way in (row.group(2), row.group(3)):
        times = re.findall(r"([\d.]+) (s|ms) \(n=(\d+)\)", way)
        assert len(times) == 2 and all(float(t) > 0 for t, _, _ in times), way
        ratio, over_floor = re.findall(r"([\d.]+)x", way)
        assert float(ratio) > 0 and float(over_floor) > 0, way
    # the floor client read what the health rules include, but the Partition gauges its queries answer
    floor = re.search(r"== floor client, simulator, 200 partitions, health rules: JVM start [\d.]+ s; .*"
                      r"listing [\d.]+ s \(([\d,]+) names\); query Value!=0 on kafka.cluster:type=Partition,\* \d+ ms "
                      r"\(([\d,]+) hits\).* read ([\d,]+) MBeans on 1 connection\(s\) [\d.]+ s", out)
    assert floor, out
    names, hits, read = (int(g.replace(",", "")) for g in floor.groups())
    assert 0 < read < names and hits > 0
    # serve at 1 connection: its poll, the broker's CPU per poll beside jmx_exporter's per scrape
    assert re.search(r"jmx_exporter [\d.]+ s a scrape, broker CPU [\d.]+ s a scrape\n"
                     r"(    .*\n)*    1 connection\(s\): poll [\d.]+ s .* broker CPU [\d.]+ s a poll .*; "
                     r"floor poll [\d.]+ s", out), out
    assert "one-shot" in out and "not judged at this size" in out
    assert re.search(r"machine: \d+ CPUs, load average", out)
