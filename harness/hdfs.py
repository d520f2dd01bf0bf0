"""A real HDFS for the tests and benchmarks: Hadoop's minicluster (harness/programs/hadoop-3.5, a
NameNode and DataNodes in one JVM of their own, MiniHdfs.java), on loopback.

    with Hdfs() as hdfs:
        hdfs.uri                  # hdfs://127.0.0.1:PORT
        hdfs.url("/inputs/a")     # hdfs://127.0.0.1:PORT/inputs/a

The NameNode runs as the user `hdfs` (its superuser); clients of any other name, this process's
user among them, are ordinary users whose permissions HDFS checks. Its version is the one of the
Hadoop client pyspark bundles, which the clients (the backfill's Spark JVMs) speak: a mismatch is
refused with one line naming both.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from harness import processes, programs
from harness.kafka_release import java

HERE = Path(__file__).resolve().parent
PROGRAM = "hadoop-3.5"
SUPERUSER = "hdfs"
# a small heap, and the JVM options that halve its start (the web servers scan large jars once)
JVM_OPTIONS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def pyspark_hadoop_version() -> str:
    """The version of the Hadoop client jars pyspark ships (pyspark/jars/hadoop-client-api-V.jar)."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    found = [m.group(1) for p in jars.glob("hadoop-client-api-*.jar")
             if (m := re.fullmatch(r"hadoop-client-api-(.+)\.jar", p.name))]
    if len(found) != 1:
        raise programs.ProgramUnavailable(f"pyspark at {jars}: expected one hadoop-client-api jar, found {found}")
    return found[0]


def check_versions() -> None:
    ours, theirs = programs.PROGRAMS[PROGRAM].version, pyspark_hadoop_version()
    if ours != theirs:
        raise programs.ProgramUnavailable(
            f"{PROGRAM} is Hadoop {ours}, pyspark's Hadoop client is {theirs}: set the minicluster's version in "
            f"harness/programs/{PROGRAM}/pom.xml (and harness/programs.py) to {theirs}")


class Hdfs:
    def __init__(self, data_nodes: int = 2):
        check_versions()
        self.data_nodes = data_nodes
        self.base = Path(tempfile.mkdtemp(prefix="hdfs-"))
        self.log = self.base / "hdfs.log"
        self.port = processes.free_port()
        self.proc = None

    @property
    def uri(self) -> str:
        return f"hdfs://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.uri + "/" + path.lstrip("/")

    def start(self, timeout: float = 180.0) -> "Hdfs":
        lib = programs.classpath(PROGRAM)
        classes = processes.compiled(HERE / "MiniHdfs.java", lib, f"{lib}/*",
                                     javac=str(Path(java()).resolve().parent / "javac"))
        env = {**os.environ, "HADOOP_USER_NAME": SUPERUSER}
        self.proc = processes.spawn([java(), *JVM_OPTIONS, "-cp", f"{classes}:{lib}/*", "MiniHdfs",
                                     str(self.base / "dfs"), str(self.port), str(self.data_nodes)],
                                    self.log, cwd=self.base, env=env)
        ready = re.compile(r"^READY hdfs://", re.M)
        processes.wait_until("HDFS (the Hadoop minicluster)", lambda: processes.log_has(self.log, ready), timeout,
                             self.proc, self.log)
        return self

    def stop(self) -> None:
        try:
            processes.stop(self.proc, grace=10, hard=True)
        finally:
            self.proc = None
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> "Hdfs":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
