"""The real Prometheus jmx_exporter, standalone, as its users start it.

    with JmxExporter("0.20.0", config_path) as exporter:
        text = exporter.scrape()                  # GET /metrics, text format 0.0.4
        om = exporter.scrape(openmetrics=True)

Releases: 0.20.0 and 1.0.1 run their packaged jars (`java -jar jmx_prometheus_httpserver-V.jar
HOST:PORT CONFIG`); 1.6.0 runs its collector through JmxExporterStandalone.java (its packaged
standalone jar is not served here; see harness/programs/jmx_exporter-1.6.0/pom.xml).
"""
from __future__ import annotations

import shutil
import ssl
import subprocess
import tempfile
import urllib.request
from pathlib import Path

from harness import processes, programs
from harness.kafka_release import java

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "JmxExporterStandalone.java"
RELEASES = ("0.20.0", "1.0.1", "1.6.0")
NEWEST_1X = "1.6.0"
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def _harness_classes() -> Path:
    lib = programs.classpath("jmx_exporter-1.6.0")
    return processes.compiled(HARNESS, lib, f"{lib}/*", javac=str(Path(java()).resolve().parent / "javac"))


def command(release: str, listen: str, config: Path, jvm_options: tuple[str, ...] = ()) -> list[str]:
    """The command line that runs jmx_exporter `release` on `listen` (HOST:PORT) with `config`."""
    if release == "1.6.0":
        lib = programs.classpath("jmx_exporter-1.6.0")
        return [java(), *jvm_options, "-cp", f"{_harness_classes()}:{lib}/*", "JmxExporterStandalone",
                listen, str(config)]
    if release not in RELEASES:
        raise ValueError(f"unknown jmx_exporter release {release!r}; known: {', '.join(RELEASES)}")
    jar = programs.jar(f"jmx_exporter-{release}", "jmx_prometheus_httpserver")
    return [java(), *jvm_options, "-jar", str(jar), listen, str(config)]


class JmxExporter:
    def __init__(self, release: str, config: Path, jvm_options: tuple[str, ...] = (), https: bool = False):
        self.release = release
        self.config = Path(config)
        self.port = processes.free_port()
        self.scheme = "https" if https else "http"
        self._cmd = command(release, f"127.0.0.1:{self.port}", self.config, jvm_options)
        self.log = Path(tempfile.mkdtemp(prefix=f"jmx_exporter-{release}-")) / "exporter.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/metrics"

    def start(self, timeout: float = 60.0) -> "JmxExporter":
        self.process = processes.spawn(self._cmd, self.log)
        processes.wait_until(f"jmx_exporter {self.release}", lambda: processes.port_open(self.port), timeout,
                             self.process, self.log)
        return self

    def stop(self) -> None:
        processes.stop(self.process, grace=10)
        self.process = None
        shutil.rmtree(self.log.parent, ignore_errors=True)

    def __enter__(self) -> "JmxExporter":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def scrape(self, openmetrics: bool = False, timeout: float = 300.0, headers: dict | None = None,
               context: ssl.SSLContext | None = None) -> str:
        request = urllib.request.Request(self.url, headers={**({"Accept": OPENMETRICS} if openmetrics else {}),
                                                            **(headers or {})})
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return response.read().decode("utf-8")
