"""The test JVM of tests/real/RandomBeans.java: random MBeans from a seed, over remote JMX.

    with RandomBeans(seed=7) as beans:
        beans.host_port      # "127.0.0.1:PORT", for a config's hostPort
        beans.heads          # what the MBeans' leaves look like to a rule (for the rule generator)

RandomBeans.java is compiled once per source text into a cache directory; the JVM is started on a
free loopback port with remote JMX (no authentication, no SSL) and stopped by its PID.
"""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from harness import processes
from harness.kafka_release import java

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "RandomBeans.java"
_CACHE = Path(tempfile.gettempdir()) / "kafka-jmx-sidecar-tests"


def compiled_classes() -> Path:
    return processes.compiled(SOURCE, _CACHE, javac=str(Path(java()).resolve().parent / "javac"))


class RandomBeans:
    def __init__(self, seed: int):
        self.seed = seed
        self.port = processes.free_port()
        self.heads: list[str] = []
        self.process: subprocess.Popen | None = None

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> "RandomBeans":
        p = self.port
        cmd = [java(), "-Dfile.encoding=UTF-8", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               f"-Dcom.sun.management.jmxremote.port={p}", f"-Dcom.sun.management.jmxremote.rmi.port={p}",
               "-Dcom.sun.management.jmxremote.host=127.0.0.1", "-Djava.rmi.server.hostname=127.0.0.1",
               "-Dcom.sun.management.jmxremote.local.only=false", "-Dcom.sun.management.jmxremote.authenticate=false",
               "-Dcom.sun.management.jmxremote.ssl=false", "-cp", str(compiled_classes()), "RandomBeans", str(self.seed)]
        self.process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True, preexec_fn=processes._die_with_parent)
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode("utf-8").rstrip("\n")
            if line == "READY":
                break
            if line.startswith("HEAD "):
                self.heads.append(line[5:])
        else:
            err = self.process.stderr.read().decode("utf-8", "replace") if self.process.stderr else ""
            self.stop()
            raise RuntimeError(f"RandomBeans {self.seed} did not start: {err.strip()[-2000:]}")
        processes.wait_until("RandomBeans JMX port", lambda: processes.port_open(p), timeout, self.process)
        return self

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is None:
            return
        for f in (proc.stdin, proc.stdout, proc.stderr):
            try:
                f and f.close()
            except OSError:
                pass
        processes.stop(proc, grace=10, hard=True)

    def __enter__(self) -> "RandomBeans":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
