"""exporter/archive/reader: archive files written here by hand, line by line (not by the writer),
read back as typed records, complete polls and the states known at given times, with every
unusable line or poll counted under its file and reason."""
from __future__ import annotations

import textwrap

import pytest

from kafka_jmx_sidecar.exporter.archive.damage import Damage
from kafka_jmx_sidecar.exporter.archive.format import Count, Leaf, Leaves, MinIsr, Poll, State
from kafka_jmx_sidecar.exporter.archive.reader import (ArchiveState, Rejects, archive_files, read_archive, read_polls, replay,
                                     states_at)
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions
from kafka_jmx_sidecar.mbeans.health import PartitionState

HEADER = '{"k":"archive","format":"kafka-jmx-sidecar-archive","schema":1,"broker":"1","sidecar":"0.1.0","opened":1000.0}\n'

# A keyframe at t=1000 and two change polls, as the README documents the lines.
KEYFRAME = (
    '{"k":"poll","t":1000.0,"keyframe":true,"version":"2.2.1","admin":true}\n'
    '{"k":"cluster","live":[1,2,3],"reassignments":"known"}\n'
    '{"k":"count","topic":"orders","partition":0,"isr":3,"replicas":3}\n'
    '{"k":"count","topic":"orders","partition":1,"isr":2,"replicas":0}\n'
    '{"k":"count","topic":"audit","partition":0,"isr":1,"replicas":1}\n'
    '{"k":"state","topic":"orders","partition":0,"leader":1,"replicas":[1,2,3],"isr":[1,2,3]}\n'
    '{"k":"state","topic":"orders","partition":1,"leader":2,"replicas":[2,3,1],"isr":[2,1]}\n'
    '{"k":"minisr","topic":"orders","value":2,"origin":"admin"}\n'
    '{"k":"leaf","object":"kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions","attribute":"Value","value":0}\n'
    '{"k":"leaf","object":"kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec","attribute":"Count","value":1200}\n'
    '{"k":"leaves","object":"kafka.cluster:type=Partition,name=UnderReplicated","attribute":"Value","topic":"orders","partitions":[0,1],"values":[0,0]}\n'
    '{"k":"end","records":10}\n'
)
CHANGE_1015 = (  # broker 3 drops out of orders-0's ISR; a reassignment of orders-1 starts
    '{"k":"poll","t":1015.0,"keyframe":false,"version":"2.2.1","admin":true}\n'
    '{"k":"count","topic":"orders","partition":0,"isr":2,"replicas":3}\n'
    '{"k":"state","topic":"orders","partition":0,"leader":1,"replicas":[1,2,3],"isr":[1,2]}\n'
    '{"k":"state","topic":"orders","partition":1,"leader":2,"replicas":[2,3,1,4],"isr":[2,1],"adding":[4],"removing":[3]}\n'
    '{"k":"leaf","object":"kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions","attribute":"Value","value":1}\n'
    '{"k":"leaf","object":"kafka.cluster:type=Partition,name=UnderReplicated,topic=orders,partition=0","attribute":"Value","value":1}\n'
    '{"k":"end","records":5}\n'
)
CHANGE_1030 = (  # audit is deleted; orders' min ISR override removed; the meter leaves the rules
    '{"k":"poll","t":1030.0,"keyframe":false,"version":"2.2.1","admin":false}\n'
    '{"k":"count","topic":"audit","partition":0,"gone":true}\n'
    '{"k":"minisr","topic":"orders","gone":true}\n'
    '{"k":"leaf","object":"kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec","attribute":"Count","gone":true}\n'
    '{"k":"end","records":3}\n'
)
URP_LEAF = ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value")
METER = ("kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec", "Count")
MEMBER0 = ("kafka.cluster:type=Partition,name=UnderReplicated,topic=orders,partition=0", "Value")
MEMBER1 = ("kafka.cluster:type=Partition,name=UnderReplicated,topic=orders,partition=1", "Value")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_records_are_typed_and_polls_complete(tmp_path):
    path = write(tmp_path, "2026-11-24T17Z.jsonl", HEADER + KEYFRAME + CHANGE_1015)
    rejects = Rejects()
    polls = list(read_polls(path, rejects))
    assert rejects.total == 0
    assert [p.poll for p in polls] == [Poll(1000.0, True, "2.2.1", True), Poll(1015.0, False, "2.2.1", True)]
    assert polls[0].header.broker == "1" and polls[0].header.schema == 1
    assert polls[0].records[1] == Count("orders", 0, 3, 3)
    assert polls[0].records[9] == Leaves("kafka.cluster:type=Partition,name=UnderReplicated", "Value", "orders",
                                         (0, 1), (0, 0))
    assert polls[1].records[2] == State("orders", 1, 2, (2, 3, 1, 4), (2, 1), (4,), (3,))
    assert polls[1].records[4] == Leaf(*MEMBER0, 1)


