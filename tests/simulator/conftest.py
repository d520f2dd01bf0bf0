"""Fixtures for the simulator tests: start real simulator JVMs, stop them by PID, talk JMX via JPype.

Every simulator a test starts goes through a `SimulatorFactory`, which stops it by PID when the
test (or module) ends and checks the process is really gone. The JMX client is JPype in this
process (one JVM per process); tests needing other JVM options run sim_jmx in a subprocess.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafka_jmx_sidecar.mbeans.simulator import Simulator
from tests.simulator.sim_jmx import Jmx, start_jvm

HERE = Path(__file__).resolve().parent

REPO = HERE.parents[1]
REFERENCE = REPO.parent / "shared" / "reference" / "kafka-4.1"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); look at its state
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


class SimulatorFactory:
    def __init__(self) -> None:
        self.started: list[Simulator] = []

    def start(self, *args, **kwargs) -> Simulator:
        sim = Simulator.start(*args, **kwargs)
        self.started.append(sim)
        return sim

    def stop_all(self) -> None:
        for sim in self.started:
            sim.stop()
            assert not pid_alive(sim.pid), f"simulator PID {sim.pid} still running after stop()"
        self.started.clear()


@pytest.fixture
def simulators():
    f = SimulatorFactory()
    yield f
    f.stop_all()


@pytest.fixture(scope="module")
def module_simulators():
    f = SimulatorFactory()
    yield f
    f.stop_all()


@pytest.fixture(scope="session")
def jvm():
    start_jvm()


@pytest.fixture
def connect(jvm):
    """connect(url, user=None, password=None) -> Jmx; closed at the end of the test."""
    opened: list[Jmx] = []

    def _connect(url: str, **kwargs) -> Jmx:
        j = Jmx(url, **kwargs)
        opened.append(j)
        return j

    yield _connect
    for j in opened:
        j.close()


@pytest.fixture(scope="session")
def process_alive():
    """process_alive(pid) -> bool (a zombie counts as gone)."""
    return pid_alive


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not (REFERENCE / "all-kafka-mbeans-full.txt").is_file():
        pytest.fail(f"the captured Kafka 4.1 reference is missing: expected {REFERENCE} "
                    f"(the shared/ directory beside the repository clone)")
    return REFERENCE
