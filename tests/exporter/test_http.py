"""The /metrics endpoint over real sockets: content negotiation, gzip, probes, TLS and basic auth
from a Prometheus web-config file (certificates made with openssl, hashes with bcrypt)."""
from __future__ import annotations

import base64
import gzip
import http.client
import ssl
import subprocess

import bcrypt
import pytest

from exporter.collector import Collector
from exporter.http import MetricsServer
from exporter.config_file import ConfigError
from exporter.rule_engine.config import parse_config
from exporter.sidecar_settings import SidecarSettings
from exporter.web_config import WebConfig, load_web_config
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