def test_keyframe_and_changes_reconstruct_the_state_at_each_time(tmp_path):
    path = write(tmp_path, "2026-11-24T17Z.jsonl", HEADER + KEYFRAME + CHANGE_1015 + CHANGE_1030)
    got = dict(states_at(read_archive([path]), [999.0, 1000.0, 1014.9, 1015.0, 1029.0, 1031.0, 5000.0]))
    assert got[999.0] is None  # before the first poll
    at_1000 = got[1000.0]
    assert got[1014.9] is at_1000  # the same poll's state
    assert at_1000.t == 1000.0 and at_1000.version == "2.2.1" and at_1000.broker == "1"
    assert at_1000.counts == {("orders", 0): (3, 3), ("orders", 1): (2, 0), ("audit", 0): (1, 1)}
    assert at_1000.min_isr == {"orders": (2, "admin")}
    assert at_1000.leaves == {URP_LEAF: 0, METER: 1200, MEMBER0: 0, MEMBER1: 0}
    assert at_1000.partition_states() == [
        PartitionState("orders", 0, 1, (1, 2, 3), (1, 2, 3), (), (), 2, frozenset({1, 2, 3})),
        PartitionState("orders", 1, 2, (2, 3, 1), (2, 1), (), (), 2, frozenset({1, 2, 3}))]

    at_1015 = got[1015.0]
    assert got[1029.0] is at_1015
    assert at_1015.counts == {("orders", 0): (2, 3), ("orders", 1): (2, 0), ("audit", 0): (1, 1)}
    assert at_1015.leaves == {URP_LEAF: 1, METER: 1200, MEMBER0: 1, MEMBER1: 0}
    assert at_1015.partition_states() == [
        PartitionState("orders", 0, 1, (1, 2, 3), (1, 2), (), (), 2, frozenset({1, 2, 3})),
        PartitionState("orders", 1, 2, (2, 3, 1, 4), (2, 1), (4,), (3,), 2, frozenset({1, 2, 3}))]
    # the copy handed out for 1000 was not changed by the later polls
    assert at_1000.counts[("orders", 0)] == (3, 3)

    at_1031 = got[1031.0]
    assert got[5000.0] is at_1031 and at_1031.t == 1030.0 and at_1031.admin is False
    assert at_1031.counts == {("orders", 0): (2, 3), ("orders", 1): (2, 0)}
    assert at_1031.min_isr == {}
    assert at_1031.leaves == {URP_LEAF: 1, MEMBER0: 1, MEMBER1: 0}
    assert at_1031.partition_states(default_min_isr=1)[0].min_isr == 1
    assert at_1031.hosted() == HostedPartitions(["orders"], [0, 0], [0, 1], [2, 2], [3, 0])


def test_max_age_leaves_gaps_unknown(tmp_path):
    path = write(tmp_path, "a.jsonl", HEADER + KEYFRAME + CHANGE_1015)
    got = list(states_at(read_archive([path]), [1010.0, 1020.0, 1100.0], max_age=30))
    assert [t for t, _ in got] == [1010.0, 1020.0, 1100.0]
    assert got[0][1].t == 1000.0 and got[1][1].t == 1015.0 and got[2][1] is None


def test_a_torn_last_line_is_skipped_and_counted(tmp_path):
    torn = CHANGE_1030[:-40]  # the crash came while the poll's last lines were written
    path = write(tmp_path, "a.jsonl", HEADER + KEYFRAME + CHANGE_1015 + torn)
    rejects = Rejects()
    polls = list(read_polls(path, rejects))
    assert [p.t for p in polls] == [1000.0, 1015.0]
    # the unterminated line, and the poll it belonged to (its end line never came)
    assert rejects.counts == {(path, "torn last line"): 1, (path, "incomplete poll"): 1}
    assert [(r.line_no, r.reason) for r in rejects.examples] == [(24, "torn last line"), (21, "incomplete poll")]


