"""`kafka-jmx-sidecar serve` (its own process) archives while the simulator plays a scenario: a
broker fails, an ISR shrinks below min ISR, the broker recovers, a reassignment runs and
completes, another broker fails. Read back with the archive's reader, every poll's reconstructed
state equals what the simulator's model held then: the per-partition counts broker 1 shows (its
ISR size and replica count where it leads, 0 where it follows; Kafka 4.1 leaves adding replicas
out of ReplicasCount), the topics' min ISR as configured, the broker's release, and
the UnderReplicatedPartitions leaf, worked out by hand below.

The same archive (a keyframe every KEYFRAME_SECONDS) is then damaged a byte at a time: what is lost
lies within one keyframe interval, is said where (file, bytes, the polls on either side), and no
value read is one the sidecar did not write."""
from __future__ import annotations

import time

import pytest
from hypothesis import given, settings, strategies as st

from kafka_jmx_sidecar.exporter.archive.format import Count
from kafka_jmx_sidecar.exporter.archive.reader import (Rejects, archive_files, read_archive, read_polls, replay,
                                                       states_at)
from kafka_jmx_sidecar.mbeans.simulator import Simulator
from tests.e2e.sidecar_harness import HEALTH_RULES
from tests.e2e.test_operations import Serve
# Broker 1 leads orders-0..2 (RF 3, min ISR 2) and payments-0 (RF 2); audit-0 is on brokers 2, 3.
from tests.e2e.test_prometheus_scenario import CLUSTER

KEYFRAME_SECONDS = 2.0  # with polls every 0.5 s: segments of about four polls
URP = ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value")
# (event, broker 1's UnderReplicatedPartitions after it: Kafka 4.1, worked out by hand)
STEPS = [
    (None, 0),
    ({"op": "fail_broker", "broker": 3}, 3),  # orders ISR [1,2]: URP
    ({"op": "shrink_isr", "topic": "orders", "partition": 0, "broker": 2}, 3),  # orders-0 ISR [1]
    ({"op": "restore_broker", "broker": 3}, 1),  # orders-0 ISR [1,3] still lacks 2
    # payments-0 [1,2] -> [1,3]: replicas [1,2,3], adding [3]; KIP-352: RF 2, ISR 2, not URP
    ({"op": "start_reassignment", "topic": "payments", "partition": 0, "replicas": [1, 3], "auto_complete": False}, 1),
    ({"op": "complete_reassignment", "topic": "payments", "partition": 0}, 1),
    ({"op": "fail_broker", "broker": 2}, 3),  # orders-0 [1,3] as before; orders-1,2 ISR [1,3]
]


def broker_1_counts(states) -> dict:
    """(ISR size, ReplicasCount) of each partition broker 1 hosts, as its gauges show them."""
    out = {}
    for s in states:
        if 1 not in s.replicas:
            continue
        if s.leader == 1:
            adding_in_list = sum(1 for r in s.adding_replicas if r in s.replicas)
            out[(s.topic, s.partition)] = (len(s.isr), len(s.replicas) - adding_in_list)
        else:
            out[(s.topic, s.partition)] = (0, 0)
    return out


@pytest.fixture(scope="module")
def sim():
    with Simulator.start(CLUSTER, kafka_version="4.1", broker=1) as s:
        yield s


def polls_so_far(directory):
    return list(read_archive([directory], Rejects())) if directory.is_dir() else []


@pytest.fixture(scope="module")
def served(sim, tmp_path_factory):
    """`serve` archiving while the simulator plays STEPS: (the archive directory, the windows
    between events with what the model held in each)."""
    tmp_path = tmp_path_factory.mktemp("served")
    directory = tmp_path / "archive"
    serve = Serve(tmp_path, sim.url, {
        "pollIntervalSeconds": 0.5,
        "archive": f"{{directory: {directory}, retentionHours: 24, keyframeIntervalSeconds: {KEYFRAME_SECONDS}}}",
        "recompute": "{minInsyncReplicas: {topics: {orders: 2}}}",
    }, rules=HEALTH_RULES.read_text())
    try:
        windows = []  # (from, to, model's counts, URP by hand)
        for event, urp in STEPS:
            if event:
                if windows:
                    windows[-1][1] = time.time()
                sim.apply(event)
            applied = time.time()
            expected = broker_1_counts(sim.partition_states())
            deadline = time.monotonic() + 60
            while len([p for p in polls_so_far(directory) if p.t > applied]) < 3:
                assert serve.proc.poll() is None, serve.log[-3000:]
                assert time.monotonic() < deadline, f"no archived poll after {event}:\n{serve.log[-3000:]}"
                time.sleep(0.1)
            windows.append([applied, None, expected, urp])
        windows[-1][1] = time.time()
    finally:
        serve.sigterm()
        serve.kill()
    return directory, windows


def test_the_archive_replays_what_the_model_held_at_each_poll(served):
    directory, windows = served
    rejects = Rejects()
    polls = list(read_archive([directory], rejects))
    # SIGTERM may have come in the middle of a write: at most that poll is lost, and counted
    assert set(rejects.by_reason()) <= {"torn last line", "incomplete poll"}, rejects.examples
    assert polls[0].poll.keyframe and polls[0].header.broker == "1" and polls[0].header.schema == 2
    # a keyframe (with a header of its own) at least every KEYFRAME_SECONDS, changes only between
    keyframe_t = None
    for p in polls:
        if p.poll.keyframe:
            keyframe_t = p.t
        else:
            assert p.t - keyframe_t < KEYFRAME_SECONDS, (p.t, keyframe_t)
    assert sum(p.poll.keyframe for p in polls) >= 4
    checked = 0
    for start, end, expected, urp in windows:
        # the first poll that ended after the event may have started before it: the next ones did not
        times = [p.t for p in polls if start < p.t < end][1:]
        assert times, f"no poll between {start} and {end}"
        for t, state in states_at(read_archive([directory]), times):
            assert state.t == t
            assert state.counts == expected, f"at {t}"
            assert state.leaves[URP] == urp, f"at {t}"
            assert state.version.startswith("4.1") and state.broker == "1"
            assert state.min_isr == {"orders": (2, "configured"), "payments": (1, "kafka_default")}
            checked += 1
    assert checked >= len(STEPS) * 2
    # change polls hold only what changed: far fewer records than the keyframe
    assert max(len(p.records) for p in polls if not p.poll.keyframe) < len(polls[0].records)


