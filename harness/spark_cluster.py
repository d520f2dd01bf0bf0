"""A real Spark standalone cluster for the tests and benchmarks: a master and workers, each a process
of its own with its own working directory, started from the pyspark package's own launcher
(`pyspark/bin/spark-class org.apache.spark.deploy.master.Master` and `...worker.Worker`).

    with SparkCluster(workers=2) as cluster:
        cluster.master_url          # spark://127.0.0.1:PORT, for spark-submit --master
        cluster.kill_worker(0)      # SIGKILL to the worker and everything it started: a lost machine
        cluster.start_worker(0)     # a new worker in its place

Each worker offers one core and WORKER_MEMORY to executors; the daemons run with a small heap. A
worker's processes (its JVM, the executors it starts, their Python workers) form one process group,
so a kill takes them all, as the loss of a machine would.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import tempfile
import urllib.request
from pathlib import Path

from harness import processes

WORKER_MEMORY = "768m"
DAEMON_ENV = {
    "SPARK_DAEMON_MEMORY": "128m",
    # the daemons live for a test run and do little: C1 and the serial collector start them faster
    "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "SPARK_LOCAL_IP": "127.0.0.1",
    "SPARK_NO_DAEMONIZE": "1",
}


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def spark_class() -> str:
    return str(spark_home() / "bin" / "spark-class")


class SparkCluster:
    def __init__(self, workers: int = 2):
        self.base = Path(tempfile.mkdtemp(prefix="spark-cluster-"))
        self.port, self.ui_port = processes.free_port(), processes.free_port()
        self.master = None
        self.workers: list = [None] * workers
        self.worker_ui_ports = [processes.free_port() for _ in range(workers)]

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self, name: str) -> dict:
        home = self.base / name
        home.mkdir(exist_ok=True)
        return {**os.environ, **DAEMON_ENV, "SPARK_HOME": str(spark_home()), "SPARK_LOG_DIR": str(home),
                "SPARK_LOCAL_DIRS": str(home / "local"), "SPARK_PID_DIR": str(home)}

    def worker_dir(self, i: int) -> Path:
        return self.base / f"worker-{i}"

    def start(self, timeout: float = 180.0) -> "SparkCluster":
        log = self.base / "master.log"
        self.master = processes.spawn(
            [spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
             str(self.port), "--webui-port", str(self.ui_port)], log, cwd=self.base, env=self._env("master"))
        for i in range(len(self.workers)):
            self.start_worker(i, wait=False)
        processes.wait_until("the Spark master", lambda: processes.port_open(self.ui_port), timeout, self.master, log)
        self.wait_for_workers(len(self.workers), timeout)
        return self

    def start_worker(self, i: int, wait: bool = True, timeout: float = 120.0) -> None:
        directory = self.worker_dir(i)
        directory.mkdir(exist_ok=True)
        self.workers[i] = processes.spawn(
            [spark_class(), "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
             "--cores", "1", "--memory", WORKER_MEMORY, "--work-dir", str(directory / "work"),
             "--webui-port", str(self.worker_ui_ports[i])],
            directory / "worker.log", cwd=directory, env=self._env(f"worker-{i}"))
        if wait:
            self.wait_for_workers(sum(w is not None and w.poll() is None for w in self.workers), timeout)

    def state(self) -> dict:
        """The master's own view (its web UI's JSON): workers, applications."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=10) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state()["workers"] if w["state"] == "ALIVE")
        except (OSError, ValueError):  # not serving yet, or an answer cut short
            return 0

    def wait_for_workers(self, n: int, timeout: float = 120.0) -> None:
        """Until n workers are registered with the master; a worker that exits raises with its log."""

        def registered() -> bool:
            for i, w in enumerate(self.workers):
                if w is not None and w.poll() is not None:
                    raise RuntimeError(f"Spark worker {i} exited with code {w.returncode}:\n"
                                       f"{processes.tail(self.worker_dir(i) / 'worker.log')}")
            return self.alive_workers() >= n

        processes.wait_until(f"{n} Spark workers registered", registered, timeout, self.master,
                             self.base / "master.log", interval=0.3)

    def executor_log(self, i: int) -> str:
        """The stderr of worker i's executors of the latest application (app ids sort by time)."""
        apps = sorted((self.worker_dir(i) / "work").glob("app-*"))
        return "".join(p.read_text(errors="replace") for p in sorted(apps[-1].glob("*/stderr"))) if apps else ""

    def running_task(self, i: int) -> bool:
        """Whether an executor of worker i has logged a task it started and has not finished (an
        executor logs a task's end before it tells the driver)."""
        text = self.executor_log(i)
        started = set(re.findall(r"Running task [\d.]+ in stage [\d.]+ \(TID (\d+)\)", text))
        # finished, killed (the rest of a job whose answer came: first(), isEmpty()) or failed
        done = set(re.findall(r"(?:Finished|killed|Exception in) task [\d.]+ in stage [\d.]+ \(TID (\d+)\)", text))
        return bool(started - done)

    def kill_worker_in_a_task(self, i: int) -> bool:
        """SIGKILL worker i (kill_worker) while one of its tasks runs: the worker is frozen
        (SIGSTOP), and killed if a task is still unfinished then, else let go (SIGCONT): the task
        is lost for certain, not finished a moment before. False: no task of it was running."""
        if not self.running_task(i):
            return False
        os.killpg(self.workers[i].pid, signal.SIGSTOP)
        if self.running_task(i):
            self.kill_worker(i)
            return True
        os.killpg(self.workers[i].pid, signal.SIGCONT)
        return False

    def kill_worker(self, i: int) -> None:
        """SIGKILL to worker i's process group: the worker, its executors and their children at once."""
        proc = self.workers[i]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        self.workers[i] = None

    def stop(self) -> None:
        live = [w for w in self.workers if w is not None]
        for w in live:
            try:
                os.killpg(w.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        errors = processes.stop_all([*live, self.master], grace=10, hard=True)
        shutil.rmtree(self.base, ignore_errors=True)
        if errors:
            raise RuntimeError("; ".join(errors))

    def __enter__(self) -> "SparkCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
