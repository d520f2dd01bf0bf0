"""A real Prometheus serving a TSDB directory that promtool filled (no scraping), for query_range.
Started and stopped by PID."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from tests.e2e.prometheus_server import free_port


def promtool_import(files: list[str], tsdb: str) -> None:
    for f in files:
        run = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", f, tsdb],
                             capture_output=True, text=True)
        assert run.returncode == 0, f"promtool refused {f}: {run.stderr}"


class TsdbPrometheus:
    def __init__(self, tsdb: str):
        self.dir = tempfile.mkdtemp(prefix="prom-tsdb-")
        self.port = free_port()
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global: {}\n")
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
             "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{self.port}",
             "--log.level=warn"], stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            assert self.proc.poll() is None, open(self.log.name).read()[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "prometheus did not become ready"
            time.sleep(0.1)

    def query_range(self, expr: str, start_s: float, end_s: float, step_s: float) -> dict[str, list[tuple[float, float]]]:
        """{series labels as text: [(time, value), ...]}"""
        params = {"query": expr, "start": start_s, "end": end_s, "step": step_s}
        url = f"http://127.0.0.1:{self.port}/api/v1/query_range?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=20) as r:
            data = json.loads(r.read())["data"]["result"]
        out = {}
        for series in data:
            labels = ",".join(f"{k}={v}" for k, v in sorted(series["metric"].items()) if k != "__name__")
            out[labels] = [(float(t), float(v)) for t, v in series["values"]]
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
