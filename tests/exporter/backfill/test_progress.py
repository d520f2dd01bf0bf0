"""What a running backfill says: progress records with --progress (also when stderr is not a
terminal) and none without it, in --log.format, their figures consistent (done <= total, never
going back, the phases in order); the --summary json object, whose figures are those of the files
written; and, when the run fails once Spark works, the progress thread gone, one error line and a
JSON object saying so. The runs are conftest's `command_runs`, which test_job reads too."""
from __future__ import annotations

import itertools
import json
import os
import re
import threading
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.backfill import progress
from kafka_jmx_sidecar.exporter.backfill.progress import PHASES, Phases, Progress, Sample, eta_s, record
from kafka_jmx_sidecar.exporter.commands import cli

FIELDS = ["ts", "level", "logger", "msg", "phase", "elapsed_s", "phase_s", "tasks_done", "tasks_total", "stages",
          "bytes", "bytes_estimate", "bytes_per_s", "eta_s"]


def progress_records(ran) -> list[dict]:
    records = [json.loads(line) for line in ran.stderr.splitlines()]  # every line a JSON record
    return [r for r in records if r["logger"] == progress.LOGGER]


def test_with_progress_records_come_in_the_log_format_with_consistent_figures(command_runs):
    records = progress_records(command_runs["split"])
    assert records, command_runs["split"].stderr
    for r in records:
        assert list(r) == FIELDS and r["level"] == "info" and r["msg"].startswith(f"{r['phase']}: ")
        assert 0 <= r["tasks_done"] <= r["tasks_total"], r
        assert r["eta_s"] is None or r["eta_s"] >= 0
    order = [PHASES.index(r["phase"]) for r in records]
    assert order == sorted(order), [r["phase"] for r in records]  # the phases in their order, none again
    assert {"reading", "judging", "writing"} <= {r["phase"] for r in records}
    for earlier, later in zip(records, records[1:]):
        assert later["elapsed_s"] >= earlier["elapsed_s"]
        if later["phase"] == earlier["phase"]:  # each phase's figures never go back
            assert later["tasks_done"] >= earlier["tasks_done"] and later["tasks_total"] >= earlier["tasks_total"]
            assert later["phase_s"] >= earlier["phase_s"]
    summary = json.loads(command_runs["split"].stdout)
    writing = [r for r in records if r["phase"] == "writing"]
    for earlier, later in zip(writing, writing[1:]):
        assert later["bytes"] >= earlier["bytes"]
    assert all(r["bytes"] is not None and r["bytes"] <= summary["bytes"] for r in writing)
    assert all(r["bytes"] is None and r["bytes_estimate"] is None for r in records if r["phase"] != "writing")
    # the estimate of the bytes to write is that of the sample lines (series, value, time): the
    # files' `# TYPE` and `# EOF` lines aside
    sample_bytes = sum(len(line) + 1 for f in command_runs["split"].out.glob("*.om")
                       for line in f.read_text().splitlines() if not line.startswith("#"))
    assert abs(writing[0]["bytes_estimate"] - sample_bytes) <= 0.01 * sample_bytes, (writing[0], sample_bytes)


def test_without_progress_no_record_and_the_lines_are_logfmt(command_runs):
    ran = command_runs["again"]
    assert ran.code == 0, ran.stderr
    lines = ran.stderr.splitlines()
    assert lines and all(re.match(r'^ts=\S+ level=info logger=kafka_jmx_sidecar\.backfill msg="', line)
                         for line in lines), lines
    assert any('msg="judged and named: about ' in line for line in lines)
    assert not [line for line in lines if f"logger={progress.LOGGER} " in line]


def om_figures(out: Path) -> tuple[int, int]:
    """(series, samples) as the OpenMetrics files hold them."""
    series, samples = set(), 0
    for f in out.glob("*.om"):
        for line in f.read_text().splitlines():
            if not line.startswith("#"):
                series.add(line.rsplit(" ", 2)[0])
                samples += 1
    return len(series), samples