class Written(list):
    """[(file name, bytes, polls read from them)]; `scratch`: a folder to damage copies in."""

    scratch = None

    def __repr__(self) -> str:  # what hypothesis prints of a failing example
        return f"<{len(self)} archive file(s) of {[len(f[2]) for f in self]} polls>"


@pytest.fixture(scope="module")
def written(served, tmp_path_factory):
    """The served archive's files as bytes, each cut after its last whole poll (SIGTERM may have
    torn the last), with the polls read from them."""
    out = Written()
    out.scratch = scratch = tmp_path_factory.mktemp("damaged")
    for path in archive_files([served[0]]):
        data = open(path, "rb").read()
        last_end = data.rindex(b'\n{"k":"end",')
        data = data[:data.index(b"\n", last_end + 1) + 1]
        clean = scratch / "clean.jsonl"
        clean.write_bytes(data)
        rejects = Rejects()
        polls = list(read_polls(str(clean), rejects))
        assert rejects.total == 0 and polls, rejects.examples
        out.append((path.rsplit("/", 1)[1], data, polls))
    return out


def read_damaged(scratch, name: str, data: bytes):
    path = scratch / name  # the writer's name: the report places the file's hour
    path.write_bytes(data)
    rejects = Rejects()
    return str(path), list(read_polls(str(path), rejects)), rejects


@settings(max_examples=150, deadline=None)
@given(pick=st.data())
def test_a_corrupt_byte_loses_at_most_one_keyframe_interval_and_says_where(written, pick):
    files, scratch = written, written.scratch
    name, data, base = files[pick.draw(st.integers(0, len(files) - 1), label="file")]
    offset = pick.draw(st.integers(0, len(data) - 1), label="offset")
    byte = pick.draw(st.integers(0, 255).filter(lambda b: b != data[offset]), label="byte")
    path, got, rejects = read_damaged(scratch, name, data[:offset] + bytes([byte]) + data[offset + 1:])

    # nothing wrong is read: each poll read is one written, and so is the state after it
    wrote = {p.t: p for p in base}
    states = {s.t: s.copy() for s in replay(base)}
    for p, state in zip(got, replay(got)):
        assert (p.poll, p.records, p.header.broker) == (wrote[p.t].poll, wrote[p.t].records, "1")
        assert state == states[p.t]

    read = {p.t for p in got}
    lost = [i for i, p in enumerate(base) if p.t not in read]
    if lost:
        first, last = lost[0], lost[-1]
        assert lost == list(range(first, last + 1))  # one run of polls...
        keyframe = max(i for i in range(first + 1) if base[i].poll.keyframe)
        assert not any(p.poll.keyframe for p in base[keyframe + 1:last + 1])  # ...of one segment...
        assert base[last].t - base[keyframe].t < KEYFRAME_SECONDS  # ...within one keyframe interval
    if offset == len(data) - 1:  # the last newline: a torn last line, as a crash leaves, not a span
        assert lost == [len(base) - 1] and rejects.spans == [] and rejects.by_reason()["torn last line"] == 1
        return
    # said where: the file, bytes around the damaged one, the polls read on either side (a damaged
    # line the next poll does not need, a header's first byte, loses nothing and is still said)
    (span,) = rejects.spans
    assert span.path == path and span.offset <= offset < span.end, (span, offset)
    at = [data.index(b'{"k":"poll","t":%r,' % p.t) for p in base]
    assert span.after == max((p.t for p, o in zip(base, at) if o < offset and p.t in read), default=None)
    assert span.before == min((p.t for p, o in zip(base, at) if o > offset and p.t in read), default=None)
    assert span.polls <= len(lost) and rejects.counts[(path, "damaged span")] == 1


def test_a_flipped_digit_in_a_value_is_detected_not_read(written):
    files, scratch = written, written.scratch
    name, data, base = files[0]
    # a count record of a change poll: its ISR size, one digit changed, still valid JSON
    change = next(p for p in base if not p.poll.keyframe and any(r.__class__ is Count for r in p.records))
    record = next(r for r in change.records if r.__class__ is Count and r.isr is not None)
    text = b'"topic":"%s","partition":%d,"isr":%d' % (record.topic.encode(), record.partition, record.isr)
    at = data.index(text, data.index(b'{"k":"poll","t":%r,' % change.t)) + len(text) - 1
    path, got, rejects = read_damaged(scratch, name, data[:at] + b"%d" % ((record.isr + 1) % 10) + data[at + 1:])
    assert rejects.by_reason()["checksum mismatch"] == 1 and "corrupt line" not in rejects.by_reason()
    assert change.t not in {p.t for p in got}
    # the next keyframe is read again, and every state read is the one written
    next_keyframe = next(p.t for p in base if p.t > change.t and p.poll.keyframe)
    assert next_keyframe in {p.t for p in got}
    states = {s.t: s.copy() for s in replay(base)}
    assert all(state == states[state.t] for state in replay(got))
