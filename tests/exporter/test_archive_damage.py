"""Damaged archives, byte by byte: files written by the real writer (schema 2) from polls made by
hand, damaged here, read back with the reader; the checksums as docs/archive-format.md tells a
user to check them (zlib here, not the reader's code); schema 1 files as the previous writer wrote
them (tests/exporter/archive_schema_1.jsonl, its output for test_archive_writer's three polls)."""
from __future__ import annotations

import dataclasses
import shutil
import zlib
from pathlib import Path

from kafka_jmx_sidecar.exporter.archive.reader import Rejects, read_archive, read_polls, states_at
from tests.exporter.test_archive_reader import CHANGE_1015, CHANGE_1030, HEADER, KEYFRAME
from tests.exporter.test_archive_writer import T0, make_writer, polls_by_hand

SCHEMA_1 = Path(__file__).with_name("archive_schema_1.jsonl")
NAME = "2026-11-18T11Z.jsonl"  # T0's hour


def write_polls(tmp_path, interval: float, times: list[float]) -> Path:
    """The three polls by hand (then the last again) at `times`, a keyframe every `interval` s."""
    writer, _ = make_writer(tmp_path, keyframe_interval=interval)
    facts = polls_by_hand()
    for i, t in enumerate(times):
        assert writer.write(dataclasses.replace(facts[min(i, 2)], t=t))
    writer.close()
    return tmp_path / "archive" / NAME


def damaged(path: Path, old: bytes, new: bytes, after: bytes = b"") -> tuple[str, list, Rejects]:
    """The file with the first `old` after `after` replaced by `new`, read back."""
    data = path.read_bytes()
    at = data.index(old, data.index(after))
    path.write_bytes(data[:at] + new + data[at + len(old):])
    rejects = Rejects()
    return str(path), list(read_polls(str(path), rejects)), rejects


def test_each_block_carries_the_checksum_the_format_page_describes(tmp_path):
    path = write_polls(tmp_path, 30, [T0, T0 + 15, T0 + 30])
    blocks = []
    block = b""
    for line in path.read_bytes().splitlines(keepends=True):
        block += line
        if line.startswith((b'{"k":"archive"', b'{"k":"end"')):  # a block's last line
            blocks.append(block)
            block = b""
    assert block == b"" and len(blocks) == 2 * 2 + 1  # two keyframes with their headers, a change poll
    for b in blocks:
        head, _, tail = b.rpartition(b',"crc":')
        assert zlib.crc32(head + b',"crc":') == int(tail[:-2]), b
    assert [b.startswith(b'{"k":"archive"') for b in blocks] == [True, False, False, True, False]


def test_a_flipped_digit_is_detected_and_the_next_keyframe_reads_again(tmp_path):
    path = write_polls(tmp_path, 30, [T0, T0 + 15, T0 + 30, T0 + 45])
    # the second poll says orders-0's ISR is 2 (broker 3 left it): make it 3
    path, polls, rejects = damaged(path, b'"partition":0,"isr":2', b'"partition":0,"isr":3', b'"t":1795000015.0')
    assert [(p.t, p.poll.keyframe) for p in polls] == [(T0, True), (T0 + 30, True), (T0 + 45, False)]
    assert rejects.by_reason() == {"checksum mismatch": 1, "incomplete poll": 1, "damaged span": 1}
    (span,) = rejects.spans
    assert (span.line, span.after, span.before, span.polls) == (16, T0, T0 + 30, 1)
    data = Path(path).read_bytes()
    assert data[span.offset:].startswith(b'{"k":"poll","t":1795000015.0') and \
        data[span.end:].startswith(b'{"k":"archive"')
    assert rejects.examples[-1].detail.endswith("1 poll(s) lost, history after the poll at 2026-11-18T11:06:40Z "
                                                "until the poll at 2026-11-18T11:07:10Z")
    # what is read is what was written: at T0+15 the state is still T0's
    at = dict(states_at(iter(polls), [T0 + 15, T0 + 30]))
    assert at[T0 + 15].t == T0 and at[T0 + 15].counts[("orders", 0)] == (3, 3)
    assert at[T0 + 30].counts[("orders", 0)] == (2, 3)


