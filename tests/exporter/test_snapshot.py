"""Snapshots: compressed once per poll, served as gzip or decompressed piece by piece, other
formats rendered on first request from the same samples."""
from __future__ import annotations

import gzip

from kafka_jmx_sidecar.exporter.output import exposition
from kafka_jmx_sidecar.exporter.base.model import Sample
from kafka_jmx_sidecar.exporter.poll.snapshot import OPENMETRICS, TEXT, Snapshot, assemble

SAMPLES = [Sample("kafka_cluster_partition_underreplicated", (("partition", str(p)), ("topic", f"t{t}")),
                  float(p % 2), "gauge", "h") for t in range(50) for p in range(100)] + \
          [Sample("kafka_server_x_total", (), 12.0, "counter", "c")]


def test_a_snapshot_holds_the_rendered_bodies_compressed():
    snap = Snapshot.render(SAMPLES, 1.0, 0.5)
    assert snap.series == len(SAMPLES)
    text = exposition.render_text(SAMPLES)
    om = exposition.render_openmetrics(SAMPLES)
    assert snap.bodies[TEXT] == text
    assert snap.bodies[OPENMETRICS] + b"# EOF\n" == om  # the EOF follows the self metrics
    assert gzip.decompress(snap.gzipped(TEXT)) == text
    assert snap.size(TEXT) == len(text) and snap.size(OPENMETRICS) == len(om) - len(b"# EOF\n")
    assert len(snap.gzipped(TEXT)) < len(text) / 5


def test_a_response_is_the_body_then_the_self_metrics_in_either_encoding():
    snap = Snapshot.render(SAMPLES, 1.0, 0.5)
    tail = b"# HELP up x\n# TYPE up gauge\nup 1.0\n"
    for fmt, eof in ((TEXT, b""), (OPENMETRICS, b"# EOF\n")):
        want = snap.bodies[fmt] + tail + eof
        length, chunks = assemble(snap, fmt, tail, gzip_wanted=True)
        chunks = list(chunks)
        assert length == sum(map(len, chunks))
        assert gzip.decompress(b"".join(chunks)) == want  # two gzip members: one stream
        length, chunks = assemble(snap, fmt, tail, gzip_wanted=False)
        chunks = list(chunks)
        assert length == len(want) and b"".join(chunks) == want


def test_identity_responses_come_in_bounded_pieces():
    big = [Sample(f"m{i % 7}", (("id", str(i)),), float(i), "gauge", "h") for i in range(60_000)]
    snap = Snapshot.render(big, 1.0, 0.5, formats=(TEXT,))
    length, chunks = assemble(snap, TEXT, b"", gzip_wanted=False)
    pieces = list(chunks)
    assert length > 1 << 20 and len(pieces) >= 2 and max(map(len, pieces)) <= 1 << 20
    assert b"".join(pieces) == exposition.render_text(big)


def test_a_format_not_rendered_by_the_poll_is_rendered_at_its_first_request():
    snap = Snapshot.render(SAMPLES, 1.0, 0.5, formats=(OPENMETRICS,))
    assert snap.rendered(OPENMETRICS) and not snap.rendered(TEXT)
    assert snap.bodies[TEXT] == exposition.render_text(SAMPLES)
    assert snap.rendered(TEXT)
    members = snap.members(TEXT)
    assert snap.members(TEXT) is members  # once


def test_empty_snapshot():
    snap = Snapshot.empty()
    assert snap.series == 0 and snap.bodies[TEXT] == b"" and snap.bodies[OPENMETRICS] == b""
    length, chunks = assemble(snap, OPENMETRICS, b"", gzip_wanted=False)
    assert (length, b"".join(chunks)) == (6, b"# EOF\n")


def _table_family(values: list[int], template=None, columns=None):
    """A family of one table's series (as the rule engine makes them for Partition gauges)."""
    from array import array

    from kafka_jmx_sidecar.exporter.base.families import PARTITION, TOPIC, Family, MemberOutcome, TableSeries
    from kafka_jmx_sidecar.exporter.base.model import BeanTable

    n = len(values)
    topics, topic, partition, rank = columns or (["t"], array("i", [0] * n), array("i", range(n)), array("I", range(n)))
    table = BeanTable("kafka.cluster", (("type", "Partition"), ("name", "UnderReplicated")),
                      "com.yammer.metrics.reporting.JmxReporter$Gauge", "Value", "d", "java.lang.Object", True,
                      topics, topic, partition, rank, array("q", values), bytearray([1] * n))
    template = template or MemberOutcome("kafka_cluster_partition_underreplicated",
                                         (("topic", TOPIC), ("partition", PARTITION)), "gauge", "h", None, 1.0, "Value")
    return Family("kafka_cluster_partition_underreplicated", "gauge", "h",
                  [TableSeries(table.frozen(), template, array("I", range(n)))]), template, (topics, topic, partition, rank)


def test_what_did_not_change_since_the_last_poll_is_not_rendered_again():
    """A poll whose families hold what the last poll's held takes its compressed chunks as they
    are; a chunk with one value changed, a sample added or another HELP is rendered again; the
    body is always what rendering everything gives."""
    from kafka_jmx_sidecar.exporter.base.families import Family, of_samples

    small = of_samples(SAMPLES[-1:] + [Sample("kafka_server_y", (), 1.0, "gauge", "y")])
    table, template, columns = _table_family([0] * 5000)
    first = Snapshot.render_families([table] + small, 1.0, 0.5, formats=(TEXT,))
    assert (first.kept[TEXT].rendered, first.kept[TEXT].reused) == (2, 0)  # the table's chunk, the small ones'

    same_table, _, _ = _table_family([0] * 5000, template, columns)  # new objects, the same values
    second = Snapshot.render_families([same_table] + small, 2.0, 0.5, formats=(TEXT,), previous=first)
    assert (second.kept[TEXT].rendered, second.kept[TEXT].reused) == (0, 2)
    assert second.members(TEXT)[0] is first.members(TEXT)[0]
    assert second.bodies[TEXT] == first.bodies[TEXT]

    moved, _, _ = _table_family([0] * 4999 + [1], template, columns)
    relabelled = [Family(f.name, f.type, "another help" if f.name == "kafka_server_y" else f.help, f.parts)
                  for f in small]
    third = Snapshot.render_families([moved] + relabelled, 3.0, 0.5, formats=(TEXT, OPENMETRICS), previous=second)
    assert (third.kept[TEXT].rendered, third.kept[TEXT].reused) == (2, 0)
    whole = Snapshot.render_families([moved] + relabelled, 3.0, 0.5, formats=(TEXT, OPENMETRICS))
    assert third.bodies[TEXT] == whole.bodies[TEXT] and b"another help" in third.bodies[TEXT]
    assert third.bodies[OPENMETRICS] == whole.bodies[OPENMETRICS]
    assert b'partition="4999",} 1.0' in third.bodies[TEXT]

    added = of_samples(SAMPLES[-1:] + [Sample("kafka_server_y", (), 1.0, "gauge", "y"),
                                       Sample("kafka_server_z", (), 2.0, "gauge", "z")])
    fourth = Snapshot.render_families([moved] + added, 4.0, 0.5, formats=(TEXT,), previous=third)
    assert (fourth.kept[TEXT].rendered, fourth.kept[TEXT].reused) == (1, 1)
    assert gzip.decompress(fourth.gzipped(TEXT)) == fourth.bodies[TEXT] == \
        Snapshot.render_families([moved] + added, 4.0, 0.5, formats=(TEXT,)).bodies[TEXT]
