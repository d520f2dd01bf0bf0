"""The sidecar as its users run it, against a real broker: the installed `kafka-jmx-sidecar`
command (`scrape` once, or `serve` in a process of its own), configured with a jmx_exporter file.

    text = scrape_text("127.0.0.1:9999", rules_body, naming="1.x", openmetrics=True)
    with Serve(config_path) as sidecar:
        sidecar.get("/metrics")
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from harness import processes

REPO = Path(__file__).resolve().parents[1]
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def command() -> list[str]:
    """The installed console script of this virtual environment."""
    script = Path(sys.executable).with_name("kafka-jmx-sidecar")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli"]


def host_port(jmx_url: str) -> str:
    """The HOST:PORT of a JMX service URL, as a configuration's `hostPort`."""
    return re.search(r"rmi://([^/]+)/jmxrmi", jmx_url).group(1)


def config_text(host_port: str, rules_body: str, sidecar: str = "", head: str = "") -> str:
    """A jmx_exporter file: `hostPort`, `head` lines, a `sidecar:` block and the rules file's text
    (a leading `---` document marker stays first)."""
    marker = ""
    if rules_body.startswith("---"):
        marker, _, rules_body = rules_body.partition("\n")
        marker += "\n"
    block = f"sidecar:\n{sidecar}" if sidecar else ""
    return f"{marker}hostPort: {host_port}\n{head}{block}{rules_body}"


def naming_block(naming: str) -> str:
    return f'  naming: "{naming}"\n' if naming != "0.x" else ""


def scrape_text(host_port: str, rules_body: str, naming: str = "0.x", openmetrics: bool = False,
                head: str = "", env: dict | None = None) -> str:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "sidecar.yml"
        path.write_text(config_text(host_port, rules_body, naming_block(naming), head))
        return scrape_file(path, openmetrics, env)


def scrape_file(path: Path, openmetrics: bool = False, env: dict | None = None) -> str:
    proc = subprocess.run([*command(), "scrape", "--config", str(path), *(["--openmetrics"] if openmetrics else [])],
                          capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise AssertionError(f"scrape exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def _unverified() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


_LOGS: list[Path] = []  # the process's folder of serve logs, removed when it exits


def _log_directory() -> Path:
    """A folder of its own for one serve's log, kept while this process runs (a test reads the
    log after stopping the sidecar, and a failure message names it) and removed when it exits."""
    if not _LOGS:
        _LOGS.append(Path(tempfile.mkdtemp(prefix="sidecar-serve-")))
        atexit.register(shutil.rmtree, _LOGS[0], True)
    return Path(tempfile.mkdtemp(dir=_LOGS[0]))


class Serve:
    """`kafka-jmx-sidecar serve` in a process of its own, on a free loopback port."""

    def __init__(self, config: Path, env: dict | None = None, args: tuple[str, ...] = (), https: bool = False):
        self.port = processes.free_port()
        # https: the probes and get() speak TLS without checking the certificate (tests compare it)
        self.scheme = "https" if https else "http"
        self._context = _unverified() if https else None
        self.config = config
        self.log = _log_directory() / "serve.log"
        self._cmd = [*command(), "serve", "--config", str(config), "--listen", f"127.0.0.1:{self.port}", *args]
        self._env = {**os.environ, **(env or {})}
        self.process: subprocess.Popen | None = None

    def start(self, ready: bool = True, timeout: float = 120.0) -> "Serve":
        self.process = processes.spawn(self._cmd, self.log, env=self._env)
        processes.wait_until("sidecar serve", lambda: processes.port_open(self.port), 60, self.process, self.log)
        if ready:
            processes.wait_until("sidecar serve: first good poll", lambda: self.status("/-/ready") == 200,
                                 timeout, self.process, self.log)
        return self

    def status(self, path: str) -> int:
        try:
            with urllib.request.urlopen(f"{self.scheme}://127.0.0.1:{self.port}{path}", timeout=10,
                                        context=self._context) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return 0

    def get(self, path: str = "/metrics", openmetrics: bool = False, timeout: float = 30.0) -> str:
        request = urllib.request.Request(f"{self.scheme}://127.0.0.1:{self.port}{path}",
                                         headers={"Accept": OPENMETRICS} if openmetrics else {})
        with urllib.request.urlopen(request, timeout=timeout, context=self._context) as r:
            return r.read().decode("utf-8")

    def wait_for_poll_after(self, t: float, timeout: float = 60.0) -> str:
        """The /metrics text of the first poll that ended after wall-clock time `t`."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.get()
            for line in text.splitlines():
                if line.startswith("kafka_jmx_sidecar_last_successful_poll_timestamp_seconds "):
                    if float(line.split()[1]) > t:
                        return text
            if time.monotonic() > deadline:
                raise AssertionError(f"no poll after {t} within {timeout} s; the end of {self.log}:\n"
                                     f"{processes.tail(self.log)}")
            time.sleep(0.2)

    def stop(self) -> None:
        processes.stop(self.process, grace=30)

    def __enter__(self) -> "Serve":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
