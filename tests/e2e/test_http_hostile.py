"""`kafka-jmx-sidecar serve` in a process of its own, tried as a hostile client and as an operator
would: idle, slow and vanishing clients, HTTP/0.9 and garbage, plain HTTP on the TLS
port, a web config rotated under the running process, the time a wrong password takes for a
known and an unknown user, Accept-Encoding variants. Every request goes to loopback, bounded in
count and time. No broker is needed (the JMX target refuses): the HTTP side serves regardless.
Each process's log must hold no traceback when its tests are done."""
from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import bcrypt
import pytest

from harness.processes import free_port
from kafka_jmx_sidecar.exporter.http.limits import Limits
from tests.exporter.test_http import pki  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[2]
USER, PASSWORD = "prometheus", "s3cret"
HEADER_TIMEOUT = Limits().header_timeout  # what `serve` runs with


def hashed(password: str, rounds: int = 4) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=rounds)).decode()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Serve:
    """`serve` with a web-config file, the broker unreachable, logging at debug level."""

    def __init__(self, directory: Path, web_yml: Path, tls: ssl.SSLContext | None = None):
        self.port = free_port()
        self.tls = tls
        config = directory / "sidecar.yml"
        config.write_text("hostPort: 127.0.0.1:1\nsidecar:\n  pollIntervalSeconds: 600\n")
        self.log = directory / "serve.log"
        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "serve", "--config", str(config), "--web.config.file",
                 str(web_yml), "--listen", f"127.0.0.1:{self.port}", "--log-level", "debug"],
                cwd=str(REPO), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"serve exited {self.process.returncode}: {self.log.read_text()}")
            try:
                if self.get("/-/healthy")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"serve did not answer: {self.log.read_text()}")
            time.sleep(0.2)

    def connection(self, context: ssl.SSLContext | None = None) -> http.client.HTTPConnection:
        if self.tls is None:
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30, context=context or self.tls)

    def get(self, path: str, headers: dict | None = None, context: ssl.SSLContext | None = None):
        conn = self.connection(context)
        try:
            conn.request("GET", path, headers=headers or {})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def metric(self, name: str, password: str = PASSWORD) -> float:
        """A self metric's value now (asked without gzip: never a cached response)."""
        status, _, body = self.get("/metrics", {"Authorization": basic(USER, password)})
        assert status == 200
        for line in body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        raise AssertionError(f"{name} not served")

    def client_errors(self, reason: str, password: str = PASSWORD) -> float:
        return self.metric(f'kafka_jmx_sidecar_http_client_errors_total{{reason="{reason}"}}', password)

    def threads(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
        raise AssertionError("no Threads line")

    def stop(self) -> str:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)
        return self.log.read_text()


def no_traceback(log: str) -> None:
    assert "Traceback" not in log, log[log.index("Traceback") - 300:][:3000]


def wait_until(what: str, predicate, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    d = tmp_path_factory.mktemp("plain")
    web = d / "web.yml"
    # cost 10: a check takes tens of milliseconds, far above the noise of a loopback request
    web.write_text(f"basic_auth_users:\n  {USER}: '{hashed(PASSWORD, rounds=10)}'\n")
    serve = Serve(d, web)
    yield serve
    log = serve.stop()
    no_traceback(log)


@pytest.fixture(scope="module")
def tls(tmp_path_factory, pki):  # noqa: F811
    d = tmp_path_factory.mktemp("tls")
    for name in ("server.crt", "server.key", "ca.crt"):
        shutil.copy(pki / name, d / name)
    web = d / "web.yml"
    web.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                   f"basic_auth_users:\n  {USER}: '{hashed(PASSWORD)}'\n")
    serve = Serve(d, web, tls=ssl.create_default_context(cafile=str(pki / "ca.crt")))
    serve.web, serve.dir = web, d
    yield serve
    log = serve.stop()
    no_traceback(log)


