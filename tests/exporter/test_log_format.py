"""--log.format: text for people, logfmt and json with stable field names (ts, level, logger,
msg, err) for log pipelines; every line one record."""
from __future__ import annotations

import json
import logging
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.processes import free_port
from kafka_jmx_sidecar.exporter.commands import logs

REPO = Path(__file__).resolve().parents[2]
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def records(capfd) -> list[str]:
    return capfd.readouterr().err.splitlines()


def test_logfmt_quotes_what_would_split_and_keeps_one_line_per_record(capfd, restore_logging):
    logs.configure("info", "logfmt")
    logging.getLogger("kafka_jmx_sidecar.t").warning('broker "b1" at %s\nsecond line', "h:1")
    logging.getLogger("kafka_jmx_sidecar.t").debug("not at info")
    [line] = records(capfd)
    fields = dict((k, json.loads(v) if v.startswith('"') else v)
                  for k, v in re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', line))
    assert list(fields) == ["ts", "level", "logger", "msg"]
    assert TS.match(fields["ts"]) and fields["level"] == "warning" and fields["logger"] == "kafka_jmx_sidecar.t"
    assert fields["msg"] == 'broker "b1" at h:1\nsecond line'


def test_json_carries_the_exception_as_err_without_a_traceback(capfd, restore_logging):
    logs.configure("debug", "json")
    try:
        raise ConnectionError("refused")
    except ConnectionError:
        logging.getLogger("x").exception("poll failed")
    [line] = records(capfd)
    record = json.loads(line)
    assert record == {"ts": record["ts"], "level": "error", "logger": "x", "msg": "poll failed",
                      "err": "ConnectionError: refused"}
    assert TS.match(record["ts"])


def test_a_records_own_fields_follow_the_stable_ones(capfd, restore_logging):
    """The backfill's progress records carry figures of their own: JSON values in json (unknown:
    null), text in logfmt (unknown: left out; a list comma-separated); never over ts, level,
    logger or msg."""
    fields = {"phase": "writing", "tasks_done": 3, "stages": [14, 15], "bytes_per_s": None, "msg": "not this"}
    logs.configure("info", "json")
    logging.getLogger("kafka_jmx_sidecar.backfill.progress").info("writing: 3/8 tasks", extra={"fields": fields})
    logs.configure("info", "logfmt")
    logging.getLogger("kafka_jmx_sidecar.backfill.progress").info("writing: 3/8 tasks", extra={"fields": fields})
    as_json, as_logfmt = records(capfd)
    record = json.loads(as_json)
    assert list(record) == ["ts", "level", "logger", "msg", "phase", "tasks_done", "stages", "bytes_per_s"]
    assert (record["msg"], record["tasks_done"], record["stages"], record["bytes_per_s"]) == (
        "writing: 3/8 tasks", 3, [14, 15], None)
    assert as_logfmt.endswith(' msg="writing: 3/8 tasks" phase=writing tasks_done=3 stages=14,15'), as_logfmt


def test_serve_logs_json_lines_from_the_start(tmp_path):
    closed, http_port = free_port(), free_port()  # nobody listens on the first: the broker is unreachable
    cfg = tmp_path / "c.yml"
    cfg.write_text(f"hostPort: 127.0.0.1:{closed}\nsidecar:\n  listenAddress: 127.0.0.1:{http_port}\n")
    cmd = [sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "serve", "--config", str(cfg),
           "--log.format", "json"]
    proc = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        lines, deadline = [], time.monotonic() + 60
        while time.monotonic() < deadline and not any("cannot" in ln or "refused" in ln for ln in lines):
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
    finally:
        proc.terminate()
        rest = proc.communicate(timeout=30)[1]
    lines += rest.splitlines(keepends=True)
    assert lines, shlex.join(cmd)
    parsed = [json.loads(ln) for ln in lines]  # every line is one JSON record
    assert any(r["msg"].startswith("serving http://127.0.0.1") for r in parsed), lines
    assert {r["level"] for r in parsed} <= {"info", "warning", "error"}


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_command_that_fails_at_start_says_it_in_the_log_format(fmt, tmp_path):
    # a log pipeline reading `serve --log.format json` must never meet a line that is not a record
    cfg = tmp_path / "c.yml"
    cfg.write_text("hostPort: 127.0.0.1:9999\nsidecar:\n  pollIntervalSecond: 5\n")
    run = subprocess.run([sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "serve", "--config",
                          str(cfg), "--log.format", fmt], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    if fmt == "text":
        assert lines[0].startswith(f"{cfg}:3: sidecar.pollIntervalSecond: unknown setting")
    else:
        record = json.loads(lines[0])
        assert record["level"] == "error" and record["logger"] == "kafka_jmx_sidecar.cli"
        assert record["msg"].startswith(f"{cfg}:3: sidecar.pollIntervalSecond: unknown setting")
