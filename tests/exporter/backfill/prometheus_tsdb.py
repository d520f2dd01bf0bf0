"""promtool filling a TSDB directory from the backfill's files; tests.e2e.prometheus_server.Prometheus
(target None, tsdb=...) serves it for query_range; `version` picks Prometheus 2's or 3's promtool."""
from __future__ import annotations

import subprocess

from tests.e2e.prometheus_server import promtool


def promtool_import(files: list[str], tsdb: str, version: str = "2") -> None:
    for f in files:
        run = subprocess.run([promtool(version), "tsdb", "create-blocks-from", "openmetrics", f, tsdb],
                             capture_output=True, text=True)
        assert run.returncode == 0, f"promtool {version} refused {f}: {run.stderr}"
