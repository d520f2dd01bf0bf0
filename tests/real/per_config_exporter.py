"""The real jmx_exporter, started afresh for each configuration file in one JVM
(PerConfigExporter0x.java for 0.20.0, PerConfigExporter1x.java for 1.x releases).

    with PerConfigExporter("1.6.0") as exporter:
        exporter.serve(config_path)              # a new registry, collector and HTTP server
        text = exporter.scrape(openmetrics=True)

A JVM start costs seconds on a busy machine; the property test runs dozens of files. Each file
gets what the standalone jar's main sets up, built anew: nothing of a previous file's collector
(its rule cache, its MBean property cache, its registry) survives into the next.

`java` picks the JVM: jmx_exporter prints values with that JVM's `Double.toString`, whose digits
changed in JDK 19 (before, some doubles got a digit too many: `-3.3388287912947169E18` for what
JDK 19+ and the sidecar print as `-3.338828791294717E18`). `current_java()` finds a JDK 19+.
"""
from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import tempfile
import urllib.request
from pathlib import Path

from harness import processes, programs
from harness.jmx_exporter import OPENMETRICS
from harness.kafka_release import java

HERE = Path(__file__).resolve().parent
SOURCES = {"0": HERE / "PerConfigExporter0x.java", "1": HERE / "PerConfigExporter1x.java"}


def java_feature(java_binary: str) -> int:
    """The feature release (17, 21, 25) of a `java` binary, from its JDK's `release` file."""
    release = Path(os.path.realpath(java_binary)).parent.parent / "release"
    m = re.search(r'^JAVA_VERSION="(\d+)', release.read_text() if release.exists() else "", re.M)
    return int(m.group(1)) if m else 0


def current_java() -> str:
    """A `java` of JDK 19 or later: $CURRENT_JAVA_HOME, the default `java`, or the newest JDK in
    /usr/lib/jvm (where Debian and Temurin packages put theirs)."""
    candidates = []
    if os.environ.get("CURRENT_JAVA_HOME"):
        candidates.append(str(Path(os.environ["CURRENT_JAVA_HOME"], "bin", "java")))
    candidates.append(java())
    candidates += sorted((str(p) for p in Path("/usr/lib/jvm").glob("*/bin/java")), key=java_feature, reverse=True)
    for candidate in candidates:
        if Path(candidate).exists() and java_feature(candidate) >= 19:
            return candidate
    raise RuntimeError("no JDK 19 or later found (JDK 17's Double.toString prints some values with a digit "
                       "more than jmx_exporter on a current JDK); install one (a Temurin or Debian openjdk-21 "
                       "package) or set CURRENT_JAVA_HOME")


def _classpath(release: str) -> str:
    lib = programs.classpath(f"jmx_exporter-{release}")
    if release.startswith("0."):
        return str(programs.jar(f"jmx_exporter-{release}", "jmx_prometheus_httpserver"))
    if release == "1.6.0":
        return f"{lib}/*"
    return str(programs.jar(f"jmx_exporter-{release}", "jmx_prometheus_httpserver"))


def _classes(release: str) -> tuple[Path, str]:
    """The compiled harness for `release` (compiled once per source text and release), and its class."""
    major = release.split(".")[0]
    source = SOURCES[major]
    cp = _classpath(release)
    lib = programs.classpath(f"jmx_exporter-{release}")
    out = processes.compiled(source, lib, cp, javac=str(Path(java()).resolve().parent / "javac"))
    return out, source.stem


class PerConfigExporter:
    def __init__(self, release: str, java_binary: str | None = None):
        self.release = release
        self.java = java_binary or java()
        self.port: int | None = None
        self.refused: str | None = None  # why jmx_exporter refused the file served last
        self.process: subprocess.Popen | None = None
        self.log = Path(tempfile.mkdtemp(prefix=f"per-config-{release}-")) / "exporter.log"

    def start(self) -> "PerConfigExporter":
        classes, main = _classes(self.release)
        cmd = [self.java, "-Dfile.encoding=UTF-8", "-XX:+UseSerialGC", "-cp", f"{classes}:{_classpath(self.release)}", main]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                            start_new_session=True, preexec_fn=processes._die_with_parent)
        return self

    def serve(self, config: Path, timeout: float = 60.0) -> str | None:
        """A fresh collector for `config` (the previous one is closed); the exception jmx_exporter
        refused the file with, if it did."""
        proc = self.process
        assert proc and proc.stdin and proc.stdout
        proc.stdin.write((str(config) + "\n").encode("utf-8"))
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline().decode("utf-8").strip() if ready else ""
        if line.startswith("ERROR "):
            self.port, self.refused = None, line[6:]
            return self.refused
        if not line.startswith("PORT "):
            raise RuntimeError(f"jmx_exporter {self.release} did not serve {config}: {line or 'no answer'}; "
                               f"the end of {self.log}:\n{processes.tail(self.log)}")
        self.port, self.refused = int(line.split()[1]), None
        return None

    def scrape(self, openmetrics: bool = False, timeout: float = 120.0) -> str:
        """The body of /metrics; raises urllib.error.HTTPError when jmx_exporter fails the scrape."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/metrics",
                                         headers={"Accept": OPENMETRICS} if openmetrics else {})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read().decode("utf-8")

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None:
            for f in (proc.stdin, proc.stdout):
                try:
                    f and f.close()
                except OSError:
                    pass
            processes.stop(proc, grace=10)
        shutil.rmtree(self.log.parent, ignore_errors=True)

    def __enter__(self) -> "PerConfigExporter":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
