"""Faults, each against real components: an unreachable broker, wrong credentials, an SSL
mismatch, the broker killed in the middle of a poll and coming back, and broken configuration.

`scrape` runs as a subprocess (its own JVM, as a user runs it); the kill/restart case runs the
sidecar in this process against a simulator started and killed by PID."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from kafka_jmx_sidecar.mbeans.simulator import JmxSecurity, Simulator, cluster, tls
from tests.e2e.sidecar_harness import REPO, Sidecar, host_port

STRIMZI = REPO.parent / "shared" / "reference" / "rules" / "strimzi-kafka-metrics.yml"


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO)})


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def config(tmp_path: Path, text: str, name: str = "sidecar.yml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_unreachable_broker_scrape_says_where_and_what_to_check(tmp_path):
    port = closed_port()
    r = cli("scrape", "--config", config(tmp_path, f"hostPort: 127.0.0.1:{port}\n"))
    assert r.returncode != 0
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr  # one line, no Java stack trace
    assert f"127.0.0.1:{port}" in lines[0]
    assert "connection refused" in lines[0] and "com.sun.management.jmxremote.port" in lines[0]


def test_serve_with_the_broker_down_stays_up_not_ready_and_reports_the_error(tmp_path):
    port, http_port = closed_port(), closed_port()
    cfg = config(tmp_path, f"hostPort: 127.0.0.1:{port}\nsidecar:\n  listenAddress: 127.0.0.1:{http_port}\n"
                           "  pollIntervalSeconds: 0.5\n")
    proc = subprocess.Popen([sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "serve", "--config", cfg], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        body = None
        while time.monotonic() < deadline and body is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=5) as r:
                    body = r.read().decode()
            except OSError:
                time.sleep(0.2)
        assert body is not None, "the sidecar did not serve /metrics"
        time.sleep(1.5)  # a few failed polls
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=5) as r:
            body = r.read().decode()
        assert "jmx_scrape_error 1.0" in body
        assert "kafka_jmx_sidecar_snapshot_stale 1.0" in body
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{http_port}/-/ready", timeout=5)
        assert e.value.code == 503
        assert proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    # the sidecar logs the failure once, with the address, not once per poll (an info line that a
    # poll in progress was given up at SIGTERM is no failure: whether one was running is chance)
    failures = [line for line in err.splitlines() if "kafka_jmx_sidecar.collector" in line
                and (" ERROR " in line or " WARNING " in line)]
    assert len(failures) == 1, err
    assert f"127.0.0.1:{port}" in failures[0] and "connection refused" in failures[0]


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """A simulator with password authentication and SSL on the connector and the registry."""
    d = tmp_path_factory.mktemp("jmx-security")
    files = tls.generate(d)
    pw, access = d / "jmxremote.password", d / "jmxremote.access"
    pw.write_text("monitor s3cret\n")
    access.write_text("monitor readonly\n")
    os.chmod(pw, 0o600)
    os.chmod(access, 0o600)
    sec = JmxSecurity(password_file=str(pw), access_file=str(access), ssl=True, registry_ssl=True,
                      keystore=str(files.keystore), keystore_password="simulator-secret")
    with Simulator.start(cluster.reference_4_1(), security=sec) as sim:
        yield sim, files


def test_ssl_mismatch_says_set_ssl_true(secured, tmp_path):
    sim, _ = secured
    r = cli("scrape", "--config", config(tmp_path, f"hostPort: {host_port(sim.url)}\n"
                                                   "username: monitor\npassword: s3cret\n"))
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert host_port(sim.url) in r.stderr and "set ssl: true" in r.stderr


def test_missing_trust_store_says_configure_the_trust_store(secured, tmp_path):
    sim, _ = secured
    r = cli("scrape", "--config", config(tmp_path, f"hostPort: {host_port(sim.url)}\n"
                                                   "username: monitor\npassword: s3cret\nssl: true\n"))
    assert r.returncode != 0
    assert "not trusted" in r.stderr and "trust store" in r.stderr


def test_wrong_password_is_named_and_the_right_one_scrapes(secured, tmp_path, monkeypatch):
    sim, files = secured
    base = (f"hostPort: {host_port(sim.url)}\nusername: monitor\n"
            f"ssl:\n  trustStore:\n    filename: {files.truststore}\n    password: simulator-secret\n")
    r = cli("scrape", "--config", config(tmp_path, base + "password: wrong\n", "bad.yml"))
    assert r.returncode != 0
    assert "rejected the JMX credentials for user 'monitor'" in r.stderr
    assert "wrong" not in r.stderr  # never the password itself
    # the password from the environment, as `${NAME}` (secrets stay out of files and argv)
    monkeypatch.setenv("JMX_PASSWORD", "s3cret")
    r = subprocess.run([sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "scrape", "--config",
                        config(tmp_path, base + "password: ${JMX_PASSWORD}\n", "good.yml")],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert 'kafka_server_ReplicaManager_Value{name="AtMinIsrPartitionCount",} 5.0' in r.stdout


def test_scrape_prints_all_it_read_before_it_ends_without_the_jvm_shutdown(secured, tmp_path, monkeypatch):
    """`scrape` ends the process at once (os._exit) once printed: what it printed through a pipe,
    longer than the pipe's buffer, comes out whole."""
    sim, files = secured
    monkeypatch.setenv("JMX_PASSWORD", "s3cret")
    r = cli("scrape", "--openmetrics", "--config",
            config(tmp_path, f"hostPort: {host_port(sim.url)}\nusername: monitor\npassword: ${{JMX_PASSWORD}}\n"
                             f"ssl:\n  trustStore:\n    filename: {files.truststore}\n    password: simulator-secret\n"))
    assert r.returncode == 0, r.stderr
    assert len(r.stdout) > 1 << 16
    assert r.stdout.endswith("\n# EOF\n")
    assert r.stderr == ""