def test_a_damaged_header_loses_its_segment_only(tmp_path):
    path = write_polls(tmp_path, 30, [T0, T0 + 15, T0 + 30, T0 + 45, T0 + 60])
    path, polls, rejects = damaged(path, b'"opened":1795000000.0', b'"opened":1795000001.0', b'"t":1795000015.0')
    assert [p.t for p in polls] == [T0, T0 + 15, T0 + 60]  # the segment of T0+30 and T0+45 is gone
    reasons = rejects.by_reason()
    assert reasons["checksum mismatch"] == 1 and reasons["no header"] > 0 and reasons["damaged span"] == 1
    (span,) = rejects.spans
    assert (span.after, span.before, span.polls) == (T0 + 15, T0 + 60, 2)


def test_an_unrecognisable_header_costs_no_poll_but_is_said(tmp_path):
    path = write_polls(tmp_path, 30, [T0, T0 + 15, T0 + 30, T0 + 45])
    path, polls, rejects = damaged(path, b'{"k":"archive"', b'{"k":"brchive"', b'"t":1795000015.0')
    # the keyframe after it is whole and checked: read, under the segment header before it
    assert [p.t for p in polls] == [T0, T0 + 15, T0 + 30, T0 + 45]
    assert rejects.by_reason() == {"unknown record kind": 1, "damaged span": 1}
    assert [(d.after, d.before, d.polls) for d in rejects.spans] == [(T0 + 15, T0 + 30, 0)]


def test_a_cut_end_of_file_is_the_poll_being_written_not_damage(tmp_path):
    path = write_polls(tmp_path, 30, [T0, T0 + 15])
    data = path.read_bytes()
    path.write_bytes(data[:-30])  # a reader racing the writer, or a crash: the last line unfinished
    rejects = Rejects()
    assert [p.t for p in read_polls(str(path), rejects)] == [T0]
    assert rejects.by_reason() == {"torn last line": 1, "incomplete poll": 1} and rejects.spans == []


def test_a_change_poll_after_a_lost_poll_line_waits_for_a_keyframe(tmp_path):
    """Schema 1 too: a poll whose own line is lost leaves its records between polls; the change
    poll after it would apply to a state without them, so it waits for the next keyframe."""
    path = tmp_path / "a.jsonl"
    path.write_text(HEADER + KEYFRAME + CHANGE_1015.replace('{"k":"poll"', '{"k":"poll', 1) + CHANGE_1030
                    + HEADER + KEYFRAME.replace('"t":1000.0', '"t":1045.0'))
    rejects = Rejects()
    assert [p.t for p in read_polls(str(path), rejects)] == [1000.0, 1045.0]
    assert rejects.by_reason() == {"corrupt line": 1, "outside a poll": 6, "no keyframe": 1, "damaged span": 1}
    assert [(d.after, d.before, d.polls) for d in rejects.spans] == [(1000.0, 1045.0, 1)]


def test_a_schema_1_file_of_the_previous_writer_reads_as_it_always_did(tmp_path):
    directory = tmp_path / "archive"
    directory.mkdir()
    path = directory / NAME
    shutil.copy(SCHEMA_1, path)
    rejects = Rejects()
    polls = list(read_archive([directory], rejects))
    assert rejects.total == 0
    assert [(p.t, p.poll.keyframe, p.header.schema, p.header.broker) for p in polls] == [
        (T0, True, 1, "1"), (T0 + 15, False, 1, "1"), (T0 + 30, False, 1, "1")]
    at = dict(states_at(iter(polls), [T0, T0 + 15, T0 + 30]))
    assert at[T0].counts == {("orders", 0): (3, 3), ("orders", 1): (2, 0), ("audit", 0): (1, 1)}
    assert at[T0 + 15].counts[("orders", 0)] == (2, 3) and at[T0 + 15].states[("orders", 0)].isr == (1, 2)
    assert at[T0 + 30].counts == {("orders", 0): (2, 3), ("orders", 1): (2, 0)}
    # the sidecar upgraded within the hour: its writer appends schema 2 segments to the same file
    writer, _ = make_writer(tmp_path)
    assert writer.write(dataclasses.replace(polls_by_hand()[2], t=T0 + 45))
    writer.close()
    polls = list(read_archive([directory], rejects))
    assert rejects.total == 0
    assert [(p.t, p.poll.keyframe, p.header.schema) for p in polls][2:] == [(T0 + 30, False, 1), (T0 + 45, True, 2)]
    # schema 1 has no checksum: a flipped digit there is read as data (why schema 2 has one)
    _, polls, rejects = damaged(path, b'"partition":0,"isr":2', b'"partition":0,"isr":1', b'"t":1795000015.0')
    assert rejects.total == 0 and polls[1].records[0].isr == 1
