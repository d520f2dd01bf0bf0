"""The /metrics endpoint over real sockets: content negotiation, gzip, probes, TLS and basic auth
from a Prometheus web-config file (certificates made with openssl, hashes with bcrypt)."""
from __future__ import annotations

import base64
import logging
import gzip
import http.client
import ssl
import subprocess

import bcrypt
import pytest

from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.http.server import MetricsServer
from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig, load_web_config
from tests.exporter.test_collector import URP, ScriptedSource, gauge


def serve(web: WebConfig, script=None, poll=True):
    src = ScriptedSource(script or [[gauge(URP, 4)]])
    collector = Collector(lambda cfg: src, parse_config("{}"), SidecarSettings())
    if poll:
        collector.poll_once()
    server = MetricsServer("127.0.0.1", 0, collector, web)
    server.start()
    return server, collector


def get(port, path, headers=None, context=None):
    conn = (http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10) if context
            else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    conn.request("GET", path, headers=headers or {})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r, body


def test_metrics_text_openmetrics_and_gzip():
    server, _ = serve(WebConfig())
    try:
        r, body = get(server.port, "/metrics")
        assert r.status == 200
        assert r.getheader("Content-Type") == "text/plain; version=0.0.4; charset=utf-8"
        assert b'kafka_server_ReplicaManager_Value{name="UnderReplicatedPartitions",} 4.0\n' in body
        assert b"jmx_scrape_error 0.0" in body
        # what Prometheus 2.x sends
        accept = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                  "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
        r, body = get(server.port, "/metrics", {"Accept": accept, "Accept-Encoding": "gzip"})
        assert r.getheader("Content-Type").startswith("application/openmetrics-text; version=1.0.0")
        assert r.getheader("Content-Encoding") == "gzip"
        text = gzip.decompress(body)  # two gzip members: snapshot, then self metrics
        assert text.endswith(b"# EOF\n") and text.count(b"# EOF") == 1
        assert b'kafka_server_ReplicaManager_Value{name="UnderReplicatedPartitions"} 4.0\n' in text
        assert b"jmx_exporter_build_info" in text
    finally:
        server.stop()


def test_probes_and_readiness_before_the_first_poll():
    server, collector = serve(WebConfig(), poll=False)
    try:
        r, body = get(server.port, "/-/healthy")
        assert (r.status, body) == (200, b"Healthy\n")
        r, body = get(server.port, "/-/ready")
        assert r.status == 503 and body == b"Not ready: no complete poll of the broker yet\n"
        collector.poll_once()
        r, _ = get(server.port, "/-/ready")
        assert r.status == 200
        r, _ = get(server.port, "/nope")
        assert r.status == 404
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")

    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", "/CN=test-ca")
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", f"/CN={name}")
        (d / f"{name}.ext").write_text(ext + "\n")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")
    return d


def test_tls_with_client_certificates_and_basic_auth(pki):
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    web_yml = pki / "web.yml"
    web_yml.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
        f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    web = load_web_config(str(web_yml))
    server, _ = serve(web)
    try:
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        ctx.load_cert_chain(str(pki / "client.crt"), str(pki / "client.key"))
        good = "Basic " + base64.b64encode(b"prometheus:s3cret").decode()
        bad = "Basic " + base64.b64encode(b"prometheus:wrong").decode()
        r, body = get(server.port, "/metrics", {"Authorization": good}, ctx)
        assert r.status == 200 and b"UnderReplicatedPartitions" in body
        r, _ = get(server.port, "/metrics", {"Authorization": bad}, ctx)
        assert r.status == 401 and r.getheader("WWW-Authenticate").startswith("Basic")
        r, _ = get(server.port, "/metrics", {}, ctx)
        assert r.status == 401
        # probes stay open for the kubelet, which has no credentials
        r, _ = get(server.port, "/-/healthy", {}, ctx)
        assert r.status == 200
        # without a client certificate the handshake is refused
        no_cert = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        with pytest.raises((ssl.SSLError, ConnectionResetError, http.client.RemoteDisconnected)):
            get(server.port, "/metrics", {"Authorization": good}, no_cert)
        # a plain-HTTP client gets nothing useful from a TLS port
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError, http.client.BadStatusLine)):
            get(server.port, "/metrics")
    finally:
        server.stop()