def test_a_restart_after_a_torn_line_reads_on_from_the_new_keyframe(tmp_path):
    # what the writer leaves: the torn line terminated, then a new header and keyframe
    torn = CHANGE_1030[:-40] + "\n"
    keyframe_2 = KEYFRAME.replace('"t":1000.0', '"t":1100.0')
    path = write(tmp_path, "a.jsonl", HEADER + KEYFRAME + torn + HEADER + keyframe_2 + CHANGE_1015.replace(
        '"t":1015.0', '"t":1115.0'))
    rejects = Rejects()
    states = [(s.t, dict(s.counts)) for s in replay(read_polls(path, rejects))]
    assert [t for t, _ in states] == [1000.0, 1100.0, 1115.0]
    assert states[2][1][("orders", 0)] == (2, 3)
    # the torn poll, and the span it leaves: from its poll line to the new segment's header
    assert rejects.counts == {(path, "corrupt line"): 1, (path, "incomplete poll"): 1, (path, "damaged span"): 1}
    torn_at = len((HEADER + KEYFRAME).encode())
    assert rejects.spans == [Damage(path, torn_at, torn_at + len(torn), 14, 17, 1000.0, 1100.0, 1)]
    assert rejects.examples[-1].detail == (f"bytes {torn_at}-{torn_at + len(torn)} (lines 14-17) unusable: 1 poll(s) "
                                           "lost, history after the poll at 1970-01-01T00:16:40Z until the poll at "
                                           "1970-01-01T00:18:20Z")


def test_unknown_schema_version_rejects_its_segment_only(tmp_path):
    future = HEADER.replace('"schema":1', '"schema":3')
    path = write(tmp_path, "a.jsonl", future + KEYFRAME + HEADER + KEYFRAME)
    rejects = Rejects()
    polls = list(read_polls(path, rejects))
    assert [p.t for p in polls] == [1000.0]
    assert polls[0].records[1] == Count("orders", 0, 3, 3)
    # the header and the 12 lines of its segment; a schema this reader does not know is no damage
    assert rejects.counts == {(path, "unknown schema version"): 13} and rejects.spans == []


def test_bad_lines_are_counted_per_reason_and_spoil_their_poll(tmp_path):
    keyframe = KEYFRAME.replace('{"k":"count","topic":"audit","partition":0,"isr":1,"replicas":1}',
                                '{"k":"count","topic":"audit","partition":"zero","isr":1,"replicas":1}')
    change = CHANGE_1015.replace('{"k":"state","topic":"orders","partition":0,', 'not json {"k":"state",') \
        .replace('"t":1015.0', '"t":1015.0') + CHANGE_1015.replace('"t":1015.0', '"t":1016.0')
    lines = ('{"k":"count","topic":"x","partition":0,"isr":1,"replicas":1}\n'  # before the header
             + HEADER + '{"k":"count","topic":"x","partition":0,"isr":1,"replicas":1}\n'  # before a poll
             + keyframe + KEYFRAME + change
             + '{"k":"poll","t":1020.0,"keyframe":false,"version":null,"admin":false}\n'
             + '{"k":"gauge","object":"x"}\n{"k":"end","records":1}\n'  # a kind this reader does not know
             + '{"k":"end","records":0}\n')  # an end without a poll
    path = write(tmp_path, "a.jsonl", lines)
    rejects = Rejects()
    polls = list(read_polls(path, rejects))
    # the first keyframe lost a line (malformed): incomplete; the second is good; the first change
    # poll lost a line (corrupt): incomplete, so the next change poll has no keyframe to apply to
    assert [p.t for p in polls] == [1000.0]
    assert rejects.by_reason() == {"no header": 1, "outside a poll": 2, "malformed record": 1, "incomplete poll": 3,
                                   "corrupt line": 1, "no keyframe": 1, "unknown record kind": 1, "damaged span": 2}
    # two spans: the file's start up to the good keyframe, and from the spoiled change poll on
    assert [(d.line, d.last_line, d.after, d.before, d.polls) for d in rejects.spans] == [
        (1, 15, None, 1000.0, 1), (28, 45, 1000.0, None, 3)]
    assert rejects.spans[1].end == len(lines.encode())


def test_directories_are_read_file_by_file_in_time_order(tmp_path):
    d = tmp_path / "archive"
    d.mkdir()
    write(d, "2026-11-24T18Z.jsonl", HEADER + KEYFRAME.replace('"t":1000.0', '"t":4600.0'))
    write(d, "2026-11-24T17Z.jsonl", HEADER + KEYFRAME + CHANGE_1015)
    write(d, "notes.txt", "not an archive file\n")
    assert [f.rsplit("/", 1)[1] for f in archive_files([d])] == ["2026-11-24T17Z.jsonl", "2026-11-24T18Z.jsonl"]
    assert [p.t for p in read_archive([d])] == [1000.0, 1015.0, 4600.0]
    # a new file starts from its keyframe: orders-0's ISR is 3 again
    last = list(states_at(read_archive([d]), [4600.0]))[0][1]
    assert last.counts[("orders", 0)] == (3, 3)


def test_states_at_wants_ascending_times():
    with pytest.raises(ValueError, match="ascending"):
        list(states_at([], [2.0, 1.0]))


