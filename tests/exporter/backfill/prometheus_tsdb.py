"""promtool filling a TSDB directory from the backfill's files; tests.e2e.prometheus_server.Prometheus
(target None, tsdb=...) serves it for query_range."""
from __future__ import annotations

import subprocess


def promtool_import(files: list[str], tsdb: str) -> None:
    for f in files:
        run = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", f, tsdb],
                             capture_output=True, text=True)
        assert run.returncode == 0, f"promtool refused {f}: {run.stderr}"
