"""Describe dumps as a source: a dump's time, and every way a line is rejected, with exact counts."""
from __future__ import annotations

import io
import os
import re
from collections import Counter

from kafka_jmx_sidecar.exporter.backfill import describe_dumps as dd
from kafka_jmx_sidecar.mbeans.bounded_lines import MAX_LINE_BYTES

T0 = 1795298400_000  # 2026-11-21T22:00:00Z
HEADER = "Topic: orders\tTopicId: x\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2\n"


def line(p, leader, replicas, isr):
    return f"\tTopic: orders\tPartition: {p}\tLeader: {leader}\tReplicas: {replicas}\tIsr: {isr}\n"


def test_time_from_the_name():
    for name in ("2026-11-21T22-00-00Z_describe.txt", "describe-2026-11-21T22:00:00Z.txt",
                 "x_2026-11-21T22-00-00_y_2027-01-01T00-00-00Z", "hdfs://nn:8020/d/2026-11-21T22-00-00Z.txt"):
        assert dd.dump_time(name, 0) == (T0, "name"), name
    # the name's own timestamp, not one of a directory above it
    assert dd.dump_time("hdfs://nn/2026-11-21T22-00-00Z/dump.txt", 5) == (5, "mtime")


def test_time_from_a_regex_or_the_mtime():
    assert dd.dump_time("/d/dump.1795298400.txt", 0, re.compile(r"dump\.(?P<time>\d+)\.txt")) == (T0, "regex")
    assert dd.dump_time("/d/nodate.txt", T0 + 60_000) == (T0 + 60_000, "mtime")


def _rows(path):
    with open(path, "rb") as f:
        return list(dd.read_dump(str(path), f, T0))


def _reasons(rows):
    return Counter(r.reason for r in rows if r[0] == "r")


def test_a_good_dump(tmp_path):
    f = tmp_path / "a"
    f.write_text(HEADER + line(0, 1, "1,2,3", "1,2") + line(1, "none", "2,3,1", "3"))
    rows = _rows(f)
    states = [r for r in rows if r[0] == "s"]
    # (topic, partition, leader, has_leader, leader_live, replicas, adding, reassigning, isr, min_isr, elr,
    # placeholders): a dump without Elr: leaves the ELR unknown (None), not 0
    assert [r[2:14] for r in states] == [("orders", 0, 1, True, True, 3, 0, False, 2, 2, None, 0),
                                         ("orders", 1, -1, False, False, 3, 0, False, 1, 2, None, 0)]
    assert [r.line for r in rows if r[0] == "f"] == [3]  # lines read
    assert not _reasons(rows)


def test_a_dump_with_elr_columns(tmp_path):
    f = tmp_path / "a"
    f.write_text(HEADER + line(0, 1, "1,2,3", "1").rstrip("\n") + "\tElr: 2,3\tLastKnownElr: \n"
                 + line(1, "none", "2,3,1", "").rstrip("\n") + "\tElr: \tLastKnownElr: 2\n"
                 + line(2, 1, "1,2,3", "1,2,3").rstrip("\n") + "\tElr: N/A\tLastKnownElr: N/A\n")
    assert [(r.partition, r.elr) for r in _rows(f) if r.kind == "s"] == [(0, 2), (1, 0), (2, None)]


def test_bad_lines_are_counted_by_reason(tmp_path):
    f = tmp_path / "bad"
    f.write_bytes((HEADER + line(0, 1, "1,2,3", "1,2,3") + "Error while executing topic command\n"
                   + line(0, 1, "1,2,3", "1,2") + "\tTopic: orders\tPartition: 1\tLeader: x\tReplicas: 1\tIsr: 1\n"
                   ).encode() + b"\xff\xfe garbage\n" + line(2, 1, "1", "1").encode() + b"\tTopic: orders\tPart")
    rows = _rows(f)
    assert _reasons(rows) == {dd.UNPARSABLE: 2, dd.DUPLICATE: 1, dd.NOT_TEXT: 1, dd.TORN_LAST_LINE: 1}
    assert [r.line for r in rows if r[0] == "r"] == [3, 4, 5, 6, 8]  # line numbers, in order
    assert len([r for r in rows if r[0] == "s"]) == 2
    assert [r.line for r in rows if r[0] == "f"] == [8]