def test_an_empty_state_has_no_partitions():
    s = ArchiveState()
    assert s.hosted() == HostedPartitions([], [], [], [], []) and s.partition_states() == []
    assert MinIsr("t", None).value is None


def test_a_missing_file_is_counted_not_raised(tmp_path):
    rejects = Rejects()
    assert list(read_archive([tmp_path / "gone.jsonl"], rejects)) == []
    assert rejects.counts == {(str(tmp_path / "gone.jsonl"), "unreadable file"): 1}


def test_the_documented_example_reads_as_the_format_page_says(tmp_path):
    from pathlib import Path

    section = (Path(__file__).resolve().parents[2] / "docs" / "archive-format.md").read_text()
    example = section.split("\n```\n", 2)[1]  # the first plain fenced block of the section
    assert example.startswith('{"k":"archive"')
    path = write(tmp_path, "2026-11-18T11Z.jsonl", example + "\n")
    rejects = Rejects()
    polls = list(read_archive([path], rejects))
    assert rejects.total == 0 and [p.header.schema for p in polls] == [2, 2]  # its checksums hold
    got = dict(states_at(iter(polls), [1795000000.0, 1795000015.0]))
    assert got[1795000000.0].counts == {("orders", 0): (3, 3), ("orders", 1): (2, 0)}
    assert got[1795000015.0].counts == {("orders", 0): (2, 3), ("orders", 1): (2, 0)}
    assert got[1795000015.0].leaves == {
        ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value"): 0,
        (MEMBER0[0], "Value"): 1}
    assert got[1795000015.0].min_isr == {"orders": (2, "configured")}
    # the page's recipe for checking a block by hand, run on the page's example
    recipe = textwrap.dedent(section.split("Checking a block by hand", 1)[1].split("\n\n", 2)[1])
    exec(recipe.replace('open("2026-11-18T11Z.jsonl", "rb")', f"open({path!r}, 'rb')"), {})
    with pytest.raises(AssertionError):
        write(tmp_path, "flipped.jsonl", example.replace('"isr":2,"replicas":3', '"isr":3,"replicas":3') + "\n")
        exec(recipe.replace('open("2026-11-18T11Z.jsonl", "rb")', f"open({str(tmp_path / 'flipped.jsonl')!r}, 'rb')"),
             {})


def test_a_state_is_what_the_broker_recompute_reads(tmp_path):
    from kafka_jmx_sidecar.mbeans.broker_recompute import Assignment, recompute_broker
    from kafka_jmx_sidecar.mbeans.health import PROFILES

    path = write(tmp_path, "a.jsonl", HEADER + KEYFRAME + CHANGE_1015)
    state = list(states_at(read_archive([path]), [1015.0]))[0][1]
    assert state.assignments() == {("orders", 0): Assignment((1, 2, 3), (), ()),
                                   ("orders", 1): Assignment((2, 3, 1, 4), (4,), (3,))}
    assert state.min_isr_of("orders") == 2 and state.min_isr_of("audit") == 1
    health = recompute_broker(state.hosted(), profile=PROFILES["kafka-3.7"], broker_profile=PROFILES["legacy"],
                              min_isr_of=state.min_isr_of, assignments=state.assignments())
    # led: orders-0 (ISR 2 of 3, min ISR 2: URP, at min ISR) and audit-0 (ISR 1 of 1, min ISR 1: at
    # min ISR under kafka-3.7); orders-1 is led elsewhere
    assert health.led == 2
    assert health.replica_manager["UnderReplicatedPartitions"] == 1
    assert health.replica_manager["UnderMinIsrPartitionCount"] == 0
    assert health.replica_manager["AtMinIsrPartitionCount"] == 2


def test_a_keyframes_counts_are_columns_of_one_topic(tmp_path):
    counts = '{"k":"counts","topic":"orders","partitions":[0,1],"isr":[3,2],"replicas":[3,0]}\n'
    keyframe = KEYFRAME.replace('{"k":"count","topic":"orders","partition":0,"isr":3,"replicas":3}\n'
                                '{"k":"count","topic":"orders","partition":1,"isr":2,"replicas":0}\n', counts) \
        .replace('"records":10', '"records":9')
    path = write(tmp_path, "a.jsonl", HEADER + keyframe + CHANGE_1015)
    state = list(states_at(read_archive([path]), [1015.0]))[0][1]
    assert state.counts == {("orders", 0): (2, 3), ("orders", 1): (2, 0), ("audit", 0): (1, 1)}
    uneven = write(tmp_path, "b.jsonl", HEADER + keyframe.replace('"replicas":[3,0]', '"replicas":[3]'))
    rejects = Rejects()
    assert list(read_polls(uneven, rejects)) == [] and rejects.by_reason()["malformed record"] == 1