@pytest.mark.parametrize("name, code, status", [("split", 3, "too-many-rejects"), ("again", 0, "ok")])
def test_the_json_summary_is_one_object_with_the_figures_of_the_files_written(command_runs, name, code, status):
    ran = command_runs[name]
    assert ran.code == code
    [line] = ran.stdout.splitlines()
    s = json.loads(line)
    assert (s["status"], s["exit_code"]) == (status, code)
    files = sorted(p.name for p in ran.out.glob("*.om"))
    assert s["output_files"] == files
    assert s["bytes"] == sum(os.path.getsize(ran.out / f) for f in files)
    assert (s["series"], s["samples"]) == om_figures(ran.out)
    manifest = json.loads((ran.out / "manifest.json").read_text())
    assert (s["start"], s["end"], s["semantics"], s["step_seconds"]) == (
        manifest["start"], manifest["end"], manifest["semantics"], manifest["step_seconds"]) == (
        "2026-11-21T22:00:00Z", "2026-11-21T22:02:30Z", "kafka-3.7", 30.0)
    assert (s["input_files"], s["lines_read"], s["partition_states"]) == (3, 10, 6)
    assert s["rejected"] == 1 and s["rejected_by_reason"] == {"unparsable-line": 1}
    assert [r for by_file in s["rejected_by_file"].values() for r in by_file.items()] == [("unparsable-line", 1)]
    assert s["reject_ratio"] == 0.1 and s["output"] == str(ran.out) and s["imported_into"] is None
    assert s["max_reject_ratio"] == {"split": 0.0, "again": 0.1}[name]
    assert list(s["timings"]) == ["judging", "reading", "rejects", "starting", "writing"]  # sorted keys
    assert 0 <= sum(s["timings"].values()) <= s["seconds"] + 0.5


def test_a_run_that_fails_once_spark_works_ends_its_records_and_says_so(command_runs):
    ran = command_runs["failed"]
    assert ran.code == 2
    lines = ran.stderr.splitlines()
    assert lines[-1] == "error: --end is before --start (1795298400.0 < 1795298520.0)", lines
    assert any(re.match(r"^backfill \[ *[\d.]+ s\]: reading: ", line) for line in lines), lines  # text records
    assert not [t for t in threading.enumerate() if t.name == "backfill-progress"]
    assert json.loads(ran.stdout) == {"status": "error", "exit_code": 2, "error": lines[-1][len("error: "):]}
    assert os.listdir(ran.out.parent) == []  # neither the output nor a partial one


def test_progress_is_on_where_a_person_watches_unless_told():
    parser = cli.build_parser()
    leader, follower = os.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as terminal, open(os.devnull, "w") as pipe:
            for args, stderr, wanted in [([], terminal, True), (["--no-progress"], terminal, False),
                                         ([], pipe, False), (["--progress"], pipe, True)]:
                parsed = parser.parse_args(["backfill", "--input", "x", "--output", "y", *args])
                assert cli._progress_wanted(parsed, stderr) is wanted, (args, stderr)
    finally:
        os.close(leader)
        os.close(follower)
    assert parser.parse_args(["backfill", "--input", "x", "--output", "y"]).progress_interval == 5.0


def test_a_record_says_what_is_known_and_the_time_left():
    writing = Sample("writing", 10.0, 8, 14, [19], bytes=300_000_000, bytes_estimate=1_000_000_000,
                     bytes_per_s=50_000_000.0)
    message, fields = record(writing, 42.04)
    assert message == ("writing: 8/14 tasks (stage 19 running), 300.0 MB of about 1.0 GB written at 50.0 MB/s, "
                       "about 14 s left")
    assert fields == {"phase": "writing", "elapsed_s": 42.0, "phase_s": 10.0, "tasks_done": 8, "tasks_total": 14,
                      "stages": [19], "bytes": 300_000_000, "bytes_estimate": 1_000_000_000,
                      "bytes_per_s": 50_000_000, "eta_s": 14}
    # writing with an estimate: only the bytes say (not before the rate is known, nor past the estimate)
    assert eta_s(Sample("writing", 10.0, 8, 14, [19], bytes=0, bytes_estimate=1_000)) is None
    assert eta_s(Sample("writing", 10.0, 8, 14, [19], bytes=2_000, bytes_estimate=1_000, bytes_per_s=100.0)) is None
    # else (Parquet, the other phases) the tasks of the stages submitted at the phase's rate
    assert eta_s(Sample("writing", 10.0, 8, 14, [19], bytes=2_000)) == 8
    assert eta_s(Sample("reading", 4.0, 2, 6, [3, 4])) == 8
    assert eta_s(Sample("reading", 4.0, 0, 6, [3])) is None and eta_s(Sample("reading", 4.0, 6, 6, [])) is None
    assert record(Sample("reading", 0.5, 0, 0, []), 3.0)[0] == "reading: no Spark task yet"


