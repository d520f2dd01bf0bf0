"""The backfill job end to end on hand-written describe dumps, with real Spark, real promtool and a
real Prometheus: the values are worked out by hand from the dumps (Kafka's definitions), not by the code."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.backfill import job
from tests.e2e.prometheus_server import VERSIONS, Prometheus
from tests.exporter.backfill.prometheus_tsdb import promtool_import

T0 = 1795298400  # 2026-11-21T22:00:00Z
HEADER = "Topic: orders\tTopicId: x\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: min.insync.replicas=2\n"


def p(n, leader, replicas, isr, adding=None, removing=None):
    text = f"\tTopic: orders\tPartition: {n}\tLeader: {leader}\tReplicas: {replicas}\tIsr: {isr}"
    if adding is not None:
        text += f"\tAdding Replicas: {adding}\tRemoving Replicas: {removing}"
    return text + "\n"


DUMPS = {
    # all in sync
    "2026-11-21T22-00-00Z_describe.txt": HEADER + p(0, 1, "1,2,3", "1,2,3") + p(1, 2, "2,3,1", "2,3,1"),
    # p0 at min ISR; p1 lost its leader (Kafka keeps the last ISR member)
    "2026-11-21T22-01-00Z_describe.txt": HEADER + p(0, 1, "1,2,3", "1,2") + p(1, "none", "2,3,1", "3"),
    # p0 under min ISR; p1 back, moving from 1 to 4 (4 adding, not yet in the ISR), and a bad line
    "2026-11-21T22-02-00Z_describe.txt": HEADER + p(0, 1, "1,2,3", "1") + p(1, 2, "2,3,1,4", "2,3,1", "4", "1")
    + "Error while executing topic command : Timed out\n",
}
# steps every 30 s from 22:00:00 to 22:02:30: each dump holds two steps
STEPS = [T0 + 30 * k for k in range(6)]
EXPECTED_3_7 = {
    "kafka_server_replicamanager_underreplicatedpartitions": [0, 0, 1, 1, 1, 1],
    "kafka_server_replicamanager_underminisrpartitioncount": [0, 0, 0, 0, 1, 1],
    "kafka_server_replicamanager_atminisrpartitioncount": [0, 0, 1, 1, 0, 0],
    "kafka_server_replicamanager_reassigningpartitions": [0, 0, 0, 0, 1, 1],
    "kafka_server_replicamanager_leadercount": [2, 2, 1, 1, 2, 2],
    "kafka_controller_kafkacontroller_offlinepartitionscount": [0, 0, 1, 1, 0, 0],
    'kafka_cluster_partition_underreplicated{leader="1",partition="0",topic="orders"}': [0, 0, 1, 1, 1, 1],
    'kafka_cluster_partition_atminisr{leader="1",partition="0",topic="orders"}': [0, 0, 1, 1, 0, 0],
    'kafka_cluster_partition_underminisr{leader="1",partition="0",topic="orders"}': [0, 0, 0, 0, 1, 1],
    'kafka_cluster_partition_insyncreplicascount{leader="1",partition="0",topic="orders"}': [3, 3, 2, 2, 1, 1],
    # the leaderless partition is a series of its own (leader "none"): unavailable, 0 on every broker gauge
    'kafka_cluster_partition_unavailable{leader="none",partition="1",topic="orders"}': [None, None, 1, 1, None, None],
    'kafka_cluster_partition_underreplicated{leader="none",partition="1",topic="orders"}': [None, None, 0, 0, None, None],
    'kafka_cluster_partition_unavailable{leader="2",partition="1",topic="orders"}': [0, 0, None, None, 0, 0],
    # KIP-352: the adding replica does not count, so neither URP nor ReplicasCount 4
    'kafka_cluster_partition_underreplicated{leader="2",partition="1",topic="orders"}': [0, 0, None, None, 0, 0],
    'kafka_cluster_partition_replicascount{leader="2",partition="1",topic="orders"}': [3, 3, None, None, 3, 3],
}


def write_dumps(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in DUMPS.items():
        (directory / name).write_text(text)
    return directory


def read_series(out: Path) -> dict[str, list]:
    """{series: [value or None per step]} from every output file."""
    found: dict[str, dict[int, float]] = {}
    for f in sorted(out.glob("*.om")):
        for line in f.read_text().splitlines():
            if line.startswith("#"):
                continue
            series, value, ts = line.rsplit(" ", 2)
            found.setdefault(series, {})[int(ts)] = float(value)
    return {s: [v.get(t) for t in STEPS] for s, v in found.items()}


def options(inputs, out, **kw):
    return job.Options([str(inputs)], str(out), start="2026-11-21T22:00:00Z", end="2026-11-21T22:02:30Z",
                       step="30s", **kw)


@pytest.fixture(scope="module")
def first_run(spark, hand_dumps, tmp_path_factory):
    base = tmp_path_factory.mktemp("backfill")
    code = job.run(options(hand_dumps, base / "out"))
    return base, hand_dumps, code


def test_values_as_worked_out_by_hand(first_run):
    base, _, code = first_run
    series = read_series(base / "out")
    for name, values in EXPECTED_3_7.items():
        assert series.get(name) == values, name
    assert code == job.EXIT_REJECTS  # one line rejected, and --max-reject-ratio is 0 by default


def test_files_are_what_promtool_accepts_as_they_are(first_run):
    out = first_run[0] / "out"
    for f in out.glob("*.om"):
        data = f.read_bytes()
        assert data.endswith(b"\n# EOF\n") and b"\n\n" not in data and data.count(b"# EOF") == 1
        samples = [line.rsplit(" ", 2) for line in data.decode().splitlines() if not line.startswith("#")]
        for series, _, ts in samples:
            assert ts.isdigit()  # seconds
        # each series' samples in time order, no timestamp twice
        by_series: dict[str, list[int]] = {}
        for series, _, ts in samples:
            by_series.setdefault(series, []).append(int(ts))
        assert all(t == sorted(set(t)) for t in by_series.values())


def test_manifest_and_rejects(first_run):
    out = first_run[0] / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"] == {"files": 3, "lines": 10, "partition_states": 6, "rejected": 1,
                                  "rejected_by_reason": {"unparsable-line": 1}}
    assert manifest["start"] == "2026-11-21T22:00:00Z" and manifest["end"] == "2026-11-21T22:02:30Z"
    assert manifest["samples"] == sum(f["samples"] for f in manifest["files"])
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert [(os.path.basename(r["file"]), r["line"], r["reason"]) for r in rejects] == [
        ("2026-11-21T22-02-00Z_describe.txt", 4, "unparsable-line")]


def test_a_rerun_writes_identical_bytes_and_the_reject_ratio_decides_the_exit_code(first_run, command_runs):
    base = first_run[0]
    again = command_runs["again"]  # the command, --max-reject-ratio 0.1
    assert again.code == 0, again.stderr  # 1 of 10 lines
    names = sorted(os.listdir(base / "out"))
    assert names == sorted(os.listdir(again.out))
    for name in names:
        assert (base / "out" / name).read_bytes() == (again.out / name).read_bytes(), name
    # and nothing of the partial directory is left beside either
    assert [n for d in (base, again.out.parent) for n in os.listdir(d) if n.startswith(".")] == []


@pytest.mark.parametrize("importer,server", [*((v, v) for v in VERSIONS), ("3", "2")])
def test_prometheus_returns_the_values_after_promtool(first_run, tmp_path, importer, server):
    """Prometheus 2's promtool and server, Prometheus 3's (its `tsdb create-blocks-from
    openmetrics` reads the same files), and promtool 3's blocks in a Prometheus 2."""
    out = first_run[0] / "out"
    tsdb = tmp_path / "tsdb"
    promtool_import([str(f) for f in sorted(out.glob("*.om"))], str(tsdb), importer)
    prom = Prometheus.of(server, None, tsdb=str(tsdb))
    try:
        got = prom.query_range("kafka_server_replicamanager_underreplicatedpartitions", T0, T0 + 150, 30)
        assert got == {"": list(zip(map(float, STEPS), [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]))}
        got = prom.query_range('kafka_cluster_partition_atminisr{topic="orders",partition="0"}', T0, T0 + 150, 30)
        assert got == {"leader=1,partition=0,topic=orders": list(zip(map(float, STEPS), [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]))}
        got = prom.query_range("kafka_controller_kafkacontroller_offlinepartitionscount", T0, T0 + 150, 30)
        assert [v for _, v in got[""]] == [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    finally:
        prom.stop()


def test_small_files_split_at_series_boundaries(first_run, command_runs):
    base = first_run[0]
    out = command_runs["split"].out  # the command, --max-file-bytes 2000
    files = sorted(out.glob("*.om"))
    assert len(files) > 3
    seen: dict[str, str] = {}
    for f in files:
        data = f.read_text()
        assert data.endswith("\n# EOF\n")
        for line in data.splitlines():
            if not line.startswith("#"):
                series = line.rsplit(" ", 2)[0]
                assert seen.setdefault(series, f.name) == f.name, f"{series} split over two files"
    assert read_series(out) == read_series(base / "out")


def test_legacy_semantics_and_parquet(first_run, tmp_path, spark):
    _, inputs, _ = first_run
    out = tmp_path / "legacy"
    job.run(options(inputs, out, semantics="legacy", max_reject_ratio=1.0))
    series = read_series(out)
    # before KIP-352 the adding replica counts: p1 is under-replicated during the move
    assert series["kafka_server_replicamanager_underreplicatedpartitions"] == [0, 0, 1, 1, 2, 2]
    assert series['kafka_cluster_partition_replicascount{leader="2",partition="1",topic="orders"}'] == [3, 3, None, None, 4, 4]
    pq = tmp_path / "parquet"
    job.run(options(inputs, pq, semantics="legacy", format="parquet", max_reject_ratio=1.0))
    files = sorted(pq.glob("*.parquet"))
    rows = spark.read.parquet(*map(str, files)).collect()
    from_parquet: dict[str, dict[int, float]] = {}
    for r in rows:
        from_parquet.setdefault(r.series, {})[r.timestamp_ms // 1000] = r.value
    assert {s: [v.get(t) for t in STEPS] for s, v in from_parquet.items()} == series
