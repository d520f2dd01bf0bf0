"""Operations, each against a running `kafka-jmx-sidecar serve` process (its own JVM, as a user
runs it) and a simulated broker: the first poll of a big broker serves the health MBeans first,
SIGTERM ends the process within 5 s whatever it is doing, polls longer than the interval are
counted and logged once, an OutOfMemoryError in the sidecar's JVM is a poll error, and a broker
killed 50 times mid-poll never takes the sidecar down.

The 5 s of SIGTERM is a correctness bound (Kubernetes' grace period, a rolling
restart waiting on the pod), not a speed benchmark."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.processes import free_port
from kafka_jmx_sidecar.mbeans.simulator import Simulator, cluster
from tests.e2e.sidecar_harness import REPO, host_port

STOP_BOUND = 5.0  # seconds from SIGTERM to the process gone


def value(text: str, sample: str) -> float | None:
    """The value of the sample `sample` (name and labels as written) in the text format."""
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def broker_lines(text: str) -> list[str]:
    """The broker's series: every sample but the sidecar's and jmx_exporter's own."""
    return [line for line in text.splitlines()
            if line.startswith("kafka_") and not line.startswith("kafka_jmx_sidecar")]


class Serve:
    """`python -m kafka_jmx_sidecar.exporter.commands.cli serve` on a free loopback port, logging to
    a file; stopped by PID."""

    def __init__(self, tmp_path: Path, jmx_url: str, sidecar: dict, rules: str = ""):
        self.port = free_port()
        settings = {"listenAddress": f"127.0.0.1:{self.port}", **sidecar}
        self.config = tmp_path / f"sidecar-{self.port}.yml"
        self.config.write_text(f"hostPort: {host_port(jmx_url)}\n{rules}\nsidecar:\n"
                               + "".join(f"  {k}: {v}\n" for k, v in settings.items()))
        self.log_path = tmp_path / f"serve-{self.port}.log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "serve", "--config", str(self.config)], cwd=REPO,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "PYTHONPATH": str(REPO)})

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def get(self, path: str = "/metrics") -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics(self) -> str:
        return self.get()[1]

    def wait_for(self, what: str, ready, timeout: float, every: float = 0.05) -> str:
        """The first /metrics text for which ready(text) holds."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, f"the sidecar exited ({self.proc.returncode}):\n{self.log[-3000:]}"
            try:
                text = self.metrics()
                if ready(text):
                    return text
            except OSError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout:.0f} s; the sidecar's log:\n{self.log[-3000:]}")
            time.sleep(every)

    def sigterm(self) -> float:
        """SIGTERM, then the seconds until the process is gone (killed if it outlives the bound
        by far, so that a failing test still stops it)."""
        started = time.monotonic()
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(STOP_BOUND + 25)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        return time.monotonic() - started

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@pytest.fixture
def serve(tmp_path):
    started: list[Serve] = []

    def start(jmx_url: str, sidecar: dict, rules: str = "") -> Serve:
        started.append(Serve(tmp_path, jmx_url, sidecar, rules))
        return started[-1]

    yield start
    for s in started:
        s.kill()


def no_traceback(log: str) -> None:
    assert "Traceback" not in log and "unexpectedly" not in log, log[-3000:]


def test_a_big_broker_serves_its_health_first_and_sigterm_mid_first_poll_ends_it_within_5_s(big_broker, serve):
    s = serve(big_broker.url, {"pollIntervalSeconds": 15})  # no rules: every MBean, the longest first poll
    text = s.wait_for("the health MBeans read first", lambda t: value(t, "kafka_jmx_sidecar_snapshot_partial") == 1,
                      timeout=120)
    # the broker-wide health gauges, by jmx_exporter's default names; no per-partition series yet
    assert value(text, 'kafka_server_ReplicaManager_Value{name="PartitionCount",}') == 40_000
    assert value(text, 'kafka_server_ReplicaManager_Value{name="UnderReplicatedPartitions",}') == 0
    assert not [line for line in broker_lines(text) if "partition=" in line]
    # not a complete poll: not ready, no successful poll counted
    assert s.get("/-/ready")[0] == 503
    assert value(text, 'kafka_jmx_sidecar_polls_total{result="success"}') == 0
    assert value(text, "kafka_jmx_sidecar_last_successful_poll_timestamp_seconds") == 0
    time.sleep(3)  # well into the first poll (listing 430,000 names), which is still running:
    assert value(s.metrics(), 'kafka_jmx_sidecar_polls_total{result="success"}') == 0
    took = s.sigterm()
    assert took < STOP_BOUND, f"SIGTERM took {took:.1f} s; the sidecar's log:\n{s.log[-3000:]}"
    assert s.proc.returncode == 0
    no_traceback(s.log)


def test_an_out_of_memory_error_in_the_sidecars_jvm_is_a_poll_error_naming_jvm_max_heap(big_broker, serve):
    # 32m (the least jvmMaxHeap takes) cannot hold the listing of 430,000 names (~45 MB)
    # withdrawAfterSeconds far above the failing poll's length: what is checked is that the health
    # MBeans read first outlive the failure, which the default (4 intervals, 8 s) would end as soon
    # as a slow (loaded) first poll fails more than 8 s after they were read
    s = serve(big_broker.url, {"pollIntervalSeconds": 2, "jvmMaxHeap": "32m", "withdrawAfterSeconds": 600})
    text = s.wait_for("a failed first poll", lambda t: value(t, "jmx_scrape_error") == 1, timeout=180)
    assert value(text, 'kafka_jmx_sidecar_polls_total{result="failure"}') >= 1
    # the health MBeans read first are still served, and the process lives on
    assert value(text, 'kafka_server_ReplicaManager_Value{name="PartitionCount",}') == 40_000
    errors = [line for line in s.log.splitlines() if " ERROR " in line]
    assert errors and "ran out of heap during queryNames" in errors[0], s.log[-3000:]
    assert "raise sidecar.jvmMaxHeap" in errors[0] and "OutOfMemoryError" not in errors[0]
    took = s.sigterm()
    assert took < STOP_BOUND and s.proc.returncode == 0
    no_traceback(s.log)


@pytest.fixture
def small_broker():
    with Simulator.start(cluster.synthetic(600), kafka_version="4.1") as sim:
        yield sim


def test_polls_longer_than_the_interval_are_counted_and_logged_once(small_broker, serve):
    # no rules on 600 partitions: ~7,400 MBeans, a poll of a few tenths of a second against 0.05 s
    s = serve(small_broker.url, {"pollIntervalSeconds": 0.05})
    text = s.wait_for("5 polls", lambda t: (value(t, 'kafka_jmx_sidecar_polls_total{result="success"}') or 0) >= 5,
                      timeout=120, every=0.2)
    polls = value(text, 'kafka_jmx_sidecar_polls_total{result="success"}')
    assert value(text, "kafka_jmx_sidecar_poll_overruns_total") >= polls - 1
    warnings = [line for line in s.log.splitlines() if "longer than sidecar.pollIntervalSeconds" in line]
    assert len(warnings) == 1, s.log[-3000:]
    assert "(0.05 s)" in warnings[0] and "kafka_jmx_sidecar_poll_overruns_total" in warnings[0]
    took = s.sigterm()
    assert took < STOP_BOUND and s.proc.returncode == 0
    no_traceback(s.log)


def test_sigterm_while_the_broker_hangs_ends_the_process_within_5_s(small_broker, serve):
    s = serve(small_broker.url, {"pollIntervalSeconds": 0.05, "readTimeoutSeconds": 60})
    s.wait_for("a complete poll", lambda t: (value(t, 'kafka_jmx_sidecar_polls_total{result="success"}') or 0) >= 1,
               timeout=120, every=0.2)
    os.kill(small_broker.proc.pid, signal.SIGSTOP)  # the broker's JVM frozen: a poll waits on its answer
    try:
        polls = value(s.metrics(), 'kafka_jmx_sidecar_polls_total{result="success"}')
        time.sleep(1.5)  # several poll intervals: the poll in progress is stuck
        assert value(s.metrics(), 'kafka_jmx_sidecar_polls_total{result="success"}') == polls
        took = s.sigterm()
    finally:
        os.kill(small_broker.proc.pid, signal.SIGCONT)
    assert took < STOP_BOUND, f"SIGTERM took {took:.1f} s; the sidecar's log:\n{s.log[-3000:]}"
    assert s.proc.returncode == 0
    no_traceback(s.log)


def test_a_broker_killed_50_times_mid_poll_never_takes_the_sidecar_down(tmp_path, serve):
    """Each kill lands in a poll (they run back to back: a poll of ~0.2 s against an interval of
    0.05 s, killed at a random moment after the series came back); each time the broker's series
    are withdrawn (withdrawAfterSeconds 0: at the first failed poll) and come back with the broker,
    restarted on the same port."""
    broker = cluster.synthetic(200)
    sim = Simulator.start(broker, kafka_version="4.1")
    port = int(host_port(sim.url).rpartition(":")[2])
    rng = random.Random(50)
    restarting: list[threading.Thread] = []
    try:
        s = serve(sim.url, {"pollIntervalSeconds": 0.05, "withdrawAfterSeconds": 0})
        def restored(t: str) -> bool:
            return value(t, "kafka_jmx_sidecar_snapshot_withdrawn") == 0 and bool(broker_lines(t))

        def withdrawn(t: str) -> bool:
            return value(t, "kafka_jmx_sidecar_snapshot_withdrawn") == 1 and not broker_lines(t)

        s.wait_for("the first complete poll",
                   lambda t: restored(t) and value(t, "kafka_jmx_sidecar_snapshot_partial") == 0, timeout=120)
        pid = s.proc.pid
        for kill in range(50):
            time.sleep(rng.uniform(0.02, 0.2))  # a poll has just ended: into one of those that follow
            os.killpg(sim.proc.pid, signal.SIGKILL)
            sim.proc.wait(10)
            # the broker restarts on the same port while the sidecar notices (its first reconnect
            # attempt fails at once, the next one comes a second later)
            box: list[Simulator] = []
            restarting = [threading.Thread(target=lambda: box.append(Simulator.start(broker, kafka_version="4.1",
                                                                                      jmx_port=port)))]
            restarting[0].start()
            text = s.wait_for(f"the series withdrawn after kill {kill}", withdrawn, timeout=30, every=0.01)
            assert value(text, "jmx_scrape_error") == 1
            restarting[0].join(60)
            assert box, f"the simulator did not restart after kill {kill}"
            sim = box[0]
            s.wait_for(f"the series back after restart {kill}", restored, timeout=30, every=0.02)
        text = s.metrics()
        assert value(text, 'kafka_jmx_sidecar_polls_total{result="failure"}') >= 50
        assert value(text, "kafka_jmx_sidecar_jmx_connected") == 1
        assert s.proc.poll() is None and s.proc.pid == pid  # never restarted, never died
        no_traceback(s.log)
        took = s.sigterm()
        assert took < STOP_BOUND and s.proc.returncode == 0
    finally:
        for t in restarting:
            t.join(60)
        sim.stop()
