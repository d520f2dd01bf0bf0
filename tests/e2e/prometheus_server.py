"""A real Prometheus on a loopback port, for end-to-end tests: it scrapes the sidecar and its HTTP
API answers queries. Started and stopped by PID. Debian's Prometheus 2 by default;
`Prometheus.v3(...)` starts Prometheus 3 (built by harness/programs.py, `prometheus-3`), with
command-line `flags` of its own (such as `--web.enable-otlp-receiver`); `Prometheus.of(version)`
either, for tests run against both (VERSIONS), and `promtool(version)` the promtool of each."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

from harness import programs
from harness.processes import free_port

VERSIONS = ("2", "3")  # Debian's Prometheus 2.42 and the built Prometheus 3


def promtool(version: str = "2") -> str:
    """The promtool command of Prometheus `version` (a VERSIONS entry)."""
    return "promtool" if version == "2" else str(programs.binary("prometheus-3", "promtool"))


class Prometheus:
    def __init__(self, target: str | list[str] | None, scrape_interval: str = "1s", scheme: str = "http",
                 basic_auth: tuple[str, str] | None = None, ca_file: str | None = None,
                 cert_file: str | None = None, key_file: str | None = None, tsdb: str | None = None,
                 rule_files: list[str] | None = None, scrape_configs: list[dict] | None = None,
                 binary: str = "prometheus", flags: tuple[str, ...] = (),
                 scrape_protocols: list[str] | None = None):
        """`target`: one address, or a list (one job scrapes them all); None: no scrape job;
        `tsdb`: serve that TSDB directory (one promtool filled, samples of any age kept) instead of
        a fresh one; `rule_files`: rules it evaluates; `scrape_configs`: further jobs, as written;
        `binary`: the prometheus command; `flags`: further command-line flags; `scrape_protocols`:
        the formats the job asks for, in order (Prometheus 2.49+; its default otherwise)."""
        if not shutil.which(binary):
            raise RuntimeError(f"{binary} is not installed: run scripts/ensure-system-deps --test")
        self.dir = tempfile.mkdtemp(prefix="prom-")
        self.port = free_port()
        targets = [target] if isinstance(target, str) else list(target or [])
        job: dict = {"job_name": "kafka", "scrape_interval": scrape_interval, "scrape_timeout": scrape_interval,
                     "scheme": scheme, "static_configs": [{"targets": targets}]}
        if scrape_protocols:
            job["scrape_protocols"] = list(scrape_protocols)
        if basic_auth:
            pw_file = os.path.join(self.dir, "password")
            with open(pw_file, "w") as f:
                f.write(basic_auth[1])
            job["basic_auth"] = {"username": basic_auth[0], "password_file": pw_file}
        if scheme == "https":
            job["tls_config"] = {k: v for k, v in (("ca_file", ca_file), ("cert_file", cert_file),
                                                   ("key_file", key_file)) if v}
        config = {"global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
                  "scrape_configs": ([job] if target is not None else []) + list(scrape_configs or [])}
        if rule_files:
            config["rule_files"] = list(rule_files)
        self.config_path = os.path.join(self.dir, "prometheus.yml")
        with open(self.config_path, "w") as f:
            yaml.safe_dump(config, f)
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={self.config_path}", f"--storage.tsdb.path={tsdb or self.dir + '/data'}",
             *(["--storage.tsdb.retention.time=100y"] if tsdb else []),
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn", *flags],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready()

    @classmethod
    def v3(cls, target: str | list[str] | None = None, flags: tuple[str, ...] = (), **kwargs) -> "Prometheus":
        """Prometheus 3 (harness/programs.py's `prometheus-3`, built on first use), otherwise as above."""
        return cls(target, binary=str(programs.binary("prometheus-3", "prometheus")), flags=flags, **kwargs)

    @classmethod
    def of(cls, version: str, target: str | list[str] | None = None, **kwargs) -> "Prometheus":
        """Prometheus `version` (a VERSIONS entry): Debian's 2 or the built 3."""
        return cls.v3(target, **kwargs) if version == "3" else cls(target, **kwargs)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _get(self, path: str, params: dict | None = None):
        url = f"http://127.0.0.1:{self.port}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())

    def _wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {open(self.log.name).read()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("prometheus did not become ready")

    def target_health(self) -> list[dict]:
        return self._get("/api/v1/targets")["data"]["activeTargets"]

    def series(self, match: str, start_s: float, end_s: float) -> list[dict]:
        """Every series `match` selects with samples in [start, end] (each as its labels, name included)."""
        return self._get("/api/v1/series", {"match[]": match, "start": start_s, "end": end_s})["data"]

    def metadata(self) -> dict[str, list[dict]]:
        """{metric family: [{type, help, unit}]} as the scrapes reported them."""
        return self._get("/api/v1/metadata")["data"]

    def alerts(self) -> list[dict]:
        """The alerts of the rule files, pending or firing (labels, state, annotations, value)."""
        return self._get("/api/v1/alerts")["data"]["alerts"]

    def query(self, expr: str) -> list[dict]:
        return self._get("/api/v1/query", {"query": expr})["data"]["result"]

    def value(self, expr: str) -> float | None:
        """The single value of `expr` now, or None when it has no result."""
        result = self.query(expr)
        if not result:
            return None
        if len(result) != 1:
            raise AssertionError(f"{expr} has {len(result)} series: {result}")
        return float(result[0]["value"][1])

    def query_range(self, expr: str, start_s: float, end_s: float, step_s: float) -> dict[str, list[tuple[float, float]]]:
        """{series labels as text (name left out): [(time, value), ...]}"""
        out = {}
        for series in self._get("/api/v1/query_range", {"query": expr, "start": start_s, "end": end_s,
                                                        "step": step_s})["data"]["result"]:
            labels = ",".join(f"{k}={v}" for k, v in sorted(series["metric"].items()) if k != "__name__")
            out[labels] = [(float(t), float(v)) for t, v in series["values"]]
        return out

    def wait_for(self, expr: str, expected: float, timeout: float = 20) -> float:
        """Poll until `expr` equals `expected`; the last value seen is in the error otherwise."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            seen = self.value(expr)
            if seen == expected:
                return seen
            time.sleep(0.25)
        raise AssertionError(f"{expr}: expected {expected}, last saw {seen} "
                             f"(targets: {[(t['health'], t.get('lastError')) for t in self.target_health()]})")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
