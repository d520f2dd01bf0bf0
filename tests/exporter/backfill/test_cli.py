"""`kafka-jmx-sidecar backfill`'s errors a user can act on: the option, URI or file, what is wrong,
exit 2, before any Spark job runs and before anything is written."""
from __future__ import annotations

from kafka_jmx_sidecar.exporter.commands.cli import main
from tests.exporter.backfill.conftest import put
from tests.exporter.backfill.test_job import write_dumps


def test_errors_name_the_option(tmp_path, capsys, spark):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "2026-11-21T22-00-00Z.txt").write_text("")
    out = str(tmp_path / "out")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("not a backfill's\n")
    previous = tmp_path / "previous"
    previous.mkdir()
    (previous / "manifest.json").write_text("{}\n")
    hidden = dumps / "_2026-11-21T22-01-00Z.txt"
    hidden.write_text("")
    cases = [
        (["--input", str(tmp_path / "nope"), "--output", out],
         f"--input {tmp_path / 'nope'}: no such file or directory"),
        (["--input", str(dumps), "--output", out, "--step", "15"], "--step: not a duration: '15'"),
        (["--input", str(dumps), "--output", out, "--start", "yesterday"], "--start: not a time: 'yesterday'"),
        (["--input", str(dumps), "--output", out, "--config", str(tmp_path / "x.yml")], "x.yml: cannot read the file"),
        (["--input", str(dumps), "--output", str(other)], "exists and is not a backfill output"),
        (["--input", str(dumps), "--output", str(previous)],
         f"--output {previous}: holds a previous backfill's output; name another directory, remove it, or pass "
         "--replace to replace it"),
        # a scheme Hadoop knows whose client Spark lacks, and one it does not know
        (["--input", "s3a://bucket/dumps", "--output", out],
         "--input s3a://bucket/dumps: Spark has no file system for s3a:// (s3a://bucket/dumps: Class "
         "org.apache.hadoop.fs.s3a.S3AFileSystem not found); put the Hadoop client of s3a:// on its class path"),
        (["--input", str(dumps), "--output", "nope://somewhere/out"],
         "--output nope://somewhere/out: Spark has no file system for nope://"),
        (["--input", str(dumps), "--output", out, "--max-file-bytes", "0"], "--max-file-bytes 0: at least 1"),
        # a file Hadoop's readers would skip, given by name
        (["--input", str(hidden), "--output", out], f"--input {hidden}: its name starts with . or _, which Hadoop's "
         "input formats skip as hidden; rename the file"),
    ]
    for args, message in cases:
        assert main(["backfill", *args]) == 2, args
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (args, err)
    # nothing left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dumps", "other", "previous"]
    assert sorted(p.name for p in previous.iterdir()) == ["manifest.json"]


def test_an_unreadable_file_on_hdfs_stops_the_run_before_any_output(tmp_path, capsys, spark, hdfs):
    """A dump on HDFS the backfill's user may not read (HDFS checks permissions for every user but
    the NameNode's own): one line naming the file's URI and what to do; the output never begun."""
    dumps = put(spark, write_dumps(tmp_path / "dumps"), hdfs.url("/unreadable/dumps"))
    jvm = spark.sparkContext._jvm
    locked = jvm.org.apache.hadoop.fs.Path(f"{dumps}/2026-11-21T22-01-00Z_describe.txt")
    locked.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).setPermission(
        locked, jvm.org.apache.hadoop.fs.permission.FsPermission(0))
    out = hdfs.url("/unreadable/out")
    assert main(["backfill", "--input", dumps, "--output", out]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --input {dumps}/2026-11-21T22-01-00Z_describe.txt: cannot be read (") and \
        "Permission denied: user=" in err and err.rstrip().endswith(
            "give the user the backfill runs as read access to it, or leave it out of --input") and \
        err.count("\n") == 1, err
    fs = locked.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    assert [str(s.getPath().getName()) for s in fs.listStatus(jvm.org.apache.hadoop.fs.Path(hdfs.url("/unreadable")))] \
        == ["dumps"]
