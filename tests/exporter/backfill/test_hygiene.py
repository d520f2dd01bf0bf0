"""What a backfill leaves behind and says when it cannot finish: an output inside an input (or the
reverse) refused before Spark starts; what a killed run left beside the output removed by the next
run; SIGINT and SIGTERM ending a running job with one line and no traceback (and its progress
records, when asked for, before that line); Spark workers that
cannot import the project named in one line. The runs that must end on their own are real
processes (`kafka-jmx-sidecar backfill`), started together to share the wait for their JVMs."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.backfill import job, output, stopping
from kafka_jmx_sidecar.exporter.backfill.progress import PHASES
from kafka_jmx_sidecar.exporter.commands.cli import main
from tests.exporter.backfill.test_job import DUMPS, options, write_dumps

CLI = [sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "backfill"]
PROGRESS = re.compile(rf"^backfill \[ *[\d.]+ s\]: (?:{'|'.join(PHASES)}): ")  # a progress record, as text
REPO = Path(job.__file__).resolve().parents[2]


def test_an_output_inside_an_input_or_the_reverse_is_refused(tmp_path, capsys, spark):
    dumps = write_dumps(tmp_path / "dumps")
    for out, message in [
        (dumps / "backfill", f"--output {dumps / 'backfill'} is inside --input {dumps}: a later run would read"),
        (dumps, f"--output {dumps} is inside --input {dumps}"),
        (tmp_path, f"--input {dumps} is inside --output {tmp_path}: the run replaces {tmp_path}, and the input"),
    ]:
        assert main(["backfill", "--input", str(dumps), "--output", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    # refused before anything was written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dumps"]
    assert sorted(p.name for p in dumps.iterdir()) == sorted(DUMPS)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", ""])
    p.wait()
    return p.pid


def test_a_killed_run_is_cleared_by_the_next_and_others_are_named(ended_runs, spark, capsys):
    """A backfill killed (SIGKILL to its process group: nothing of it runs again) once its partial
    output exists; the next run into the same output removes it. What it cannot know is over
    (another host's, a name without its maker) it names and leaves. Both runs replace a previous
    backfill's output (--replace): the killed one left it whole, the next one replaces it."""
    base, runs, codes = ended_runs
    killed, out = runs["SIGKILL"], base / "kill" / "out"
    assert codes["SIGKILL"] == -signal.SIGKILL
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "metrics-00009-0000.om"]
    (left,) = out.parent.glob(".out.partial-*")
    assert left.name.startswith(f".out.partial-{killed.proc.pid}@{socket.gethostname()}-")
    foreign = out.parent / ".out.partial-1@elsewhere-abcdefgh"
    legacy = out.parent / ".out.partial-k2j3h4g5"
    for d in (foreign, legacy):
        d.mkdir()
    capsys.readouterr()
    assert job.run(options(write_dumps(base / "hand"), out, max_reject_ratio=1.0, replace=True)) == 0
    err = capsys.readouterr().err
    assert f"removed {left}: left by a run that was killed (process {killed.proc.pid} is gone)" in err
    assert f"left {foreign}: written by process 1 on elsewhere; remove it once that run is over" in err
    assert f"left {legacy}: an earlier run's partial output; remove it if no backfill is writing {out}" in err
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([".out.partial-1@elsewhere-abcdefgh",
                                                                   ".out.partial-k2j3h4g5", "out"])
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "metrics-00000-0000.om", "rejects.jsonl"]


