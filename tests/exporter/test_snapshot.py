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
    member = snap.gzipped(TEXT)
    assert snap.gzipped(TEXT) is member  # once


def test_empty_snapshot():
    snap = Snapshot.empty()
    assert snap.series == 0 and snap.bodies[TEXT] == b"" and snap.bodies[OPENMETRICS] == b""
    length, chunks = assemble(snap, OPENMETRICS, b"", gzip_wanted=False)
    assert (length, b"".join(chunks)) == (6, b"# EOF\n")
