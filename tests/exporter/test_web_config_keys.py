"""The exporter-toolkit keys of the web-config file beyond certificates and passwords, against the
real MetricsServer with Python's ssl as the client (certificates made here with `cryptography`):
client_allowed_sans, cipher_suites, curve_preferences, prefer_server_cipher_suites, min/max_version.
Whatever the sidecar cannot honour exactly is an error naming file, line and key, at start and on
reload (the last good config stays)."""
from __future__ import annotations

import datetime
import http.client
import ipaddress
import socket
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.http.web_config import load_web_config
from kafka_jmx_sidecar.exporter.http.web_config_reload import WebConfigReloader
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from tests.exporter.test_http import errors, serve

ALLOWED = "prometheus.monitoring.svc"
SPIFFE = "spiffe://cluster.local/ns/monitoring/sa/prometheus"
MTLS = "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _issue(directory, name: str, key, sans: list, ca_key, *, ca: bool = False, usage=None) -> None:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name("test-ca" if ca else name)).issuer_name(_name("test-ca"))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
            critical=True)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    (directory / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / f"{name}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, an RSA server certificate for 127.0.0.1, and client certificates with different SANs."""
    d = tmp_path_factory.mktemp("sans")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    _issue(d, "ca", ca_key, [], ca_key, ca=True)
    server_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _issue(d, "server", server_key, [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))], ca_key,
           usage=ExtendedKeyUsageOID.SERVER_AUTH)
    clients = {"allowed": [x509.DNSName(ALLOWED)],
               "other": [x509.DNSName("intruder.example"), x509.RFC822Name("prometheus@monitoring.svc")],
               "ipv6": [x509.IPAddress(ipaddress.ip_address("fd00::1"))],
               "uri": [x509.UniformResourceIdentifier(SPIFFE)],
               "none": []}
    for name, sans in clients.items():
        _issue(d, name, ec.generate_private_key(ec.SECP256R1()), sans, ca_key, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    return d


def web(pki, text: str, name: str = "web.yml"):
    path = pki / name
    path.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n" + text)
    return path


def client(pki, cert: str | None = None, version: ssl.TLSVersion | None = None, ciphers: str | None = None,
           curve: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if cert:
        ctx.load_cert_chain(str(pki / f"{cert}.crt"), str(pki / f"{cert}.key"))
    if version:
        ctx.minimum_version = ctx.maximum_version = version
    if ciphers:
        ctx.set_ciphers(ciphers)
    if curve:
        ctx.set_ecdh_curve(curve)
    return ctx


def scrape(port: int, ctx: ssl.SSLContext) -> tuple[int, str, str]:
    """GET /metrics over one TLS connection: the status, the TLS version and the cipher."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    try:
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        r.read()
        return r.status, conn.sock.version(), conn.sock.cipher()[0]
    finally:
        conn.close()


REFUSED = (ssl.SSLError, ConnectionError, http.client.RemoteDisconnected, socket.timeout)


def test_a_client_certificate_without_an_allowed_san_is_refused(pki):
    path = web(pki, MTLS + f"  client_allowed_sans: [{ALLOWED}, 'fd00::1', '{SPIFFE}']\n")
    server, collector = serve(load_web_config(str(path)))
    try:
        assert scrape(server.port, client(pki, "allowed"))[0] == 200
        assert scrape(server.port, client(pki, "uri"))[0] == 200
        # OpenSSL spells the address fd00:0:0:0:0:0:0:1; compared as Go spells it
        assert scrape(server.port, client(pki, "ipv6"))[0] == 200
        for cert in ("other", "none"):
            for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
                before = errors(collector, "tls_handshake")
                with pytest.raises(REFUSED):
                    scrape(server.port, client(pki, cert, version))
                assert errors(collector, "tls_handshake") == before + 1
        with pytest.raises(REFUSED):  # no client certificate at all: the handshake itself fails
            scrape(server.port, client(pki))
    finally:
        server.stop()


def test_cipher_suites_restrict_tls_1_2_and_the_server_order_wins(pki):
    path = web(pki, "  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "
                    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256]\n")
    server, _ = serve(load_web_config(str(path)))
    try:
        with pytest.raises(ssl.SSLError):  # a TLS 1.2 client offering only a suite not listed
            scrape(server.port, client(pki, version=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-RSA-AES128-GCM-SHA256"))
        assert scrape(server.port, client(pki, ciphers="ECDHE-RSA-CHACHA20-POLY1305")) == \
            (200, "TLSv1.2", "ECDHE-RSA-CHACHA20-POLY1305")
        # the client prefers ChaCha20; prefer_server_cipher_suites (true by default) picks the first listed
        both = "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES256-GCM-SHA384"
        assert scrape(server.port, client(pki, ciphers=both)) == (200, "TLSv1.2", "ECDHE-RSA-AES256-GCM-SHA384")
    finally:
        server.stop()
    path = web(pki, "  max_version: TLS12\n  prefer_server_cipher_suites: false\n  cipher_suites: "
                    "[TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256]\n")
    server, _ = serve(load_web_config(str(path)))
    try:
        assert scrape(server.port, client(pki, ciphers=both))[2] == "ECDHE-RSA-CHACHA20-POLY1305"
    finally:
        server.stop()


def test_only_tls_1_3_suites_leave_tls_1_2_nothing_as_in_go(pki):
    server, _ = serve(load_web_config(str(web(pki, "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"))))
    try:
        with pytest.raises(ssl.SSLError):
            scrape(server.port, client(pki, version=ssl.TLSVersion.TLSv1_2))
        assert scrape(server.port, client(pki))[:2] == (200, "TLSv1.3")
    finally:
        server.stop()


def test_min_version_and_one_curve(pki):
    server, _ = serve(load_web_config(str(web(pki, "  min_version: TLS13\n  curve_preferences: [CurveP384]\n"))))
    try:
        with pytest.raises(ssl.SSLError):
            scrape(server.port, client(pki, version=ssl.TLSVersion.TLSv1_2))
        with pytest.raises(ssl.SSLError):  # a client whose only group is P-256
            scrape(server.port, client(pki, curve="prime256v1"))
        assert scrape(server.port, client(pki, curve="secp384r1"))[:2] == (200, "TLSv1.3")
    finally:
        server.stop()


@pytest.mark.parametrize("text, where, says", [
    ("  client_allowed_san: [x]\n", ":4: tls_server_config.client_allowed_san: unknown key", "anything else is refused"),
    ("http_server_config:\n  http2: true\n", ":5: http_server_config.http2: HTTP/2 is not served", "set it to false"),
    ("http_server_config:\n  htp2: false\n", ":5: http_server_config.htp2: unknown key", "use headers, http2"),
    ("http_server_config:\n  headers: {Set-Cookie: a}\n", ":5: http_server_config.headers.Set-Cookie: this HTTP",
     "X-Frame-Options"),
    ("http_server_config:\n  headers: {X-Frame-Options: allow}\n", ":5: http_server_config.headers.X-Frame-Options: "
     "'allow' is not allowed", "deny, sameorigin"),
    ("rate_limit:\n  burst: 10\n", ":4: rate_limit: is an exporter-toolkit setting this sidecar does not implement",
     "remove it"),
    ("basic_auth_user: {}\n", ":4: basic_auth_user: unknown key", "use tls_server_config"),
    ("  client_ca: '-----BEGIN CERTIFICATE-----'\n", ":4: tls_server_config.client_ca: is an exporter-toolkit",
     "client_ca_file"),
    ("  client_allowed_sans: [a]\n", ":4: tls_server_config.client_allowed_sans: needs client_auth_type: "
     "RequireAndVerifyClientCert", "or remove client_allowed_sans"),
    ("  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.crt\n  client_allowed_sans: [a]\n",
     ":6: tls_server_config.client_allowed_sans: needs", "RequireAndVerifyClientCert"),
    (MTLS + "  client_allowed_sans: []\n", ":6: tls_server_config.client_allowed_sans: is an empty list", "remove"),
    ("  client_ca_file: ca.crt\n", ":4: tls_server_config.client_ca_file: is given but client_auth_type is "
     "NoClientCert", "RequireAndVerifyClientCert"),
    ("  client_auth_type: RequireClientCert\n", ":4: tls_server_config.client_auth_type: RequireClientCert",
     "with client_ca_file"),
    ("  cipher_suites:\n  - TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384\n  - ECDHE-RSA-AES128-SHA\n",
     ":6: tls_server_config.cipher_suites[1]: unknown cipher suite 'ECDHE-RSA-AES128-SHA'", "Go's names"),
    ("  max_version: TLS12\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
     ":5: tls_server_config.cipher_suites: lists only TLS 1.3 suites", "max_version: TLS13"),
    ("  curve_preferences: [CurveP256, X25519]\n", ":4: tls_server_config.curve_preferences: lists 2 curves, "
     "but Python's ssl", "list one curve"),
    ("  curve_preferences: [P-256]\n", ":4: tls_server_config.curve_preferences[0]: unknown curve", "CurveP256"),
    ("  min_version: TLS10\n", ":4: tls_server_config.min_version: TLS10 is not offered", "TLS12 or TLS13"),
    ("  min_version: TLS13\n  max_version: TLS12\n", ":5: tls_server_config.max_version: is below min_version",
     "raise"),
    ("  prefer_server_cipher_suites: yes please\n", ":4: tls_server_config.prefer_server_cipher_suites: must be",
     "true or false"),
])
def test_what_cannot_be_honoured_is_an_error_naming_file_line_and_key(pki, text, where, says):
    if text.startswith("  "):
        path = web(pki, text, "bad.yml")
    else:
        path = web(pki, "", "bad.yml")
        path.write_text(path.read_text() + text)
    with pytest.raises(ConfigError) as e:
        load_web_config(str(path))
    message = str(e.value)
    assert message.startswith(f"{path}{where}") and says in message.split("; ", 1)[1]


def test_a_reload_with_an_unimplemented_key_keeps_the_last_good_config(pki):
    path = web(pki, MTLS + f"  client_allowed_sans: [{ALLOWED}]\n", "reloaded.yml")
    metrics = SelfMetrics()
    watch = WebConfigReloader(str(path), load_web_config(str(path)), metrics)
    good = watch.current
    path.write_text(path.read_text() + "http_server_config:\n  http2: true\n")
    assert watch.check() is False
    assert watch.current is good and good.client_allowed_sans == (ALLOWED,)
    assert metrics.web_config_reload_failure._value.get() == 1
    path.write_text(path.read_text().replace("  client_allowed_sans", "  client_alowed_sans"))
    assert watch.check() is False and watch.current is good
    assert metrics.web_config_reload_failure._value.get() == 2
    path.write_text(path.read_text().replace("client_alowed_sans", "client_allowed_sans").replace("true", "false"))
    assert watch.check() is True and watch.current.client_allowed_sans == (ALLOWED,)
    assert metrics.web_config_reload_success._value.get() == 1
