"""`kafka-jmx-sidecar backfill`'s errors a user can act on: the option, what is wrong, exit 2,
before any Spark session starts."""
from __future__ import annotations

from kafka_jmx_sidecar.exporter.commands.cli import main


def test_errors_name_the_option(tmp_path, capsys, spark):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "2026-11-21T22-00-00Z.txt").write_text("")
    out = str(tmp_path / "out")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a backfill's\n")
    cases = [
        (["--input", str(tmp_path / "nope"), "--output", out], "--input "),
        (["--input", str(dumps), "--output", out, "--step", "15"], "--step: not a duration: '15'"),
        (["--input", str(dumps), "--output", out, "--start", "yesterday"], "--start: not a time: 'yesterday'"),
        (["--input", str(dumps), "--output", out, "--config", str(tmp_path / "x.yml")], "x.yml: cannot read the file"),
        (["--input", str(dumps), "--output", str(other)], "exists and is not a backfill output"),
    ]
    for args, message in cases:
        assert main(["backfill", *args]) == 2, args
        err = capsys.readouterr().err
        assert message in err, (args, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dumps", "other"]  # nothing left behind
