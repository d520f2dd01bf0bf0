"""exporter/archive/writer (+ encoder, retention, settings): polls made here by hand, as the JMX
edge and the Admin API hand them over, written to a temporary directory and read back with the
reader; keyframes and changes, hourly files, a crash's torn line, a failing disk, retention by age
and by size on a fake clock, and the settings' errors (file:line and key)."""
from __future__ import annotations

import logging
import threading
from array import array

import pytest

from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Broker, BrokerConfig, Cluster, Partition, TopicConfig
from kafka_jmx_sidecar.exporter.archive import retention
from kafka_jmx_sidecar.exporter.archive.encoder import PollFacts
from kafka_jmx_sidecar.exporter.archive.format import Count, Counts, Leaf, MinIsr, State
from kafka_jmx_sidecar.exporter.archive.reader import Rejects, read_archive, read_polls, states_at
from kafka_jmx_sidecar.exporter.archive.settings import ArchiveSettings
from kafka_jmx_sidecar.exporter.archive.writer import ArchiveWriter, poll_facts
from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.base.model import Attribute, BeanTable, MBean, ObjectName
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.config.sidecar import sidecar_settings
from kafka_jmx_sidecar.exporter.source.protocol import BrokerReadings, ReadResult
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions

T0 = 1_795_000_000.0  # 2026-11-18T11:06:40Z
GAUGE = "com.yammer.metrics.reporting.JmxReporter$Gauge"
METER = "com.yammer.metrics.reporting.JmxReporter$Meter"
URP = "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"
BYTES_IN = "kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec"
MEMBER = "kafka.cluster:type=Partition,name=UnderReplicated,topic={},partition={}"


def mbeans(urp: int, count: int) -> list[MBean]:
    return [MBean(ObjectName.parse(URP), GAUGE, (Attribute("Value", urp),)),
            MBean(ObjectName.parse(BYTES_IN), METER, (Attribute("EventType", "bytes"), Attribute("Count", count),
                                                       Attribute("OneMinuteRate", 3.5)))]


def table(topics, topic, partition, values) -> BeanTable:
    return BeanTable("kafka.cluster", (("type", "Partition"), ("name", "UnderReplicated")), GAUGE, "Value", "", "",
                     True, topics, array("i", topic), array("i", partition), array("I", range(len(topic))),
                     array("q", values), bytearray([1] * len(topic)))


def view(partitions) -> AdminView:
    return AdminView(Cluster("c", 1, (Broker(1, "h", 1), Broker(2, "h", 2), Broker(3, "h", 3)), "DescribeCluster"),
                     tuple(partitions), topics={"orders": TopicConfig(2)}, brokers={1: BrokerConfig(min_isr=1)})


def polls_by_hand():
    """Three polls: all well; broker 3 leaves orders-0's ISR; topic audit is deleted."""
    topics = ["audit", "orders"]
    members = dict(topics=topics, topic=array("i", [1, 1, 0]), partition=array("i", [0, 1, 0]))
    first = PollFacts(
        T0, "1", "2.2.1",
        HostedPartitions(topics, members["topic"], members["partition"], [3, 2, 1], [3, 0, 1]),
        view([Partition("orders", 0, 1, (1, 2, 3), (1, 2, 3)), Partition("orders", 1, 2, (2, 3, 1), (2, 1)),
              Partition("audit", 0, 1, (1,), (1,))]),
        {}, mbeans(0, 1200), [table(topics, [1, 1, 0], [0, 1, 0], [0, 0, 0])])
    second = PollFacts(
        T0 + 15, "1", "2.2.1",
        HostedPartitions(topics, members["topic"], members["partition"], [2, 2, 1], [3, 0, 1]),
        view([Partition("orders", 0, 1, (1, 2, 3), (1, 2)), Partition("orders", 1, 2, (2, 3, 1), (2, 1)),
              Partition("audit", 0, 1, (1,), (1,))]),
        {}, mbeans(1, 1500), [table(topics, [1, 1, 0], [0, 1, 0], [1, 0, 0])])
    third = PollFacts(
        T0 + 30, "1", "2.2.1",
        HostedPartitions(["orders"], array("i", [0, 0]), array("i", [0, 1]), [2, 2], [3, 0]),
        view([Partition("orders", 0, 1, (1, 2, 3), (1, 2)), Partition("orders", 1, 2, (2, 3, 1), (2, 1))]),
        {}, mbeans(1, 1500), [table(["orders"], [0, 0], [0, 1], [1, 0])])
    return [first, second, third]


