"""A whole cluster in one run: three brokers' archives (three_brokers.py, read from HDFS) backfill
into each broker's own series and the cluster-wide view's, with the values worked out by hand."""
from __future__ import annotations

import json

from kafka_jmx_sidecar.exporter.backfill.grid import common_steps
from tests.exporter.backfill.three_brokers import ABSENT, EXPECTED, STEPS


def read_series(out) -> dict[str, list]:
    found: dict[str, dict[int, float]] = {}
    for f in sorted(out.glob("*.om")):
        for line in f.read_text().splitlines():
            if not line.startswith("#"):
                series, value, ts = line.rsplit(" ", 2)
                found.setdefault(series, {})[int(ts)] = float(value)
    return {s: [v.get(t) for t in STEPS] for s, v in found.items()}


def test_each_partition_once_under_its_leader_and_a_gap_where_a_broker_is_missing(three_brokers_run):
    ran = three_brokers_run
    assert ran.code == 0, ran.stderr[-3000:]
    series = read_series(ran.out)
    for name, values in EXPECTED.items():
        assert series.get(name) == values, name
    assert not any(s.startswith(ABSENT) for s in series)
    assert "cluster-wide view of 3 brokers' archives: 6 of 9 steps have a poll of every broker" in ran.stderr
    manifest = json.loads((ran.out / "manifest.json").read_text())
    assert manifest["inputs"]["archive_files"] == 3 and manifest["inputs"]["rejected"] == 0


def test_the_steps_every_archive_holds():
    assert common_steps({"1": [(0, 4), (5, 8)], "2": [(1, 8)], "3": [(1, 3), (4, 4), (7, 7), (8, 8)]}) == [
        (1, 4), (7, 8)]
    assert common_steps({"1": [(0, 3)], "2": [(5, 9)]}) == []  # never together
    assert common_steps({"1": [(2, 1)]}) == []  # a poll that holds no step
