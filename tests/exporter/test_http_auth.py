"""Basic auth from a web-config file against real sockets and real bcrypt: passwords of any length
(answered as the real Prometheus, whose exporter toolkit reads the same file, answers them), the
scheme in any case, failed logins counted and logged together, hashes that cannot be right
refused by check-config and on reload. The flood: test_http_auth_flood.py."""
from __future__ import annotations

import base64
import http.client
import logging
import os
import signal
import socket
import subprocess
import time

import bcrypt
import pytest

from kafka_jmx_sidecar.exporter.commands.cli import main
from kafka_jmx_sidecar.exporter.http.limits import Limits
from kafka_jmx_sidecar.exporter.http.server import MetricsServer
from kafka_jmx_sidecar.exporter.http.web_config import load_web_config
from kafka_jmx_sidecar.exporter.http.web_config_reload import WebConfigReloader
from kafka_jmx_sidecar.exporter.output.self_metrics import AuthFailure, SelfMetrics
from tests.exporter.test_http import FixedBody, wait_until

USER = "prometheus"
LONG = bytes(range(65, 91)) * 4  # 104 bytes, ASCII
EMOJI = "🔑" * 30  # 120 bytes of UTF-8: the 72nd byte ends a character, as it happens


def auth(user: str, password: bytes | str, scheme: str = "Basic") -> dict:
    raw = user.encode() + b":" + (password if isinstance(password, bytes) else password.encode())
    return {"Authorization": f"{scheme} {base64.b64encode(raw).decode()}"}


def status(port: int, headers: dict, path: str = "/metrics") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def failures(collector, reason: str) -> float:
    return collector.metrics.http_auth_failures.labels(reason)._value.get()


@pytest.fixture(scope="module")
def web_yml(tmp_path_factory):
    """Users whose long passwords were hashed by a tool that cut them to 72 bytes (as Go did
    before 2023 and older releases of Python's bcrypt; both refuse to hash more now)."""
    d = tmp_path_factory.mktemp("web")
    hashes = {USER: bcrypt.hashpw(b"s3cret", bcrypt.gensalt(4)),
              "long": bcrypt.hashpw(LONG[:72], bcrypt.gensalt(4)),
              "emoji": bcrypt.hashpw(EMOJI.encode()[:72], bcrypt.gensalt(4))}
    p = d / "web.yml"
    p.write_text("basic_auth_users:\n" + "".join(f"  {u}: '{h.decode()}'\n" for u, h in hashes.items()))
    return p


# (what is sent, the status): the same for the sidecar and for Prometheus
CASES = [
    ("right", auth(USER, "s3cret"), 200),
    ("wrong", auth(USER, "s3cret!"), 401),
    ("unknown user", auth("nobody", "s3cret"), 401),
    ("73 bytes", auth(USER, "x" * 73), 401),
    ("1,000 bytes", auth(USER, "y" * 1000), 401),
    ("lower-case scheme", auth(USER, "s3cret", "basic"), 200),
    ("upper-case scheme", auth(USER, "s3cret", "BASIC"), 200),
    ("another scheme", {"Authorization": "Bearer s3cret"}, 401),
    ("no colon", {"Authorization": "Basic " + base64.b64encode(b"prometheus").decode()}, 401),
    ("no credentials", {}, 401),
    # bcrypt reads 72 bytes: the long password, whatever follows them, is right
    ("104 bytes, hashed cut", auth("long", LONG), 200),
    ("its 72 bytes alone", auth("long", LONG[:72]), 200),
    ("its 72 bytes and another tail", auth("long", LONG[:72] + b"-" * 928), 200),
    ("71 of its bytes", auth("long", LONG[:71]), 401),
    ("a byte within the 72 changed", auth("long", b"a" + LONG[1:]), 401),
    ("120 bytes of UTF-8", auth("emoji", EMOJI), 200),
    ("1,000 bytes, the long user", auth("long", LONG * 9 + b"z" * 64), 200),
]


