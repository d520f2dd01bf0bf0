"""The writer on hand-written rows: the exact bytes (worked out by hand from the grid), on a grid of
whole seconds and on one of milliseconds, with the time stamps formatted once per task or per run;
and the files handed to Spark's writer in pieces."""
from __future__ import annotations

from collections import namedtuple

import pytest

from kafka_jmx_sidecar.exporter.backfill import openmetrics
from kafka_jmx_sidecar.exporter.backfill.grid import Grid
from tests.exporter.backfill.conftest import WINDOW, _backfill

Row = namedtuple("Row", "family type series value k0 k1")
URP = "kafka_cluster_partition_underreplicated"
ROWS = [
    Row(URP, "gauge", URP + '{partition="0"}', 0.0, 0, 1),
    Row(URP, "gauge", URP + '{partition="0"}', 1.0, 1, 2),  # step 1 is already written: kept once
    Row(URP, "gauge", URP + '{partition="1"}', float("nan"), 2, 2),
    Row("kafka_controller_kafkacontroller_offlinepartitionscount", "gauge",
        "kafka_controller_kafkacontroller_offlinepartitionscount", 2.0, 0, 0),
]
SECONDS = (
    "# TYPE kafka_cluster_partition_underreplicated gauge\n"
    'kafka_cluster_partition_underreplicated{partition="0"} 0.0 1795298400\n'
    'kafka_cluster_partition_underreplicated{partition="0"} 0.0 1795298415\n'
    'kafka_cluster_partition_underreplicated{partition="0"} 1.0 1795298430\n'
    'kafka_cluster_partition_underreplicated{partition="1"} NaN 1795298430\n'
    "# TYPE kafka_controller_kafkacontroller_offlinepartitionscount gauge\n"
    "kafka_controller_kafkacontroller_offlinepartitionscount 2.0 1795298400\n"
    "# EOF\n"
)


def files(index, rows, grid, max_bytes, piece_bytes=openmetrics.PIECE_BYTES) -> dict[str, tuple[str, tuple]]:
    """{name: (text, figures)}: each file's pieces (pieces_of) joined; they come numbered in order,
    whole lines each, the file's figures with its last."""
    pieces: dict[str, list] = {}
    for name, number, data, figures in openmetrics.pieces_of(index, rows, grid, max_bytes, piece_bytes):
        assert number == len(pieces.setdefault(name, [])) and data.endswith(b"\n")
        assert all(p[1] is None for p in pieces[name])  # no piece after the one with the figures
        pieces[name].append((data, figures))
    return {name: (b"".join(d for d, _ in ps).decode(), ps[-1][1]) for name, ps in pieces.items()}


@pytest.mark.parametrize("kept, piece", [(openmetrics.STAMPS_KEPT, openmetrics.PIECE_BYTES), (0, 1)])
def test_bytes_on_a_grid_of_seconds(monkeypatch, kept, piece):
    """Whatever the pieces (a byte: a piece per run of steps), the same file."""
    monkeypatch.setattr(openmetrics, "STAMPS_KEPT", kept)
    got = files(3, iter(ROWS), Grid(1795298400_000, 15_000, 3), 1 << 20, piece)
    assert got == {"metrics-00003-0000.om": (SECONDS, ("metrics-00003-0000.om", len(SECONDS), 3, 5, 0, 2))}


@pytest.mark.parametrize("kept", [openmetrics.STAMPS_KEPT, 0])
def test_a_grid_of_milliseconds_writes_every_time_with_three_decimals(monkeypatch, kept):
    monkeypatch.setattr(openmetrics, "STAMPS_KEPT", kept)
    got = files(0, iter(ROWS[:2]), Grid(1795298400_000, 500, 3), 1 << 20)
    assert got["metrics-00000-0000.om"][0] == (
        "# TYPE kafka_cluster_partition_underreplicated gauge\n"
        'kafka_cluster_partition_underreplicated{partition="0"} 0.0 1795298400.000\n'
        'kafka_cluster_partition_underreplicated{partition="0"} 0.0 1795298400.500\n'
        'kafka_cluster_partition_underreplicated{partition="0"} 1.0 1795298401.000\n'
        "# EOF\n")


def test_files_are_cut_at_series_boundaries_past_the_size():
    got = files(0, iter(ROWS), Grid(1795298400_000, 15_000, 3), 1)
    # past 1 byte every series starts a file of its own, which opens with its family's # TYPE
    assert [(g[0], g[2], g[3], g[4], g[5]) for _, g in got.values()] == [
        ("metrics-00000-0000.om", 1, 3, 0, 2), ("metrics-00000-0001.om", 1, 1, 2, 2),
        ("metrics-00000-0002.om", 1, 1, 0, 0)]
    lines = SECONDS.splitlines(keepends=True)
    assert got["metrics-00000-0001.om"][0] == lines[0] + lines[4] + "# EOF\n"
    assert got["metrics-00000-0002.om"][0] == "".join(lines[5:])


def test_pieces_through_spark_make_the_same_files(monkeypatch, command_runs, hand_dumps, tmp_path):
    """Spark's writer gets each file in pieces sorted by (file, piece) (writing.py): files of up to
    2000 bytes in pieces of 64 bytes, dozens a file and several files a task, come out byte for
    byte as the same run's files made of one piece each (the default piece is 4 MiB)."""
    monkeypatch.setattr(openmetrics, "PIECE_BYTES", 64)  # read on the driver, passed to the tasks
    ran = _backfill(hand_dumps, tmp_path / "out", *WINDOW, "--max-file-bytes", "2000", "--summary", "json")
    want = command_runs["split"]
    assert ran.code == want.code == 3, ran.stderr
    names = sorted(p.name for p in want.out.iterdir())
    assert sorted(p.name for p in ran.out.iterdir()) == names and len([n for n in names if n.endswith(".om")]) > 3
    assert all((ran.out / name).read_bytes() == (want.out / name).read_bytes() for name in names)