class _NoJobs:
    """Spark's status tracker where no job has started (the tasks' figures are not the point here)."""

    def statusTracker(self):
        return self

    def getActiveStageIds(self):
        return []

    def getJobIdsForGroup(self, group):
        return []


def test_the_bytes_written_never_go_back_while_files_move():
    """A walk of the output that met a file while it moved met it nowhere (a CI run showed a time
    left of -9 s from the negative rate): the bytes shown are the most seen."""
    phases = Phases(clock=itertools.count().__next__)
    phases.enter("writing", 1_000)
    p = Progress(phases, _NoJobs(), written=iter([100, 300, 120, 400]).__next__)
    shown = [p.sample() for _ in range(4)]
    assert [s.bytes for s in shown] == [100, 300, 300, 400]
    assert [s.bytes_per_s for s in shown] == [None, 200.0, 100.0, 100.0]
    assert [eta_s(s) for s in shown] == [None, 4, 7, 6]


def test_a_part_file_met_twice_in_one_walk_counts_once():
    """Spark's committer moves a task's part file, name kept, from the attempt's directory up to the
    writer's while the walk may meet it in both."""
    from kafka_jmx_sidecar.exporter.backfill.writing import written_bytes

    class Walked:
        def files_under(self, uri):
            return [(f"{uri}/.files/_temporary/0/task_1/file=metrics-00000-0000.om/part-00000-u.c000.txt", 90),
                    (f"{uri}/.files/file=metrics-00000-0000.om/part-00000-u.c000.txt", 90),
                    (f"{uri}/.files/file=_figures-00000/part-00000-u.c000.txt", 40),
                    (f"{uri}/metrics-00001-0000.om", 70), (f"{uri}/.files/.part-00001-u.c000.txt.crc", 8)]

    assert written_bytes(Walked(), "file:/out/.partial-1") == 160


def test_files_under_lists_every_file_below(tmp_path, spark):
    from kafka_jmx_sidecar.exporter.backfill.storage import Storage

    (tmp_path / "a").write_bytes(b"x" * 10)
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "e" / "b").write_bytes(b"y" * 32)
    storage = Storage(spark.sparkContext)
    found = sorted((uri.rsplit("/", 2)[-2:], size) for uri, size in storage.files_under(str(tmp_path)))
    assert found == [(["e", "b"], 32), ([tmp_path.name, "a"], 10)] and storage.files_under(str(tmp_path / "nothing")) == []


def test_an_unexpected_failure_is_one_line_of_the_json_summary():
    """A failed Spark job's message holds a Java stack trace: the JSON object keeps what precedes it."""
    from kafka_jmx_sidecar.exporter.backfill import summary

    error = RuntimeError("An error occurred while calling o91.collectToPython.\n: org.apache.spark.SparkException: "
                         "Job aborted due to stage failure: Task 0 in stage 3.0 failed\n\tat org.apache.spark.Foo"
                         "(Foo.scala:1)\n\tat org.apache.spark.Bar(Bar.scala:2)\n")
    assert summary.failure(1, "failed", summary.error_text(error), {"lines_read": 10}) == {
        "lines_read": 10, "status": "failed", "exit_code": 1,
        "error": "RuntimeError: An error occurred while calling o91.collectToPython. : org.apache.spark.SparkException: "
                 "Job aborted due to stage failure: Task 0 in stage 3.0 failed"}


def test_a_refused_import_fails_with_the_runs_figures(tmp_path, capsys, spark):
    """With --summary json the import comes before the summary: promtool (the real one) refusing a
    file ends the run with the figures attached, for the command's one JSON object (no other)."""
    from kafka_jmx_sidecar.exporter.backfill import job
    from kafka_jmx_sidecar.exporter.backfill.storage import Storage

    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics-00000-0000.om").write_text("not OpenMetrics\n")
    opts = job.Options(["in"], str(out), import_dir=str(tmp_path / "tsdb"), summary="json")
    phases = progress.Phases()
    phases.enter("starting")
    with pytest.raises(job.ImportFailed, match="--import: promtool refused metrics-00000-0000.om: ") as failed:
        job._finish(opts, Storage(spark.sparkContext), f"file:{out}", 0,
                    {"output_files": ["metrics-00000-0000.om"], "samples": 7}, phases)
    assert capsys.readouterr().out == ""
    figures = failed.value.figures
    assert (figures["samples"], figures["imported_into"], list(figures["timings"])) == (7, str(tmp_path / "tsdb"),
                                                                                        ["starting", "importing"])