def test_broker_killed_mid_poll_keeps_the_last_snapshot_then_reconnects(tmp_path):
    big = cluster.synthetic(1500)  # a poll of about a second: long enough to be killed inside
    sim = Simulator.start(big, kafka_version="4.1")
    port = int(host_port(sim.url).rpartition(":")[2])
    try:
        with Sidecar(sim.url, tmp_path, rules=STRIMZI, poll_seconds=0.2) as sidecar:
            sidecar.wait_for_poll_after(time.time(), timeout=180)
            assert b"kafka_server_replicamanager_partitioncount" in sidecar.collector.snapshot.bodies["text"]
            source = sidecar.collector.source
            in_poll = threading.Event()
            real_read = source.read

            def read():  # instrumentation only: note that a poll is under way, then read for real
                in_poll.set()
                return real_read()

            source.read = read
            in_poll.clear()
            assert in_poll.wait(30)
            good = sidecar.collector.snapshot  # the last complete poll before the kill
            os.killpg(sim.proc.pid, signal.SIGKILL)
            sim.proc.wait(10)
            deadline = time.monotonic() + 60
            while sidecar.collector.last_error is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sidecar.collector.last_error, "the poll did not fail after the kill"
            assert str(port) in sidecar.collector.last_error
            assert sidecar.collector.snapshot is good  # still serving the last good poll
            with urllib.request.urlopen(f"http://{sidecar.target}/metrics", timeout=5) as r:
                body = r.read()
            assert b"kafka_server_replicamanager_partitioncount" in body
            assert b"kafka_jmx_sidecar_snapshot_stale 1.0" in body and b"jmx_scrape_error 1.0" in body
            assert b"kafka_jmx_sidecar_jmx_connected 0.0" in body
            # the broker comes back on the same port: the sidecar reconnects by itself
            sim = Simulator.start(big, kafka_version="4.1", jmx_port=port)
            restarted = time.time()
            sidecar.wait_for_poll_after(restarted, timeout=180)
            assert sidecar.collector.last_error is None
            assert not sidecar.collector.stale()
            with urllib.request.urlopen(f"http://{sidecar.target}/metrics", timeout=5) as r:
                body = r.read()
            assert b"kafka_jmx_sidecar_jmx_connected 1.0" in body and b"jmx_scrape_error 0.0" in body
    finally:
        sim.stop()


@pytest.mark.parametrize("text, where, what", [
    ("rules:\n- pattern: [unclosed\n", ":3:", "flow sequence that starts at line 3"),
    ("rules:\n- pattern: 'kafka.server<type=(.+'\n  name: x\n", ":2: rules[0].pattern:", "invalid regex"),
    ("rules:\n- pattern: 'kafka.(\\w+)<type=(.+)>'\n  name: kafka_$1_$3\n", ":3: rules[0].name:", "group 3"),
])
def test_broken_config_is_refused_with_file_line_and_reason(tmp_path, text, where, what):
    path = config(tmp_path, "hostPort: 127.0.0.1:1\n" + text)
    # the file has a hostPort line first: every line number is one more than in `text`
    shifted = {":2:": ":3:", ":3:": ":4:"}.get(where[:3], where[:3]) + where[3:]
    for r in (cli("check-config", path), cli("check-config", "--config", path), cli("serve", "--config", path),
              cli("scrape", "--config", path)):
        assert r.returncode == 2
        assert r.stderr.startswith(path + shifted), r.stderr
        assert what in r.stderr
        assert "Traceback" not in r.stderr
