"""Ending a run on SIGINT (Ctrl-C) or SIGTERM: one line on stderr, no traceback, the Spark session
stopped (so no task writes into the output any more) and the partial output removed by the job.

While a run holds `Signals`, either signal raises KeyboardInterrupt in the main thread, which py4j
unwinds cleanly from a call the main thread was waiting on, and remembers which signal it was.
pyspark installs its own SIGINT handler when its context starts, one that calls into the JVM over
the connection the interrupted main thread may be reading: `Signals.install()` again once the
session exists. Py4J logs the interrupted call's traceback through the root logger; once a signal
came, records from py4j and pyspark are dropped.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import threading
import warnings
from contextlib import contextmanager

HANDLED = (signal.SIGINT, signal.SIGTERM)
STOP_TIMEOUT_S = 60  # the longest the Spark session is given to stop before the process just ends


class Interrupted(Exception):
    """The run ended on a signal; the message says so, and what became of the output."""

    def __init__(self, signum: int, message: str):
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum  # as a shell reports a process ended by the signal


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


class Signals:
    """SIGINT and SIGTERM as KeyboardInterrupt for the run's duration (a `with` block), the
    handlers before it restored after. `received`: the first signal's number, or None."""

    def __init__(self):
        self.received: int | None = None
        self._held = False
        self._before: dict = {}
        self._filter = _DropPy4j(self)

    def __enter__(self) -> Signals:
        if threading.current_thread() is threading.main_thread():
            self._before = {s: signal.getsignal(s) for s in HANDLED}
            self.install()
        for handler in logging.getLogger().handlers:
            handler.addFilter(self._filter)
        return self

    def __exit__(self, *exc) -> None:
        for s, before in self._before.items():
            signal.signal(s, before)
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self._filter)

    def install(self) -> None:
        if self._before:
            for s in HANDLED:
                signal.signal(s, self._handle)

    def _handle(self, signum, frame) -> None:
        if self.received is not None:
            if not self._held:  # a second signal while the run cleans up: end now (the next run
                # removes what is left of the partial output)
                os.write(2, f"backfill: {signal_name(signum)} again: ending without waiting for Spark\n".encode())
                os._exit(128 + signum)
            return
        self.received = signum
        if not self._held:
            raise KeyboardInterrupt

    @contextmanager
    def held(self):
        """A signal that comes inside is acted on at its end (the output's rename into place)."""
        self._held = True
        try:
            yield
        finally:
            self._held = False
        if self.received is not None:
            raise KeyboardInterrupt


class _DropPy4j(logging.Filter):
    def __init__(self, signals: Signals):
        super().__init__()
        self.signals = signals

    def filter(self, record: logging.LogRecord) -> bool:
        if self.signals.received is None:
            return True
        return not any(record.name.startswith(p) or f"{os.sep}{p}{os.sep}" in record.pathname for p in _QUIETED)


_QUIETED = ("py4j", "pyspark")  # what logs the connections the stop cuts


def quiet(sc) -> None:
    """Nothing more from the driver JVM's loggers, with no moment of more: the root logger OFF
    through log4j itself. Spark's own `setLogLevel` opens the console's threshold (WARN, where Spark
    set it) after lowering the root level, so a driver thread that passed the old INFO level just
    before prints its line once the threshold is gone (seen: MemoryStore's INFO before our line)."""
    log4j = sc._jvm.org.apache.logging.log4j
    log4j.core.config.Configurator.setRootLevel(log4j.Level.OFF)


def stop_spark() -> None:
    """Stop the active Spark context, if any, quietly (its killed tasks would each log), within
    STOP_TIMEOUT_S: from a thread of its own, whose py4j connection is not the one an interrupted
    call left behind."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return
    sc = SparkContext._active_spark_context
    if sc is None:
        return

    def stop():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                quiet(sc)
                sc.stop()
            except Exception:  # the JVM may be gone already (a SIGTERM to the whole process group)
                pass

    # what pyspark's threads print while they stop (a closed connection's traceback) goes nowhere
    with contextlib.redirect_stderr(io.StringIO()):
        t = threading.Thread(target=stop, name="stop-spark", daemon=True)
        t.start()
        t.join(STOP_TIMEOUT_S)
    # The JVM itself next: a driver call the signal cut in Python (a broadcast being stored) goes on
    # in it and fails as it stops, logging after our last line (seen: TorrentBroadcast's ERROR).
    gateway = getattr(SparkContext, "_gateway", None)
    jvm = getattr(gateway, "proc", None)
    if jvm is not None and jvm.poll() is None:
        jvm.kill()
        jvm.wait(STOP_TIMEOUT_S)