def test_passwords_of_any_length_get_401_or_200_never_500(web_yml, caplog):
    collector = FixedBody(b"x")
    server = MetricsServer("127.0.0.1", 0, collector, load_web_config(str(web_yml)))
    server.start()
    try:
        with caplog.at_level(logging.DEBUG, logger="kafka_jmx_sidecar"):
            got = [(name, status(server.port, headers)) for name, headers, _ in CASES]
            # once more: the verdicts now remembered give the same answers
            again = [(name, status(server.port, headers)) for name, headers, _ in CASES]
    finally:
        server.stop()
    assert got == again == [(name, expected) for name, _, expected in CASES]
    assert [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []
    refused = sum(1 for *_, expected in CASES if expected == 401) * 2
    assert sum(failures(collector, r) for r in AuthFailure.ALL) == refused
    assert (failures(collector, "missing"), failures(collector, "malformed"), failures(collector, "unknown_user")) \
        == (4, 2, 2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_real_prometheus_answers_the_same_web_config_alike(web_yml, tmp_path):
    """Prometheus serves its own endpoints through the exporter toolkit: the same file, the same
    requests, the same statuses (Go's bcrypt and Request.BasicAuth as the reference)."""
    port = _free_port()
    (tmp_path / "prometheus.yml").write_text("global: {}\n")
    log = open(tmp_path / "prometheus.log", "w")
    proc = subprocess.Popen(["/usr/bin/prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                             f"--web.config.file={web_yml}", "--log.level=warn"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
            try:
                if status(port, auth(USER, "s3cret"), "/-/ready") == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "prometheus did not become ready"
            time.sleep(0.1)
        got = [(name, status(port, headers)) for name, headers, _ in CASES]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
        log.close()
    assert got == [(name, expected) for name, _, expected in CASES]


def logged(records) -> int:
    """Failed logins the log lines tell of: one a line told at once, N a line told together."""
    lines = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    return sum(1 if line.startswith("failed login ") else int(line.split()[0]) for line in lines
               if " failed login" in line or line.startswith("failed login "))


def test_failed_logins_are_counted_and_logged_together(web_yml, caplog):
    collector = FixedBody(b"x")
    server = MetricsServer("127.0.0.1", 0, collector, load_web_config(str(web_yml)), Limits(auth_log_seconds=0.5))
    server.start()
    try:
        with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.http"):
            for i in range(30):
                assert status(server.port, auth(USER, f"wrong-{i}") if i % 3 else auth(f"nobody-{i}", "x")) == 401
            wait_until("all 30 logged", lambda: logged(caplog.records) == 30)
            time.sleep(1.2)  # quiet for longer than the interval: the next failure is logged at once again
            assert status(server.port, {"Authorization": "Basic !!"}) == 401
            wait_until("the 31st logged", lambda: logged(caplog.records) == 31)
    finally:
        server.stop()
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert lines[0] == ("failed login on /metrics from 127.0.0.1 (unknown_user); more are counted in "
                        "kafka_jmx_sidecar_http_auth_failures_total and logged together, at most once every 0.5 s")
    together = lines[1:-1]
    assert 1 <= len(together) <= 30 and all(" failed logins on /metrics in the last 0.5 s (" in line and
                                            line.endswith(") from 127.0.0.1") for line in together), together
    assert lines[-1].startswith("failed login on /metrics from 127.0.0.1 (malformed);")
    assert (failures(collector, "wrong_password"), failures(collector, "unknown_user"),
            failures(collector, "malformed")) == (20, 10, 1)


GOOD = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(4)).decode()
BAD_HASHES = [
    (GOOD[:-1], "has 59 characters where a bcrypt hash has 60 (truncated, or more appended)"),
    (GOOD + "x", "has 61 characters where a bcrypt hash has 60 (truncated, or more appended)"),
    (GOOD.replace("$2b$", "$2x$"), "has the bcrypt prefix '$2x$'; only $2a$, $2b$ and $2y$ are checked"),
    (GOOD.replace("$2b$", "$2$"), "has the bcrypt prefix '$2$'; only $2a$, $2b$ and $2y$ are checked"),
    (GOOD.replace("$04$", "$03$"), "has the cost '03$'; a bcrypt cost is two digits from 04 to 31, then $"),
    (GOOD.replace("$04$", "$4$"), "has the cost '4$"),
    (GOOD[:20] + "!" + GOOD[21:], "has characters that are not bcrypt's base64 ([./A-Za-z0-9])"),
    ("s3cret", "is not a bcrypt hash"),
]


@pytest.mark.parametrize("hashed, problem", BAD_HASHES)
def test_check_config_refuses_a_hash_that_no_password_can_match(tmp_path, capsys, hashed, problem):
    web = tmp_path / "web.yml"
    web.write_text(f"basic_auth_users:\n  {USER}: ok\n  alice: '{hashed}'\n".replace("ok", GOOD))
    assert main(["check-config", "--web.config.file", str(web)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{web}:3: basic_auth_users.alice: {problem}") and "htpasswd -nBC 12" in err


def test_a_reload_with_a_truncated_hash_keeps_the_last_good_and_remembered_logins_survive(tmp_path):
    web = tmp_path / "web.yml"
    other = bcrypt.hashpw(b"other", bcrypt.gensalt(4)).decode()
    web.write_text(f"basic_auth_users:\n  {USER}: '{GOOD}'\n  alice: '{other}'\n")
    metrics = SelfMetrics()
    watch = WebConfigReloader(str(web), load_web_config(str(web)), metrics)
    assert watch.current.authorized(USER, "s3cret") and watch.current.authorized("alice", "other")
    good = watch.current

    web.write_text(f"basic_auth_users:\n  {USER}: '{GOOD}'\n  alice: '{other[:-1]}'\n")
    assert watch.check() is False and watch.current is good
    assert metrics.web_config_reload_failure._value.get() == 1

    # alice's password changes; prometheus' hash stays: only its login is still remembered
    web.write_text(f"basic_auth_users:\n  {USER}: '{GOOD}'\n  alice: '{bcrypt.hashpw(b'new', bcrypt.gensalt(4)).decode()}'\n")
    assert watch.check() is True and watch.current is not good
    assert watch.current.remembered(USER, "s3cret") is True
    assert watch.current.remembered("alice", "other") is None and not watch.current.authorized("alice", "other")
    assert watch.current.authorized("alice", "new")
