"""The archive as backfill input: archive files written here by hand (README "Archive format"),
replayed into the MBean values the live sidecar's rules read at each poll, and through the whole
job with a describe dump beside them. Values worked out by hand from Kafka's definitions; every kind of
bad input counted per file and reason."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.backfill import archive_input, job
from kafka_jmx_sidecar.exporter.backfill.naming import Naming
from kafka_jmx_sidecar.exporter.backfill.plan import load_rules
from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings
from tests.exporter.backfill.test_job import T0, options, read_series, write_dumps


def header(schema: int = 1) -> str:
    return json.dumps({"k": "archive", "format": "kafka-jmx-sidecar-archive", "schema": schema, "broker": "1",
                       "sidecar": "0.1.0", "opened": T0}) + "\n"


def line(**fields) -> str:
    return json.dumps(fields) + "\n"


URP = "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"
AT_MIN = "kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount"
PARTITION_URP = "kafka.cluster:type=Partition,name=UnderReplicated"
REPLICATION_IN = "kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec"


def poll(t, keyframe, *records, version="2.2.1"):
    return (line(k="poll", t=t, keyframe=keyframe, version=version, admin=False) + "".join(records)
            + line(k="end", records=len(records)))


# Broker 1 (Kafka 2.2: no AtMinIsr gauges; legacy URP) leads orders-0 (RF 3, min ISR 2) and follows
# orders-1. At T0 all in sync; at T0+45 orders-0's ISR shrinks to 2: under-replicated and, under
# kafka-3.7, at min ISR (2 == min(2, 3)); at T0+90 only the replication meter moves; then a torn line.
GOOD = (header()
        + poll(T0, True,
               line(k="count", topic="orders", partition=0, isr=3, replicas=3),
               line(k="count", topic="orders", partition=1, isr=0, replicas=0),
               line(k="minisr", topic="orders", value=2, origin="configured"),
               line(k="leaf", object=URP, attribute="Value", value=0),
               line(k="leaf", object=REPLICATION_IN, attribute="Count", value=1200),
               line(k="leaves", object=PARTITION_URP, attribute="Value", topic="orders", partitions=[0, 1],
                    values=[0, 0]))
        + poll(T0 + 45, False,
               line(k="count", topic="orders", partition=0, isr=2, replicas=3),
               line(k="leaf", object=URP, attribute="Value", value=1),
               line(k="leaf", object=PARTITION_URP + ",topic=orders,partition=0", attribute="Value", value=1))
        + poll(T0 + 90, False, line(k="leaf", object=REPLICATION_IN, attribute="Count", value=1500))
        + '{"k":"poll","t":')  # torn: the sidecar died while writing
GOOD_LINES = 18  # 1 header, 8 + 5 + 3 lines of polls, the torn one

# The next hour: a corrupt line makes its keyframe incomplete, so the change poll after it cannot
# be applied; then a malformed record (a negative partition).
BROKEN = (header()
          + line(k="poll", t=T0 + 120, keyframe=True, version="2.2.1", admin=False)
          + line(k="count", topic="orders", partition=0, isr=3, replicas=3)
          + "{not json\n"
          + line(k="end", records=2)
          + poll(T0 + 135, False, line(k="leaf", object=URP, attribute="Value", value=0))
          + line(k="count", topic="orders", partition=-1, isr=1, replicas=1))
BROKEN_REJECTS = {"corrupt-line": 1, "incomplete-poll": 1, "no-keyframe": 1, "malformed-record": 1,
                  "damaged-span": 1}  # from the keyframe's poll line to the file's end
# A segment of a schema this reader does not know: its header and every line of it.
FUTURE = header(3) + line(k="poll", t=T0 + 140, keyframe=True) + line(k="end", records=0)


def write_archive(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "2026-11-21T22Z.jsonl").write_text(GOOD)
    (directory / "2026-11-21T23Z.jsonl").write_text(BROKEN)
    (directory / "2026-11-22T00Z.jsonl").write_text(FUTURE)
    return directory


def replay_settings(recompute=RecomputeSettings(), rules=job.HEALTH_RULES):
    return archive_input.Replay(Naming(load_rules(None, rules)).config, recompute)


def read_file(path, source, replay) -> list:
    with open(path, "rb") as f:
        return list(archive_input.read_file(str(path), f, source, replay))


def head(path) -> bytes:
    with open(path, "rb") as f:
        return f.readline(1 << 16)


def runs(path, replay) -> dict:
    """{(object, attribute): [(first poll - T0, last poll - T0, value)]}"""
    out: dict = {}
    for row in read_file(path, str(path.parent), replay):
        if row[0] == "v":
            out.setdefault((row[5], row[6]), []).append((row[3] - T0, row[4] - T0, row[7]))
    return {k: sorted(v) for k, v in out.items()}


def test_archives_are_told_from_dumps_by_their_first_line(tmp_path):
    write_archive(tmp_path / "a")
    dumps = write_dumps(tmp_path / "d")
    assert all(archive_input.is_archive(str(f), head(f)) for f in (tmp_path / "a").iterdir())
    assert not any(archive_input.is_archive(str(f), head(f)) for f in dumps.iterdir())
    # a damaged first line: still the writer's file, read (and its damage counted) as an archive
    for name, archive in (("2026-11-21T22Z.jsonl", True), ("renamed.jsonl", False)):
        (tmp_path / "a" / name).write_text("\x00" + GOOD[1:])
        assert archive_input.is_archive(str(tmp_path / "a" / name), head(tmp_path / "a" / name)) == archive
    # the header names the broker that wrote the file
    assert archive_input.header_broker(head(tmp_path / "a" / "2026-11-22T00Z.jsonl")) == "1"


def test_a_damaged_schema_2_poll_is_a_checksum_reject_and_a_span_not_a_value(tmp_path):
    """The real writer's file (schema 2), one digit of a value changed: the backfill's reader
    rejects the poll (and the change poll after it), says the span, and no run holds the value."""
    from tests.exporter.test_archive_damage import damaged, write_polls
    from tests.exporter.test_archive_writer import T0 as W0

    path = write_polls(tmp_path, 3600, [W0, W0 + 15, W0 + 30])
    damaged(path, b'"value":1500', b'"value":1599', b'"t":1795000015.0')
    rows = read_file(path, str(path.parent), replay_settings())
    reasons = sorted(r.reason for r in rows if r.kind == "r")
    assert reasons == ["checksum-mismatch", "damaged-span", "incomplete-poll", "no-keyframe"]
    span = next(r for r in rows if r.reason == "damaged-span")
    assert span.detail.endswith("2 poll(s) lost, history after the poll at 2026-11-18T11:06:40Z to the file's "
                                "end (2026-11-18T12:00:00Z)")
    assert [r.t0 for r in rows if r.kind == "p"] == [W0]
    assert not any(r.value == 1599 for r in rows if r.kind == "v")


def test_a_2_2_broker_under_kafka_3_7_gets_the_live_recompute(tmp_path):
    path = write_archive(tmp_path) / "2026-11-21T22Z.jsonl"
    got = runs(path, replay_settings())
    # outdated mode on 2.2: URP is replaced (legacy formula), AtMinIsr added (2.2 lacks it); the
    # broker served no UnderMinIsrPartitionCount here, so none is replaced
    assert got[(URP, "Value")] == [(0, 0, 0.0), (45, 90, 1.0)]
    assert got[(AT_MIN, "Value")] == [(0, 0, 0.0), (45, 90, 1.0)]
    assert got[("kafka.cluster:type=Partition,name=AtMinIsr,topic=orders,partition=0", "Value")] == [
        (0, 0, 0.0), (45, 90, 1.0)]
    assert got[("kafka.cluster:type=Partition,name=AtMinIsr,topic=orders,partition=1", "Value")] == [(0, 90, 0.0)]
    assert got[("kafka.server:type=ReplicaManager,name=ReassigningPartitions", "Value")] == [(0, 90, 0.0)]
    # the meter's count is a leaf as recorded, changing at T0+90
    assert got[(REPLICATION_IN, "Count")] == [(0, 45, 1200.0), (90, 90, 1500.0)]
    assert ("kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount", "Value") not in got


def test_the_configured_mode_decides_what_is_recomputed(tmp_path):
    """A 4.1 broker's own values stand under `outdated` (even a wrong one: it is what live served);
    `all` replaces them; no recompute at all leaves a 2.2 broker without AtMinIsr, as live."""
    text = GOOD.replace('"2.2.1"', '"4.1.0"').replace(
        line(k="leaf", object=URP, attribute="Value", value=1), line(k="leaf", object=URP, attribute="Value", value=7))
    path = tmp_path / "2026-11-21T22Z.jsonl"
    path.write_text(text)
    assert runs(path, replay_settings())[(URP, "Value")] == [(0, 0, 0.0), (45, 90, 7.0)]
    assert runs(path, replay_settings(RecomputeSettings(mode="all")))[(URP, "Value")] == [(0, 0, 0.0), (45, 90, 1.0)]
    legacy = write_archive(tmp_path / "legacy") / "2026-11-21T22Z.jsonl"
    got = runs(legacy, replay_settings(None))
    assert (AT_MIN, "Value") not in got and got[(URP, "Value")] == [(0, 0, 0.0), (45, 90, 1.0)]


def test_bad_input_is_counted_per_file_and_reason(tmp_path):
    directory = write_archive(tmp_path)
    replay = replay_settings()
    found = {}
    for name, lines in (("2026-11-21T22Z.jsonl", GOOD_LINES), ("2026-11-21T23Z.jsonl", 9),
                        ("2026-11-22T00Z.jsonl", 3)):
        rows = read_file(directory / name, str(directory), replay)
        assert [r[10] for r in rows if r[0] == "f"] == [lines]
        reasons: dict = {}
        for r in rows:
            if r[0] == "r":
                reasons[r[11]] = reasons.get(r[11], 0) + 1
        found[name] = reasons
    assert found == {"2026-11-21T22Z.jsonl": {"torn-last-line": 1},
                     "2026-11-21T23Z.jsonl": BROKEN_REJECTS,
                     "2026-11-22T00Z.jsonl": {"unknown-schema-version": 3}}


def test_mixed_inputs_values_by_hand(mixed_run):
    """The archive and the dumps read from HDFS (conftest.py), the output on the local disk."""
    base, code = mixed_run
    series = read_series(base / "out")
    # steps every 30 s from T0: a poll's values hold until the next poll (T0 -> T0+45 -> T0+90),
    # the last one up to --max-hold (5m) past it, here the grid's end
    assert series['kafka_server_replicamanager_underreplicatedpartitions{broker="1"}'] == [0, 0, 1, 1, 1, 1]
    assert series['kafka_server_replicamanager_atminisrpartitioncount{broker="1"}'] == [0, 0, 1, 1, 1, 1]
    assert series['kafka_cluster_partition_atminisr{broker="1",topic="orders",partition="0"}'] == [0, 0, 1, 1, 1, 1]
    assert series['kafka_server_brokertopicmetrics_replicationbytesin_total{broker="1"}'] == [
        1200, 1200, 1200, 1500, 1500, 1500]
    # the dumps' cluster-wide view beside them, as test_job has it
    assert series["kafka_server_replicamanager_underreplicatedpartitions"] == [0, 0, 1, 1, 1, 1]
    text = "".join(f.read_text() for f in (base / "out").glob("*.om"))
    assert "# TYPE kafka_server_brokertopicmetrics_replicationbytesin counter\n" in text
    assert code == job.EXIT_REJECTS


def test_mixed_inputs_rejects_and_manifest(mixed_run):
    base, _ = mixed_run
    out = base / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    archive_rejects = {"torn-last-line": 1, "unknown-schema-version": 3, **BROKEN_REJECTS}
    assert manifest["inputs"] == {
        "files": 6, "archive_files": 3, "archived_polls": 3,
        "lines": 10 + GOOD_LINES + 9 + 3,
        "partition_states": 6 + 3 * 2,  # the dumps' 6, and 2 hosted partitions at each of 3 polls
        "rejected": 1 + sum(archive_rejects.values()),
        "rejected_by_reason": dict(sorted({"unparsable-line": 1, **archive_rejects}.items())),
    }
    rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines()]
    span = next(r for r in rejects if r["reason"] == "damaged-span")
    assert span["detail"] == (f"bytes {len(header())}-{len(BROKEN)} (lines 2-9) unusable: 2 poll(s) lost, history "
                              "from the file's start (2026-11-21T23:00:00Z) to the file's end (2026-11-22T00:00:00Z)")
    # sorted by file (base/archive/... before base/dumps/...) and line
    assert [(os.path.basename(r["file"]), r["line"], r["reason"]) for r in rejects] == [
        ("2026-11-21T22Z.jsonl", GOOD_LINES, "torn-last-line"),
        ("2026-11-21T23Z.jsonl", 2, "damaged-span"),
        ("2026-11-21T23Z.jsonl", 2, "incomplete-poll"),
        ("2026-11-21T23Z.jsonl", 4, "corrupt-line"),
        ("2026-11-21T23Z.jsonl", 6, "no-keyframe"),
        ("2026-11-21T23Z.jsonl", 9, "malformed-record"),
        ("2026-11-22T00Z.jsonl", 1, "unknown-schema-version"),
        ("2026-11-22T00Z.jsonl", 2, "unknown-schema-version"),
        ("2026-11-22T00Z.jsonl", 3, "unknown-schema-version"),
        ("2026-11-21T22-02-00Z_describe.txt", 4, "unparsable-line"),
    ]


def test_several_brokers_need_a_broker_label(tmp_path, spark):
    """Each archive's header says which broker wrote it: two brokers' archives name the same series."""
    write_archive(tmp_path / "b1")
    for f in write_archive(tmp_path / "b2").iterdir():
        f.write_text(f.read_text().replace('"broker": "1"', '"broker": "2"'))
    with pytest.raises(job.UsageError, match=r"the archives of 2 brokers \(1, 2\) would name the same series; set "
                                             "--broker-label"):
        job.run(job.Options([str(tmp_path / "b1"), str(tmp_path / "b2")], str(tmp_path / "out")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b1", "b2"]  # nothing written


def test_dumps_without_min_isr_take_the_configured_values(spark, tmp_path):
    """A describe dump whose topic headers show no min.insync.replicas: the config's
    sidecar.recompute.minInsyncReplicas applies (topic, then default), as the live sidecar without
    the Admin API; a header that shows one wins."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    text = "".join(
        f"Topic: {t}\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: {configs}\n"
        f"\tTopic: {t}\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\n"
        for t, configs in (("orders", ""), ("audit", ""), ("billing", "min.insync.replicas=3")))
    (dumps / "2026-11-21T22-00-00Z_describe.txt").write_text(text)
    config = tmp_path / "sidecar.yml"
    config.write_text(Path(job.__file__).parents[2].joinpath("rules", job.CLUSTER_RULES).read_text()
                      + "sidecar:\n  recompute:\n    minInsyncReplicas: {default: 2, topics: {orders: 3}}\n")
    out = tmp_path / "out"
    assert job.run(job.Options([str(dumps)], str(out), config=str(config), step="30s")) == 0
    series = {k: v[0] for k, v in read_series(out).items()}
    # ISR 2 of 3: orders (3 configured) under min ISR; audit (default 2) at it; billing (3 in its
    # header) under it
    assert series['kafka_cluster_partition_underminisr{leader="1",partition="0",topic="orders"}'] == 1
    assert series['kafka_cluster_partition_atminisr{leader="1",partition="0",topic="audit"}'] == 1
    assert series['kafka_cluster_partition_underminisr{leader="1",partition="0",topic="billing"}'] == 1
    assert series['kafka_cluster_partition_atminisr{leader="1",partition="0",topic="orders"}'] == 0