class _Failing(io.BytesIO):
    """A file whose read fails after its first two lines (a disk error, a file system gone)."""

    def read1(self, n=-1):
        if self.tell():
            raise OSError(5, "Input/output error")
        return super().read1(len(HEADER) + len(line(0, 1, "1,2,3", "1,2")))

    read = read1


def test_empty_files_and_reads_that_fail(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("")
    assert _reasons(_rows(empty)) == {dd.NO_PARTITIONS: 1}
    text = (HEADER + line(0, 1, "1,2,3", "1,2") + line(1, 1, "1,2,3", "1,2")).encode()
    rows = list(dd.read_dump("broken", _Failing(text), T0))
    # what was read stands; the rest is a reject that names the error
    assert _reasons(rows) == {dd.UNREADABLE: 1} and [r.partition for r in rows if r.kind == "s"] == [0]
    assert "Input/output error" in next(r.detail for r in rows if r.kind == "r")


def test_listing_orders_by_time(tmp_path, spark):
    """Directories walked, names Hadoop's readers skip (`.`, `_`) skipped, each file named as the
    input was given, ordered by time."""
    from kafka_jmx_sidecar.exporter.backfill.storage import Storage

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "2026-11-21T22-01-00Z.txt").write_text("")
    (tmp_path / "2026-11-21T22-00-00Z.txt").write_text("")
    (tmp_path / ".hidden-2026-11-21T21-00-00Z.txt").write_text("")
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / "_temporary").mkdir()
    (tmp_path / "_temporary" / "2026-11-21T21-00-00Z.txt").write_text("")
    (tmp_path / "sub" / "nodate.txt").write_text("")
    os.utime(tmp_path / "sub" / "nodate.txt", (1795298430, 1795298430))
    dumps = dd.dumps_of(Storage(spark.sparkContext).files(str(tmp_path)))
    assert [(d.path, d.time_ms, d.time_from) for d in dumps] == [
        (f"{tmp_path}/2026-11-21T22-00-00Z.txt", T0, "name"), (f"{tmp_path}/sub/nodate.txt", T0 + 30_000, "mtime"),
        (f"{tmp_path}/sub/2026-11-21T22-01-00Z.txt", T0 + 60_000, "name")]
    assert dumps[0].uri == f"file:{tmp_path}/2026-11-21T22-00-00Z.txt"


def test_a_line_longer_than_any_real_one_and_impossible_states(tmp_path):
    """The bounds `health` applies (mbeans/bounded_lines.py, partition_states.py), here per line and
    counted by reason: a line past MAX_LINE_BYTES is skipped unread, a broker listed twice is no state."""
    f = tmp_path / "d"
    with open(f, "wb") as out:
        out.write((HEADER + line(0, 1, "1,2,3", "1,2")).encode())
        out.write(b"\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: " + b"1," * (MAX_LINE_BYTES // 2) + b"1\tIsr: 1\n")
        out.write((line(2, 1, "1,2,1", "1") + line(1, 1, "1,2,3", "1,2,3")).encode())
    rows = _rows(f)
    assert _reasons(rows) == {dd.TOO_LONG: 1, dd.IMPOSSIBLE: 1}
    rejects = [r for r in rows if r[0] == "r"]
    assert [(r.line, r.reason) for r in rejects] == [(3, dd.TOO_LONG), (4, dd.IMPOSSIBLE)]
    assert rejects[0].text.startswith("\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 1,1,")
    assert len(rejects[0].text) == 200 and "Replicas: lists broker 1 more than once" in rejects[1].detail
    assert [(r.partition, r.replicas, r.isr, r.min_isr) for r in rows if r[0] == "s"] == [(0, 3, 2, 2), (1, 3, 3, 2)]
    assert [r.line for r in rows if r[0] == "f"] == [5]
