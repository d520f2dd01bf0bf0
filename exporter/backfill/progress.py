"""What a backfill says while it runs. `Phases`: the run's steps in order (starting, reading,
judging, writing, rejects, importing), each timed for the summary, each Spark job tagged with its
step's job group. `Progress`, when asked for: a thread that every few seconds reads Spark's status
tracker (the tasks of the step's jobs done and known, the stages running) and, while writing, the
bytes of the partial output on its file system, and logs one record of them with the rate and the time left.

Spark's own console progress bar stays off (session.py): it redraws one terminal line with
carriage returns, which a log file or a JSON log pipeline cannot take; these records are lines in
the run's log format. The thread only reads (the tracker, the output's size): it never touches the job,
and ends before the run's end does anything else (a signal's one line, the output's placement)."""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from kafka_jmx_sidecar.exporter.backfill.session import log

PHASES = ("starting", "reading", "judging", "writing", "rejects", "importing")
LOGGER = "kafka_jmx_sidecar.backfill.progress"
DEFAULT_EVERY_S = 5.0
JOIN_TIMEOUT_S = 5  # a tracker call the JVM never answers (it is going away) does not hold the run


class Phases:
    """The run's phases, timed (`timings`); `now` is (name, when it began, the bytes it is expected
    to write or None), replaced whole so that the progress thread reads one consistent tuple."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.run_id = uuid.uuid4().hex[:12]  # job groups of this run only (a session may run several)
        self.began = clock()
        self.seconds: dict[str, float] = {}
        self.now: tuple[str, float, int | None] | None = None
        self.sc = None

    def enter(self, name: str, bytes_estimate: int | None = None) -> None:
        self.end()
        self.now = (name, self.clock(), bytes_estimate)
        if self.sc is not None:
            self.sc.setJobGroup(self.group(name), f"kafka-jmx-sidecar backfill: {name}")

    def end(self) -> None:
        if self.now is not None:
            name, began, _ = self.now
            self.seconds[name] = round(self.seconds.get(name, 0.0) + self.clock() - began, 1)
            self.now = None

    def group(self, name: str) -> str:
        return f"backfill-{self.run_id}-{name}"

    def attach(self, sc) -> None:
        """From now on each phase's Spark jobs carry its job group (Spark's UI shows its name)."""
        self.sc = sc
        if self.now is not None:
            self.enter(self.now[0], self.now[2])

    def detach(self) -> None:
        """The jobs that follow (a caller's own, on the same session) carry no group of this run."""
        if self.sc is not None:
            self.sc.setLocalProperty("spark.jobGroup.id", None)
            self.sc.setLocalProperty("spark.job.description", None)
            self.sc = None

    def timings(self) -> dict[str, float]:
        return {name: self.seconds[name] for name in PHASES if name in self.seconds}


@dataclass
class Sample:
    """One reading of the run: the phase, its seconds, the tasks of its Spark jobs (done, in the
    stages submitted so far), the stages running, and the bytes written so far (None: the phase
    writes no output)."""

    phase: str
    phase_s: float
    tasks_done: int
    tasks_total: int
    stages: list[int]
    bytes: int | None = None
    bytes_estimate: int | None = None
    bytes_per_s: float | None = None


def eta_s(s: Sample) -> int | None:
    """Seconds left: while writing OpenMetrics, the bytes still expected at the rate since the first
    bytes (none before: the tasks of the shuffle before the writing say nothing of it); else the
    tasks not done of the stages submitted so far at the phase's task rate (a phase whose later
    Spark jobs have not started yet takes longer than this says). None: no basis (yet)."""
    if s.bytes_estimate:
        if s.bytes and s.bytes_per_s and s.bytes_per_s > 0 and s.bytes < s.bytes_estimate:
            return round((s.bytes_estimate - s.bytes) / s.bytes_per_s)
        return None
    if s.tasks_done and s.phase_s > 0 and s.tasks_total > s.tasks_done:
        return round((s.tasks_total - s.tasks_done) * s.phase_s / s.tasks_done)
    return None


def record(s: Sample, elapsed_s: float) -> tuple[str, dict]:
    """The message and the fields of a progress record (the fields' names are stable: log
    pipelines read them)."""
    eta = eta_s(s)
    fields = {"phase": s.phase, "elapsed_s": round(elapsed_s, 1), "phase_s": round(s.phase_s, 1),
              "tasks_done": s.tasks_done, "tasks_total": s.tasks_total, "stages": s.stages,
              "bytes": s.bytes, "bytes_estimate": s.bytes_estimate,
              "bytes_per_s": None if s.bytes_per_s is None else round(s.bytes_per_s), "eta_s": eta}
    parts = [f"{s.tasks_done}/{s.tasks_total} tasks" if s.tasks_total else "no Spark task yet"]
    if s.stages:
        parts[0] += f" (stage{'s' if len(s.stages) > 1 else ''} {', '.join(map(str, s.stages))} running)"
    if s.bytes is not None:
        parts.append(_size(s.bytes) + (f" of about {_size(s.bytes_estimate)}" if s.bytes_estimate else "")
                     + " written" + (f" at {_size(s.bytes_per_s)}/s" if s.bytes_per_s is not None else ""))
    if eta is not None:
        parts.append(f"about {eta} s left")
    return f"{s.phase}: " + ", ".join(parts), fields


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


class Tracker:
    """The tasks of a phase's Spark jobs, from the status tracker. A stage counts once submitted
    (running, or with tasks done): the stages a job skips (their shuffle output was there already)
    and those not yet started count nowhere. Each stage's figures are the most seen, so done never
    goes back (a stage attempt that is retried starts its count again)."""

    def __init__(self, sc):
        self.status = sc.statusTracker()
        self.phase: str | None = None
        self.stages: dict[int, tuple[int, int]] = {}  # stage -> (done, tasks)

    def read(self, phase: str, group: str) -> tuple[int, int, list[int]]:
        if phase != self.phase:
            self.phase, self.stages = phase, {}
        running = set(self.status.getActiveStageIds())
        for job in self.status.getJobIdsForGroup(group):
            info = self.status.getJobInfo(job)
            for stage in info.stageIds if info is not None else ():
                st = self.status.getStageInfo(stage)
                if st is None or not (stage in running or st.numCompletedTasks or stage in self.stages):
                    continue
                done, tasks = self.stages.get(stage, (0, 0))
                self.stages[stage] = (max(done, st.numCompletedTasks), max(tasks, st.numTasks))
        done = sum(d for d, _ in self.stages.values())
        total = sum(t for _, t in self.stages.values())
        return done, max(done, total), sorted(running & set(self.stages))


class Progress:
    """A progress record every `every_s` seconds from a thread of its own while the `with` block
    runs; the block's end (the run done, failed or interrupted) stops it before anything else
    happens. `quiet()` true (a signal came): no record any more."""

    def __init__(self, phases: Phases, sc, written: Callable[[], int], every_s: float = DEFAULT_EVERY_S,
                 quiet=lambda: False):
        """`written()`: the bytes of the partial output so far (writing.written_bytes)."""
        self.phases, self.written, self.every_s, self.quiet = phases, written, every_s, quiet
        self.tracker = Tracker(sc)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="backfill-progress", daemon=True)
        self._first_bytes: tuple[str, float, int] | None = None  # (phase, when, bytes) first seen
        self._most_written = 0

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(JOIN_TIMEOUT_S)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                sample = self.sample()
            except Exception:  # the JVM is going away (the run failed or was stopped): nothing to say
                return
            if sample is None or self._stop.is_set() or self.quiet():
                continue
            message, fields = record(sample, self.phases.clock() - self.phases.began)
            log(message, LOGGER, **fields)

    def sample(self) -> Sample | None:
        now = self.phases.now
        if now is None:
            return None
        phase, began, estimate = now
        done, total, running = self.tracker.read(phase, self.phases.group(phase))
        t = self.phases.clock()
        s = Sample(phase, t - began, done, total, running)
        if phase == "writing":
            # the most seen: a walk of the output that met a file while it moved met it nowhere
            # (writing.written_bytes), which would show the bytes going back and a negative rate
            self._most_written = max(self._most_written, self.written())
            s.bytes, s.bytes_estimate = self._most_written, estimate
            s.bytes_per_s = self._rate(phase, t, s.bytes)
        return s

    def _rate(self, phase: str, t: float, written: int) -> float | None:
        """Bytes a second since the first bytes were seen (the stages before them, a shuffle, write
        nothing: counting from the phase's start would understate the rate)."""
        first = self._first_bytes
        if first is None or first[0] != phase:
            self._first_bytes = (phase, t, written) if written else None
            return None
        return (written - first[2]) / (t - first[1]) if t > first[1] else None