def test_a_gap_longer_than_max_hold_ends_every_run(tmp_path):
    """The sidecar restarted 1000 s later (a new segment) with the same values: no run spans the
    gap, as Prometheus had no sample in it; a gap within --max-hold is bridged."""
    record = line(k="leaf", object=REPLICATION_IN, attribute="Count", value=1200)
    path = tmp_path / "2026-11-21T22Z.jsonl"
    path.write_text(header() + poll(T0, True, record) + poll(T0 + 200, True, record)
                    + header() + poll(T0 + 1200, True, record))
    replay = archive_input.Replay(replay_settings().config, None, max_hold=300.0)
    assert runs(path, replay)[(REPLICATION_IN, "Count")] == [(0, 200, 1200.0), (1200, 1200, 1200.0)]


def test_keyframes_amid_a_file_change_no_run(tmp_path):
    """The same polls written with a keyframe every other poll and with one for the hour: the same
    runs (a keyframe amid the file is replayed as what differs from the poll before)."""
    from tests.exporter.test_archive_damage import write_polls
    from tests.exporter.test_archive_writer import T0 as W0

    times = [W0 + 15 * i for i in range(6)]
    got = []
    for interval in (20, 3600):
        path = write_polls(tmp_path / str(interval), interval, times)
        rows = read_file(path, "broker-1", replay_settings())
        got.append(sorted(tuple(r)[:8] for r in rows if r.kind == "v"))
    assert got[0] == got[1] and len(got[0]) > 10