def test_web_config_errors_name_file_line_and_key(tmp_path, pki):
    p = tmp_path / "web.yml"
    p.write_text("basic_auth_users:\n  alice: not-a-hash\n")
    with pytest.raises(ConfigError) as e:
        load_web_config(str(p))
    assert str(e.value).startswith(f"{p}:2: basic_auth_users.alice: is not a bcrypt hash")
    p.write_text(f"tls_server_config:\n  cert_file: {pki}/server.crt\n  key_file: {pki}/server.key\n"
                 "  client_auth_type: RequireAndVerifyClientCert\n")
    with pytest.raises(ConfigError) as e:
        load_web_config(str(p))
    assert ":4: tls_server_config.client_auth_type: RequireAndVerifyClientCert needs client_ca_file" in str(e.value)
    p.write_text("tls_server_config:\n  cert_file: missing.crt\n  key_file: x\n")
    with pytest.raises(ConfigError) as e:
        load_web_config(str(p))
    assert ":2: tls_server_config.cert_file: file" in str(e.value) and "missing.crt does not exist" in str(e.value)
    p.write_text("tls_server_config: [\n")
    with pytest.raises(ConfigError) as e:
        load_web_config(str(p))
    assert "invalid YAML" in str(e.value)


# --- the server's bounds, in process with small limits (the defaults are tested against `serve`
# in tests/e2e/test_http_hostile.py)

import socket  # noqa: E402
import time  # noqa: E402

from kafka_jmx_sidecar.exporter.http.limits import Limits  # noqa: E402
from kafka_jmx_sidecar.exporter.http.basic_auth import Verifier, parse_authorization  # noqa: E402
from kafka_jmx_sidecar.exporter.http.endpoints import gzip_accepted  # noqa: E402
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics  # noqa: E402


class FixedBody:
    """A collector stand-in serving one body (and counting the server's self metrics)."""

    ready = True

    def __init__(self, body: bytes):
        self.body, self.metrics = body, SelfMetrics()

    def response(self, fmt, gzip_wanted):
        return len(self.body), (self.body,)


def errors(collector, reason: str) -> float:
    return collector.metrics.http_client_errors.labels(reason)._value.get()


def wait_until(what, predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.02)