def make_writer(tmp_path, **kw) -> tuple[ArchiveWriter, SelfMetrics]:
    metrics = SelfMetrics()
    metrics.enable_archive()
    settings = ArchiveSettings(str(tmp_path / "archive"), **kw)
    return ArchiveWriter(settings, metrics, clock=lambda: T0), metrics


def polls_counted(metrics, outcome) -> float:
    return metrics.registry.get_sample_value("kafka_jmx_sidecar_archive_polls_total", {"outcome": outcome})


def test_a_keyframe_then_only_what_changed(tmp_path):
    writer, metrics = make_writer(tmp_path)
    for facts in polls_by_hand():
        assert writer.write(facts)
    writer.close()
    rejects = Rejects()
    polls = list(read_archive([tmp_path / "archive"], rejects))
    assert rejects.total == 0 and polls_counted(metrics, "written") == 3
    assert [(p.t, p.poll.keyframe, p.poll.version, p.header.broker) for p in polls] == [
        (T0, True, "2.2.1", "1"), (T0 + 15, False, "2.2.1", "1"), (T0 + 30, False, "2.2.1", "1")]
    # the second poll: what broker 3 leaving orders-0's ISR changed, nothing else
    assert sorted(polls[1].records, key=repr) == sorted([
        Count("orders", 0, 2, 3), State("orders", 0, 1, (1, 2, 3), (1, 2)), Leaf(URP, "Value", 1),
        Leaf(BYTES_IN, "Count", 1500), Leaf(MEMBER.format("orders", 0), "Value", 1)], key=repr)
    # the third: audit gone everywhere
    assert sorted(polls[2].records, key=repr) == sorted([
        Count("audit", 0, None, None), State("audit", 0, None, (), (), gone=True), MinIsr("audit", None),
        Leaf(MEMBER.format("audit", 0), "Value", None)], key=repr)

    at = dict(states_at(read_archive([tmp_path / "archive"]), [T0, T0 + 15, T0 + 30]))
    first, second, third = at[T0], at[T0 + 15], at[T0 + 30]
    assert first.counts == {("orders", 0): (3, 3), ("orders", 1): (2, 0), ("audit", 0): (1, 1)}
    assert first.min_isr == {"orders": (2, "admin"), "audit": (1, "admin_broker_default")}
    assert first.cluster.live == (1, 2, 3) and first.cluster.reassignments == "known"
    assert first.leaves == {(URP, "Value"): 0, (BYTES_IN, "Count"): 1200, (MEMBER.format("orders", 0), "Value"): 0,
                            (MEMBER.format("orders", 1), "Value"): 0, (MEMBER.format("audit", 0), "Value"): 0}
    assert second.counts[("orders", 0)] == (2, 3)
    assert second.states[("orders", 0)].isr == (1, 2)
    assert second.leaves[(MEMBER.format("orders", 0), "Value")] == 1 and second.leaves[(URP, "Value")] == 1
    assert third.counts == {("orders", 0): (2, 3), ("orders", 1): (2, 0)}
    assert sorted(third.states) == [("orders", 0), ("orders", 1)] and third.min_isr == {"orders": (2, "admin")}
    assert (MEMBER.format("audit", 0), "Value") not in third.leaves