def closed_by_server(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_silent_and_slow_clients_are_cut_off_after_the_header_timeout_without_a_thread_each(plain):
    before = plain.client_errors("timeout")
    threads_before = plain.threads()
    silent = [socket.create_connection(("127.0.0.1", plain.port)) for _ in range(150)]
    slow = [socket.create_connection(("127.0.0.1", plain.port)) for _ in range(150)]
    for s in slow:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    stop = threading.Event()

    def trickle():  # one more header byte per second on each slow connection, as slowloris does
        while not stop.wait(1):
            for s in slow:
                try:
                    s.sendall(b"X")
                except OSError:
                    pass

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        wait_until("300 connections open",
                   lambda: plain.metric("kafka_jmx_sidecar_http_connections") >= 300, 20)
        assert plain.threads() - threads_before <= 2  # no thread per connection
        started = time.monotonic()
        closed = [closed_by_server(s, max(0.1, started + HEADER_TIMEOUT + 15 - time.monotonic()))
                  for s in silent + slow]
    finally:
        stop.set()
        t.join(5)
        for s in silent + slow:
            s.close()
    assert closed.count(True) == 300
    assert plain.client_errors("timeout") - before == 300
    log = plain.log.read_text()
    assert log.count(f"timeout (no request after {HEADER_TIMEOUT:g} s)") >= 150
    assert log.count(f"timeout (the request was not complete after {HEADER_TIMEOUT:g} s)") >= 150


def test_clients_that_vanish_mid_request_are_counted_in_one_line_each(plain):
    before = plain.client_errors("disconnected")
    lines_before = plain.log.read_text().count("disconnected (")
    for i in range(300):
        s = socket.create_connection(("127.0.0.1", plain.port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Enc")
        if i % 2:  # half of them reset the connection instead of closing it
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    wait_until("300 disconnects counted", lambda: plain.client_errors("disconnected") - before == 300)
    assert plain.log.read_text().count("disconnected (") - lines_before == 300


@pytest.mark.parametrize("request_bytes, status", [
    (b"GET /metrics\r\n\r\n", b"400 Bad Request"),  # HTTP/0.9
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64), b"400 Bad Request"),  # a TLS hello
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", b"431 Request Header Fields Too Large"),
    (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + bytes(100000), b"413 Content Too Large"),
])
def test_malformed_requests_get_their_status_and_the_connection_closes(plain, request_bytes, status):
    before = plain.client_errors("bad_request")
    with socket.create_connection(("127.0.0.1", plain.port), timeout=20) as s:
        s.sendall(request_bytes)
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    assert answer.startswith(b"HTTP/1.1 " + status + b"\r\n") and b"\r\nConnection: close\r\n" in answer
    assert plain.client_errors("bad_request") - before == 1


def test_an_unknown_user_takes_as_long_as_a_known_user_with_a_wrong_password(plain):
    def took(user: str, i: int) -> float:
        t0 = time.perf_counter()
        status, _, _ = plain.get("/", {"Authorization": basic(user, f"wrong-{i}")})
        assert status == 401
        return time.perf_counter() - t0

    known, unknown = [], []
    for i in range(10):  # every password new: no remembered verdict; interleaved: the same machine load
        known.append(took(USER, i))
        unknown.append(took("nobody", i))
    ratio = statistics.median(unknown) / statistics.median(known)
    assert 0.6 < ratio < 1.6, (known, unknown)


@pytest.mark.parametrize("accept_encoding, gzipped", [
    ("gzip", True), ("gzip;q=0", False), ("gzip;q=0, identity", False), ("identity;q=0.5, gzip;q=0.1", True),
    ("*", True), ("*;q=0", False), ("br", False), (None, False), ("GZip", True),
])
def test_accept_encoding_variants_and_no_version_in_server(plain, accept_encoding, gzipped):
    headers = {"Authorization": basic(USER, PASSWORD)}
    if accept_encoding is not None:
        headers["Accept-Encoding"] = accept_encoding
    status, got, body = plain.get("/metrics", headers)
    assert status == 200 and got.get("Content-Encoding") == ("gzip" if gzipped else None)
    text = gzip.decompress(body) if gzipped else body
    assert b"\njmx_scrape_error 1.0\n" in text
    assert got["Server"] == "kafka-jmx-sidecar"


def test_plain_http_on_the_tls_port_is_closed_quietly(tls):
    before = tls.client_errors("tls_handshake")
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", tls.port), timeout=20) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert closed_by_server(s, 20)
            # no HTTP answer: nothing a plain client could take for one
    assert tls.client_errors("tls_handshake") - before == 20


def fingerprint(serve: Serve) -> str:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", serve.port), timeout=20) as raw:
        with ctx.wrap_socket(raw) as s:
            return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()


def test_the_web_config_rotates_without_a_restart(tls, pki):  # noqa: F811
    d, web = tls.dir, tls.web
    auth = lambda p: {"Authorization": basic(USER, p)}  # noqa: E731
    success = "kafka_jmx_sidecar_web_config_reload_success_total"
    failure = "kafka_jmx_sidecar_web_config_reload_failure_total"
    assert tls.get("/metrics", auth(PASSWORD))[0] == 200
    ok0, bad0 = tls.metric(success), tls.metric(failure)

    # the password is revoked and another one given
    web.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                   f"basic_auth_users:\n  {USER}: '{hashed('rotated')}'\n")
    wait_until("the old password refused", lambda: tls.get("/metrics", auth(PASSWORD))[0] == 401)
    assert tls.get("/metrics", auth("rotated"))[0] == 200
    assert tls.metric(success, "rotated") == ok0 + 1

    # a broken file: the last good one stays, one log line says where
    web.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                   f"basic_auth_users:\n  {USER}: plaintext-by-mistake\n")
    wait_until("the failure counted", lambda: tls.metric(failure, "rotated") == bad0 + 1)
    assert tls.get("/metrics", auth("rotated"))[0] == 200
    failed = [line for line in tls.log.read_text().splitlines() if "web config reload failed" in line]
    assert len(failed) == 1 and f"{web}:5: basic_auth_users.{USER}: is not a bcrypt hash" in failed[0]

    # a new server certificate (another key, the same CA), and client certificates required
    before = fingerprint(tls)
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "new.csr",
                    "-subj", "/CN=server-2"], cwd=d, check=True, capture_output=True)
    subprocess.run(["openssl", "x509", "-req", "-in", "new.csr", "-CA", str(pki / "ca.crt"), "-CAkey",
                    str(pki / "ca.key"), "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile",
                    str(pki / "server.ext")], cwd=d, check=True, capture_output=True)
    web.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                   "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
                   f"basic_auth_users:\n  {USER}: '{hashed('rotated')}'\n")
    with_cert = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    with_cert.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))

    def refused_without_a_client_certificate() -> bool:
        try:
            tls.get("/-/healthy")
        except (ssl.SSLError, ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError):
            return True
        return False

    wait_until("client certificates required", refused_without_a_client_certificate)
    status, _, _ = tls.get("/metrics", auth("rotated"), context=with_cert)
    assert status == 200
    tls.tls = with_cert  # from now on this client presents its certificate
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", tls.port), timeout=20) as raw:
        with ctx.wrap_socket(raw) as s:
            after = hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()
    assert after != before
    assert after == hashlib.sha256(ssl.PEM_cert_to_DER_cert((d / "server.crt").read_text())).hexdigest()
    assert tls.client_errors("tls_handshake", "rotated") >= 1