def closed_by_server(sock: socket.socket, seconds: float = 10.0) -> bool:
    """True when the server closes `sock` (EOF or reset) within `seconds`, reading what it sends."""
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def raw_exchange(port: int, data: bytes, seconds: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except ConnectionResetError:
            pass
        return out


@pytest.mark.parametrize("header, gzip_wanted", [
    (None, False), ("", False), ("gzip", True), ("GZIP", True), ("gzip, deflate, br", True),
    ("gzip;q=0", False), ("gzip; q=0.000", False), ("gzip;q=0.001", True), ("identity, gzip;q=0.5", True),
    ("br", False), ("*", True), ("*;q=0", False), ("gzip;q=0, *", False), ("br, *;q=0.1", True),
    ("x-gzip", True), ("gzip;q=2", False), ("gzip;q=abc", False), ("deflate, gzip ; q=1.0", True),
])
def test_accept_encoding_is_parsed_with_its_q_values(header, gzip_wanted):
    assert gzip_accepted(header) is gzip_wanted


def test_basic_credentials():
    token = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    assert parse_authorization("Basic " + token("u:p:q")) == ("u", "p:q")
    assert parse_authorization("Basic " + token("u:")) == ("u", "")
    assert parse_authorization("Basic " + token("u:p").rstrip("=")) == ("u", "p")
    # the scheme in any case, then one or more spaces (RFC 7235's 1*SP)
    for scheme in ("basic ", "BASIC ", "bAsIc  "):
        assert parse_authorization(scheme + token("u:p")) == ("u", "p")
    assert parse_authorization("Basic " + token("no-colon")) == "malformed"
    assert parse_authorization("Basic !!!") == "malformed"
    assert parse_authorization("Basic") == "malformed"
    assert parse_authorization("Basic " + base64.b64encode(b"u:\xff").decode()) == "malformed"  # not UTF-8
    assert parse_authorization("Bearer abc") == "missing"
    assert parse_authorization("Basically " + token("u:p")) == "missing"
    assert parse_authorization("") == "missing"


def test_an_unknown_user_costs_one_password_check_as_a_known_one_does():
    calls = []

    def verifier(name):
        def check(password):
            calls.append((name, password))
            return password == "right"
        return Verifier(name.encode(), check)

    web = WebConfig(users={"alice": verifier("alice"), "bob": verifier("bob")})
    assert web.remembered("mallory", "right") is None  # not yet checked: must be verified
    assert web.verify("mallory", "right") is False and calls == [("alice", "right")]
    assert web.verify("bob", "wrong") is False and calls[-1] == ("bob", "wrong")
    assert web.verify("bob", "right") is True
    # each pair is remembered, right or wrong, known user or not
    assert (web.remembered("mallory", "right"), web.remembered("bob", "wrong"), web.remembered("bob", "right")) \
        == (False, False, True)
    assert web.remembered(None, None) is False and len(calls) == 3


def test_connections_beyond_the_limit_are_closed_at_once_and_counted():
    collector = FixedBody(b"x")
    server = MetricsServer("127.0.0.1", 0, collector, WebConfig(), Limits(max_connections=5))
    server.start()
    held = []
    try:
        for _ in range(5):
            held.append(socket.create_connection(("127.0.0.1", server.port)))
        wait_until("5 connections open", lambda: collector.metrics.http_connections._value.get() == 5)
        extra = socket.create_connection(("127.0.0.1", server.port))
        assert closed_by_server(extra, 5)
        assert errors(collector, "too_many_connections") == 1
        held.pop().close()
        wait_until("4 connections open", lambda: collector.metrics.http_connections._value.get() == 4)
        assert raw_exchange(server.port, b"GET /-/healthy HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.1 200 OK\r\n")
    finally:
        for s in held:
            s.close()
        server.stop()


def test_keep_alive_idle_timeout_and_request_limit():
    collector = FixedBody(b"x")
    server = MetricsServer("127.0.0.1", 0, collector, WebConfig(), Limits(idle_timeout=0.5, max_requests=3))
    server.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        answers = []
        for _ in range(3):
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            answers.append((r.status, r.read(), r.getheader("Connection")))
        assert answers == [(200, b"x", None), (200, b"x", None), (200, b"x", "close")]
        conn.close()
        # an idle keep-alive connection is closed after idle_timeout, quietly: that is its normal end
        with socket.create_connection(("127.0.0.1", server.port)) as s:
            s.sendall(b"GET /-/healthy HTTP/1.1\r\nHost: t\r\n\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 200 OK")
            assert closed_by_server(s, 5)
        assert sum(errors(collector, r) for r in ("timeout", "disconnected", "bad_request")) == 0
    finally:
        server.stop()


def test_head_pipelining_and_http_1_0():
    collector = FixedBody(b"0123456789")
    server = MetricsServer("127.0.0.1", 0, collector, WebConfig(headers={"X-Frame-Options": "deny"}))
    server.start()
    try:
        two = raw_exchange(server.port, b"HEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\n"
                                        b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        head, get_ = two.split(b"HTTP/1.1 ")[1:]
        assert head.startswith(b"200 OK\r\n") and b"\r\nContent-Length: 10\r\n" in head and head.endswith(b"\r\n\r\n")
        assert b"\r\nX-Frame-Options: deny\r\n" in head and b"\r\nServer: kafka-jmx-sidecar\r\n" in head
        assert get_.startswith(b"200 OK\r\n") and get_.endswith(b"\r\n\r\n0123456789")
        old = raw_exchange(server.port, b"GET /metrics HTTP/1.0\r\n\r\n")
        assert old.startswith(b"HTTP/1.1 200 OK\r\n") and old.endswith(b"0123456789")
        assert raw_exchange(server.port, b"POST /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 2\r\n\r\nab"
                            ).startswith(b"HTTP/1.1 405 Method Not Allowed\r\n")
    finally:
        server.stop()


def test_a_client_that_does_not_read_its_answer_is_cut_off_after_the_write_timeout():
    collector = FixedBody(b"z" * (64 << 20))  # more than the socket buffers hold
    server = MetricsServer("127.0.0.1", 0, collector, WebConfig(), Limits(write_timeout=1.0))
    server.start()
    try:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", server.port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        wait_until("the write timeout counted", lambda: errors(collector, "timeout") == 1)
        received = 0
        s.settimeout(10)
        try:
            while chunk := s.recv(1 << 20):
                received += len(chunk)
        except ConnectionResetError:
            pass
        s.close()
        assert received < 64 << 20
        wait_until("the connection gone", lambda: collector.metrics.http_connections._value.get() == 0)
        assert errors(collector, "disconnected") == 0
    finally:
        server.stop()


def test_failed_and_unfinished_tls_handshakes_are_counted_and_leave_nothing_open(pki, caplog):
    collector = FixedBody(b"x")
    (pki / "web-tls.yml").write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
    web = load_web_config(str(pki / "web-tls.yml"))
    silent = []
    server = MetricsServer("127.0.0.1", 0, collector, web, Limits(header_timeout=0.5))
    server.start()
    try:
        with caplog.at_level(logging.DEBUG, logger="kafka_jmx_sidecar.http"):
            for _ in range(3):  # plain HTTP on the TLS port
                assert raw_exchange(server.port, b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n") == b""
            for _ in range(3):  # half a TLS hello, then gone
                with socket.create_connection(("127.0.0.1", server.port)) as s:
                    s.sendall(b"\x16\x03\x01")
            silent = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]  # no handshake at all
            assert all(closed_by_server(s, 5) for s in silent)
            ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
            r, body = get(server.port, "/metrics", context=ctx)
            assert (r.status, body) == (200, b"x")
            wait_until("every connection gone", lambda: collector.metrics.http_connections._value.get() == 0)
        assert [errors(collector, r) for r in ("tls_handshake", "disconnected", "timeout")] == [3, 3, 3]
        assert [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG] == []
    finally:
        for s in silent:
            s.close()
        server.stop()