def test_an_output_a_killed_run_was_replacing_is_put_back(tmp_path, spark):
    """Killed between moving the old output aside and renaming the new one into place: the next
    run puts the old one back before it begins (and removes what was beside it)."""
    from kafka_jmx_sidecar.exporter.backfill.storage import Storage

    target = tmp_path / "out"
    old = tmp_path / f".out.old-{_dead_pid()}@{socket.gethostname()}-abcdefgh"
    (old / "out").mkdir(parents=True)
    (old / "out" / "manifest.json").write_text("{}\n")
    output.Output(Storage(spark.sparkContext), f"file:{target}", str(target)).clear_stale()
    assert (target / "manifest.json").read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _many_dumps(directory: Path, dumps: int = 3, partitions: int = 6000) -> Path:
    """Enough for the read to take the Python workers a few seconds."""
    directory.mkdir(parents=True)
    for d in range(dumps):
        lines = []
        for t in range(partitions // 50):
            lines.append(f"Topic: t{t}\tTopicId: x\tPartitionCount: 50\tReplicationFactor: 3\t"
                         "Configs: min.insync.replicas=2")
            lines += [f"\tTopic: t{t}\tPartition: {p}\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2{',3' * ((p + d) % 2)}"
                      for p in range(50)]
        (directory / f"2026-11-21T22-0{d}-00Z_describe.txt").write_text("\n".join(lines) + "\n")
    return directory


class Run:
    """A backfill process of its own (its own process group, as a shell starts a command), its
    stderr collected; `signal_when(text, signum)` signals it once a line holding `text` appears.
    `command`: the command before `args` (the CLI's backfill, or spark-submit and its script, whose
    Python's stderr comes on spark-submit's stdout: `merged` collects both)."""

    def __init__(self, args: list[str], env: dict | None = None, command: list[str] = CLI, merged: bool = False,
                 cwd: Path = REPO):
        self.proc = subprocess.Popen([*command, *args], cwd=cwd, stdout=subprocess.PIPE if merged else
                                     subprocess.DEVNULL, stderr=subprocess.STDOUT if merged else subprocess.PIPE,
                                     text=True, env=env, start_new_session=True)
        self.stream = self.proc.stdout if merged else self.proc.stderr
        self.lines: list[str] = []
        self.signalled_after: int | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.stream:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 300) -> bool:
        """Until a line holding `text` appears (True) or the process ends (False)."""
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            if self.proc.poll() is not None:
                return False
            assert time.monotonic() < deadline, self.lines
            time.sleep(0.05)
        return True

    def signal_when(self, text: str, signum: int, group: bool, timeout: float = 300) -> None:
        self.wait_for(text, timeout)
        time.sleep(0.5)  # into the Spark job the line announces
        self.signalled_after = len(self.lines)
        (os.killpg if group else os.kill)(self.proc.pid, signum)

    def finish(self, timeout: float = 300) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(timeout)
        return code

    def group_gone(self, timeout: float = 30) -> bool:
        """Whether every process it started (the Spark JVM, its Python workers) ended too."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                return True
            time.sleep(0.2)
        return False


def python_with(path: list[Path], name: str) -> Path:
    """An interpreter of this environment whose only packages are on `path`: site-packages' .pth
    files (the project's editable install) unread."""
    python = path[0].parent / name
    python.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{":".join(map(str, path))}" exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    return python


@pytest.fixture(scope="module")
def ended_runs(tmp_path_factory):
    """Five backfills at once: SIGKILL (to the process group: nothing of it runs again), Ctrl-C
    (SIGINT to the process group, as a terminal sends it) and SIGTERM (to the process, as `kill`
    sends it) during the read; and two whose Spark workers run
    another interpreter, out of the checkout (whose kafka_jmx_sidecar/ would be on their path):
    one with pyspark but without the project's dependencies (the job ships the project, not
    PyYAML), one with another release of the project installed."""
    base = tmp_path_factory.mktemp("ended")
    dumps = _many_dumps(base / "dumps")
    site = Path(__import__("pyspark").__file__).resolve().parents[1]
    (base / "spark-only").mkdir()
    for package in ("pyspark", "py4j"):
        (base / "spark-only" / package).symlink_to(site / package)
    older = base / "older" / "kafka_jmx_sidecar" / "exporter"
    older.mkdir(parents=True)
    (older.parent / "__init__.py").write_text("")
    (older / "__init__.py").write_text('__version__ = "0.0.9"\n')
    pythons = {"workers": python_with([base / "spark-only"], "python-without-pyyaml"),
               "release": python_with([base / "older", site], "python-with-0.0.9")}
    previous = base / "kill" / "out"  # a previous backfill's output, which the killed run would replace
    previous.mkdir(parents=True)
    (previous / "manifest.json").write_text("{}\n")
    (previous / "metrics-00009-0000.om").write_text("# EOF\n")
    runs = {
        "SIGKILL": Run(["--input", str(dumps), "--output", str(previous), "--replace"]),
        # with progress records (stderr is a pipe: asked for), which end with the run
        "SIGINT": Run(["--input", str(dumps), "--output", str(base / "int" / "out"), "--progress",
                       "--progress-interval", "200ms"]),
        "SIGTERM": Run(["--input", str(dumps), "--output", str(base / "term" / "out")]),
        **{name: Run(["--input", str(dumps), "--output", str(base / name / "out")], cwd=base,
                     env={**os.environ, "PYSPARK_PYTHON": str(python)}) for name, python in pythons.items()},
    }
    began = time.monotonic()
    # SIGINT once a progress record of the read has come, SIGTERM and SIGKILL once the read has begun
    for name, group, text in (("SIGKILL", True, "reading 3 describe dumps"), ("SIGINT", True, "]: reading: "),
                              ("SIGTERM", False, "reading 3 describe dumps")):
        runs[name].signal_when(text, getattr(signal, name), group)
    codes = {name: r.finish() for name, r in runs.items()}
    print(f"five backfills ended in {time.monotonic() - began:.1f} s")
    return base, runs, codes


@pytest.mark.parametrize("name, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_ends_a_running_backfill_with_one_line(ended_runs, name, code):
    base, runs, codes = ended_runs
    run = runs[name]
    out = base / ("int" if name == "SIGINT" else "term") / "out"
    assert codes[name] == code, run.lines
    # a progress record written before the signal may be read after it; none follows the last line
    after = [line for line in run.lines[run.signalled_after:] if not PROGRESS.match(line)]
    assert after == [f"backfill: stopped by {name}; removed the partial output; {out} is as it was"], run.lines
    assert run.lines[-1] == after[0]
    assert any(PROGRESS.match(line) for line in run.lines[:run.signalled_after]) == (name == "SIGINT"), run.lines
    assert not any("Traceback" in line for line in run.lines), run.lines
    assert os.listdir(out.parent) == []  # neither the output nor a partial one
    assert run.group_gone(), "a process the backfill started outlived it"


@pytest.mark.parametrize("name, problem", [
    ("workers", "cannot run the backfill: there is no module named yaml; install kafka-jmx-sidecar and its "
                "dependencies where they run (pip install 'kafka-jmx-sidecar[spark]'), or ship a packed environment "
                "with spark.archives"),
    ("release", "import kafka-jmx-sidecar 0.0.9, this driver is 0.1.0: install 0.1.0 where they run, or remove "
                "theirs so that the backfill ships its own"),
])
def test_workers_that_cannot_run_the_project_fail_in_one_line(ended_runs, name, problem):
    """The project itself is shipped where it is missing ("workers": the job says so); what
    shipping cannot mend is one line naming it, before any output."""
    base, runs, codes = ended_runs
    run = runs[name]
    assert codes[name] == 2, "\n".join(run.lines)
    python = base / {"workers": "python-without-pyyaml", "release": "python-with-0.0.9"}[name]
    assert run.lines[-1] == f"error: Spark's Python workers ({python}) {problem}"
    assert any("shipped kafka-jmx-sidecar 0.1.0 to Spark's executors" in line for line in run.lines) == \
        (name == "workers"), run.lines
    # Spark's own start-up lines aside, nothing else: no Java stack, no task failure, no traceback
    assert not [line for line in run.lines if "Traceback" in line or line.startswith("\tat ") or " ERROR " in line]
    assert os.listdir(base / name) == []


def test_quieting_spark_for_its_stop_keeps_its_console_threshold(spark):
    """Ctrl-C's last line came after one of Spark's INFO lines (MemoryStore's, in a full run).
    Spark's console prints WARN and above of a root logger at INFO; its own setLogLevel("OFF")
    lowers the root level and then drops that threshold, and a driver thread that passed the INFO
    level just before printed once the threshold was gone. Quieting closes the level only."""
    jvm = spark.sparkContext._jvm
    console = getattr(getattr(jvm.org.apache.spark.internal, "Logging$"), "MODULE$")
    root = jvm.org.apache.logging.log4j.LogManager.getRootLogger()
    before = root.getLevel()
    assert (str(before), str(console.sparkShellThresholdLevel())) == ("INFO", "WARN")  # Spark's defaults
    try:
        stopping.quiet(spark.sparkContext)
        assert (str(root.getLevel()), str(console.sparkShellThresholdLevel())) == ("OFF", "WARN")
    finally:
        jvm.org.apache.logging.log4j.core.config.Configurator.setRootLevel(before)
