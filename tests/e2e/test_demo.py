"""`kafka-jmx-sidecar demo` as `make demo` runs it: the installed command, from any directory, with
a real simulator and the sidecar; every scenario step printed with the endpoint agreeing with the
recompute, and Ctrl-C stopping everything the demo started."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

from tests.e2e.sidecar_harness import REPO

COMMAND = Path(sys.executable).parent / "kafka-jmx-sidecar"
STEPS = yaml.safe_load((REPO / "exporter" / "commands" / "demo-scenario.yml").read_text())["steps"]


def start(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.Popen([str(COMMAND), "demo", *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def test_the_demo_plays_every_step_and_the_endpoint_agrees(tmp_path):
    p = start(tmp_path)
    try:
        out, _ = p.communicate(timeout=240)
    finally:
        p.kill()
    assert p.returncode == 0, out
    assert re.search(r"sidecar: +http://127\.0\.0\.1:\d+/metrics", out), out
    for step in STEPS:
        line = next((l for l in out.splitlines() if step["note"][:58] in l), None)
        assert line is not None, f"no line for step {step['note']!r}:\n{out}"
        assert "!" not in line, line  # a cell where the endpoint and the recompute disagree
    assert "all steps agree; done" in out, out


def test_ctrl_c_stops_the_demo_and_everything_it_started(tmp_path):
    p = start(tmp_path, "--keep-serving")
    try:
        url, lines = None, []
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"sidecar: +(http://\S+)", line)
            url = m.group(1) if m else None
        assert url, "".join(lines)
        started = children(p.pid)
        assert started, "the simulator should run as a child process of the demo"
        with urllib.request.urlopen(url.replace("/metrics", "/-/healthy"), timeout=10) as r:
            assert r.status == 200
        os.kill(p.pid, signal.SIGINT)
        rest, _ = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, "".join(lines) + rest
    assert "stopping" in rest
    time.sleep(1)
    assert [pid for pid in started if alive(pid)] == []