def test_each_hour_has_its_file_starting_with_a_keyframe(tmp_path):
    writer, _ = make_writer(tmp_path)
    one, two, _ = polls_by_hand()
    hour = 3600 * (T0 // 3600 + 1)  # the next hour's start
    one.t, two.t = hour - 1, hour
    writer.write(one)
    writer.write(two)
    writer.close()
    names = sorted(p.name for p in (tmp_path / "archive").iterdir())
    assert names == ["2026-11-18T11Z.jsonl", "2026-11-18T12Z.jsonl"]
    second_file = list(read_polls(str(tmp_path / "archive" / names[1]), Rejects()))
    assert len(second_file) == 1 and second_file[0].poll.keyframe
    assert second_file[0].header.schema == 2
    # a keyframe's counts: one line a topic, the partitions as the broker lists them
    assert Counts("orders", (0, 1), (2, 2), (3, 0)) in second_file[0].records


def test_a_keyframe_with_its_header_every_interval_and_when_the_clock_goes_back(tmp_path):
    import dataclasses

    writer, _ = make_writer(tmp_path, keyframe_interval=40)
    one, two, three = polls_by_hand()
    times = [T0, T0 + 15, T0 + 30, T0 + 45, T0 + 60, T0 + 75, T0 + 90, T0 + 80, T0 + 95]
    for i, t in enumerate(times):
        assert writer.write(dataclasses.replace((one, two, three)[min(i, 2)], t=t))
    writer.close()
    polls = list(read_archive([tmp_path / "archive"]))
    # 45 s since T0's keyframe: whole again; 90 s: 45 s since; 80 s: before the last keyframe
    assert [p.t - T0 for p in polls if p.poll.keyframe] == [0, 45, 90, 80]
    assert [p.header.opened for p in polls if p.poll.keyframe] == [T0] * 4  # each opens a segment
    text = (tmp_path / "archive" / "2026-11-18T11Z.jsonl").read_text()
    assert text.count('{"k":"archive"') == 4
    at = dict(states_at(iter(polls), [T0 + 95]))  # the state after keyframes equals the written facts
    assert at[T0 + 95].counts == {("orders", 0): (2, 3), ("orders", 1): (2, 0)}


def test_a_restart_after_a_crash_terminates_the_torn_line_and_writes_a_keyframe(tmp_path):
    one, two, three = polls_by_hand()
    writer, _ = make_writer(tmp_path)
    writer.write(one)
    writer.close()
    path = tmp_path / "archive" / "2026-11-18T11Z.jsonl"
    with open(path, "ab") as f:  # the crash: half a poll
        f.write(b'{"k":"poll","t":1795000015.0,"keyframe":false,"version":"2.2.1","admin":true}\n{"k":"count","to')
    writer, _ = make_writer(tmp_path)  # the sidecar starts again
    writer.write(two)
    writer.write(three)
    writer.close()
    rejects = Rejects()
    polls = list(read_polls(str(path), rejects))
    assert [(p.t, p.poll.keyframe) for p in polls] == [(T0, True), (T0 + 15, True), (T0 + 30, False)]
    # the half poll is lost (and said where), nothing else
    assert rejects.by_reason() == {"corrupt line": 1, "incomplete poll": 1, "damaged span": 1}
    assert [(d.after, d.before, d.polls) for d in rejects.spans] == [(T0, T0 + 15, 1)]
    state = list(states_at(iter(polls), [T0 + 30]))[0][1]
    assert state.counts == {("orders", 0): (2, 3), ("orders", 1): (2, 0)}


def test_a_failing_disk_is_counted_logged_per_episode_and_never_raised(tmp_path, caplog):
    import shutil

    writer, metrics = make_writer(tmp_path)
    now = [100.0]
    writer.monotonic = lambda: now[0]
    directory = tmp_path / "archive"

    def block():  # a file where the directory should be
        shutil.rmtree(directory, ignore_errors=True)
        directory.write_text("not a directory")

    def said(level=logging.WARNING):
        return [r.getMessage() for r in caplog.records if r.levelno == level and "archive: writing" in r.getMessage()]

    one, two, three = polls_by_hand()
    with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.archive"):
        block()
        assert not writer.write(one)
        assert not writer.write(two)
        assert polls_counted(metrics, "failed") == 2
        assert len(said()) == 1  # one line for the episode, not one per poll
        directory.unlink()
        now[0] += 30
        assert writer.write(three)  # the disk is back: a keyframe, so the file reads alone
        assert said(logging.INFO) == [f"archive: writing {directory} works again, after 2 poll(s) not archived in 30 s"]
        writer.close()
        assert [(p.t, p.poll.keyframe) for p in read_archive([directory])] == [(T0 + 30, True)]
        block()
        now[0] += 10  # another episode, 40 s after the last one said: counted, not said
        assert not writer.write(one)
        directory.unlink()
        assert writer.write(two)
        assert len(said()) == 1 and len(said(logging.INFO)) == 1
        writer.close()  # the next write opens the file anew, as after a restart
        block()
        now[0] += 7 * 86400  # the disk fills again a week later: said again
        assert not writer.write(three)
    lines = said()
    assert len(lines) == 2 and lines[1].endswith("; 1 shorter episode(s) of failures since the last said"), lines
    assert polls_counted(metrics, "failed") == 4


def test_a_busy_writer_drops_polls_and_counts_them(tmp_path):
    writer, metrics = make_writer(tmp_path)
    writer._queue.maxsize = 1
    release = threading.Event()
    real_write = writer.write
    writer.write = lambda facts: (release.wait(10), real_write(facts))[1]
    one, two, three = polls_by_hand()
    assert writer.submit(one)  # taken by the thread, which waits
    for _ in range(1000):  # until the thread took it (10 s at most)
        if not writer._queue.qsize():
            break
        release.wait(0.01)
    assert not writer._queue.qsize()
    assert writer.submit(two)  # queued
    assert not writer.submit(three)  # dropped
    release.set()
    writer.close()
    assert polls_counted(metrics, "dropped") == 1 and polls_counted(metrics, "written") == 2
    assert [p.t for p in read_archive([tmp_path / "archive"])] == [T0, T0 + 15]


def test_poll_facts_copy_what_the_next_poll_changes_in_place():
    t = table(["orders"], [0, 0], [0, 1], [1, 0])
    isr = array("q", [2, 2])
    result = ReadResult(mbeans(0, 1), tables=[t], broker=BrokerReadings(
        "1", "3.6.0", HostedPartitions(["orders"], t.topic, t.partition, isr, t.values)))
    facts = poll_facts(T0, result, None)
    t.values[0] = 7
    t.present[1] = 0
    isr[0] = 9
    assert list(facts.tables[0].values) == [1, 0] and list(facts.tables[0].present) == [1, 1]
    assert list(facts.hosted.isr) == [2, 2] and list(facts.hosted.replicas) == [1, 0]
    assert (facts.broker, facts.version) == ("1", "3.6.0")


def test_retention_by_age_and_size_on_a_fake_clock(tmp_path):
    d = tmp_path / "archive"
    d.mkdir()
    # hourly files 00Z to 05Z of one day, 100 bytes each, and a file that is not the writer's
    for h in range(6):
        (d / f"2026-11-18T{h:02d}Z.jsonl").write_bytes(b"x" * 100)
    (d / "notes.jsonl").write_bytes(b"y" * 1000)
    day = 1_794_960_000.0  # 2026-11-18T00:00:00Z
    assert retention.file_name(day + 5 * 3600 + 10) == "2026-11-18T05Z.jsonl"
    # at 05:30 with 3 hours kept: 00Z and 01Z ended before 02:30
    deleted, left = retention.enforce(str(d), day + 5.5 * 3600, 3 * 3600, 10_000, "2026-11-18T05Z.jsonl")
    assert deleted == [("2026-11-18T00Z.jsonl", "age"), ("2026-11-18T01Z.jsonl", "age")] and left == 400
    # 250 bytes kept: the oldest go until the rest fit, the current file never
    deleted, left = retention.enforce(str(d), day + 5.5 * 3600, 3 * 3600, 250, "2026-11-18T05Z.jsonl")
    assert deleted == [("2026-11-18T02Z.jsonl", "size"), ("2026-11-18T03Z.jsonl", "size")] and left == 200
    deleted, left = retention.enforce(str(d), day + 5.5 * 3600, 3 * 3600, 50, "2026-11-18T05Z.jsonl")
    assert deleted == [("2026-11-18T04Z.jsonl", "size")] and left == 100
    assert sorted(p.name for p in d.iterdir()) == ["2026-11-18T05Z.jsonl", "notes.jsonl"]


def test_the_writer_applies_the_retention_and_counts_it(tmp_path):
    d = tmp_path / "archive"
    d.mkdir()
    (d / "2026-11-10T11Z.jsonl").write_bytes(b"old\n")  # 8 days before T0
    writer, metrics = make_writer(tmp_path, retention_hours=168)
    writer.write(polls_by_hand()[0])
    writer.close()
    assert sorted(p.name for p in d.iterdir()) == ["2026-11-18T11Z.jsonl"]
    assert metrics.registry.get_sample_value("kafka_jmx_sidecar_archive_files_deleted_total", {"reason": "age"}) == 1
    assert metrics.registry.get_sample_value("kafka_jmx_sidecar_archive_bytes") == (d / "2026-11-18T11Z.jsonl").stat().st_size


def settings(text: str):
    return sidecar_settings(parse_config(text, source="sidecar.yml"))


def test_settings_and_their_errors():
    s = settings("sidecar:\n  archive:\n    directory: /data/a\n    retentionHours: 24\n    retentionSize: 2GiB\n").archive
    assert s == ArchiveSettings("/data/a", 24.0, 2 << 30, frozenset({"Value", "Count"}), 600.0)
    s = settings("sidecar:\n  archive:\n    directory: /data/a\n    keyframeIntervalSeconds: 60\n").archive
    assert s.keyframe_interval == 60.0
    s = settings("sidecar:\n  archive: {directory: /data/a, attributes: ['*'], retentionSize: 500MB}\n").archive
    assert s.attributes is None and s.retention_bytes == 500_000_000 and s.retention_hours == 168
    assert settings("sidecar: {}\n").archive is None
    for text, key, line in [
        ("sidecar:\n  archive:\n    retentionHours: 24\n", "sidecar.archive.directory", ":2"),  # where it is missing
        ("sidecar:\n  archive:\n    directory: /d\n    retentionHours: -1\n", "sidecar.archive.retentionHours", ":4"),
        ("sidecar:\n  archive:\n    directory: /d\n    retentionSize: lots\n", "sidecar.archive.retentionSize", ":4"),
        ("sidecar:\n  archive:\n    directory: /d\n    attributes: Value\n", "sidecar.archive.attributes", ":4"),
        ("sidecar:\n  archive:\n    directory: /d\n    dir: /e\n", "sidecar.archive.dir", ":4"),
        ("sidecar:\n  archive:\n    directory: /d\n    keyframeIntervalSeconds: 0\n",
         "sidecar.archive.keyframeIntervalSeconds", ":4"),
        ("sidecar:\n  archive:\n    directory: /d\n    retentionHours: 2\n    keyframeIntervalSeconds: 7200\n",
         "sidecar.archive.keyframeIntervalSeconds", ":5"),  # longer than the hour a file holds
        ("sidecar:\n  archive: {directory: /d, keyframeIntervalSeconds: 5m}\n",
         "sidecar.archive.keyframeIntervalSeconds", ":2"),
        ("sidecar:\n  archive:\n    directory: /d\n    keyframeIntervalSeconds: true\n",
         "sidecar.archive.keyframeIntervalSeconds", ":4"),
        ("sidecar:\n  archive: /d\n", "sidecar.archive", ":2"),
    ]:
        with pytest.raises(ConfigError) as e:
            settings(text)
        assert f"sidecar.yml{line}: {key}:" in str(e.value), str(e.value)
