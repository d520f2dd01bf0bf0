"""jmx_exporter's `httpServer` block in the sidecar: every config error names the file, line and
key; hashes in each spelling jmx_exporter releases accept; PEM keys made by openssl (PKCS#8 and
traditional, encrypted and not); client certificates from a keytool trust store; protocols and
ciphers; the block and a web-config file together are refused. Servers run in this process."""
from __future__ import annotations

import base64
import hashlib
import os
import ssl
import subprocess
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile
from kafka_jmx_sidecar.exporter.http.server_block import CHALLENGE, read_http_server_block
from kafka_jmx_sidecar.exporter.config.load import load
from tests.exporter.test_http import get, serve


def block(tmp_path: Path, text: str, env: dict | None = None):
    p = tmp_path / "exporter.yml"
    p.write_text("hostPort: 127.0.0.1:9999\nhttpServer:\n" + text)
    web, warnings, _mistakes = read_http_server_block(ConfigFile.read(p, env or {}))
    return web, warnings


def error(tmp_path: Path, text: str, env: dict | None = None) -> str:
    with pytest.raises(ConfigError) as e:
        block(tmp_path, text, env)
    return str(e.value).replace(str(tmp_path / "exporter.yml"), "F")


def basic(**keys) -> str:
    return "  authentication:\n    basic:\n" + "".join(f"      {k}: {v}\n" for k, v in keys.items())


@pytest.mark.parametrize("text, expected", [
    ("  authentication: {}\n", "F:3: httpServer.authentication: basic is missing"),
    ("  authentication:\n    plugin: {class: com.example.Auth}\n",
     "F:4: httpServer.authentication.plugin: a Java authenticator class cannot run in the sidecar"),
    (basic(password="x"), "F:4: httpServer.authentication.basic.username: is missing"),
    (basic(username="' '", password="x"), "F:5: httpServer.authentication.basic.username: must not be blank"),
    (basic(username="p"), "F:4: httpServer.authentication.basic.password: is missing"),
    (basic(username="p", passwordHash="ab", salt="s"), "F:4: httpServer.authentication.basic.password: is missing"),
    (basic(username="p", algorithm="sha-256", passwordHash="ab", salt="s"),
     "F:6: httpServer.authentication.basic.algorithm: unsupported algorithm 'sha-256'"),
    (basic(username="p", algorithm="SHA-256", passwordHash="xyz", salt="s"),
     "F:7: httpServer.authentication.basic.passwordHash: is not hexadecimal"),
    (basic(username="p", algorithm="SHA-1", passwordHash="a" * 42, salt="s"),
     "F:7: httpServer.authentication.basic.passwordHash: has 42 hex digits; SHA-1 gives 40"),
    (basic(username="p", algorithm="SHA-1", passwordHash="ab"),
     "F:4: httpServer.authentication.basic.salt: is missing"),
    (basic(username="p", algorithm="PBKDF2WithHmacSHA256", passwordHash="ab" * 20, salt="s"),
     "F:7: httpServer.authentication.basic.passwordHash: has 20 bytes, but keyLength 128 means 128 bytes"),
    (basic(username="p", algorithm="PBKDF2WithHmacSHA256", passwordHash="ab" * 16, salt="s", iterations=0),
     "F:9: httpServer.authentication.basic.iterations: must be 1 or more, not 0"),
    (basic(username="p", algorithm="PBKDF2WithHmacSHA256", passwordHash="ab" * 16, salt="s", keyLength="x"),
     "F:9: httpServer.authentication.basic.keyLength: must be a whole number, not 'x'"),
    (basic(username="p", password="${SECRET}"),
     "F:6: httpServer.authentication.basic.password: environment variable SECRET is not set"),
    ("  threads: {minimum: 5, maximum: 2, keepAliveTime: 120}\n",
     "F:3: httpServer.threads.maximum: 2 is less than minimum 5"),
    ("  threads: {minimum: 1}\n", "F:3: httpServer.threads.maximum: is missing"),
    ("  ssl: {}\n", "F:3: httpServer.ssl: keyStore is missing; set ssl.keyStore.filename and ssl.keyStore.password "
                    "(jmx_exporter's fallback to the javax.net.ssl.keyStore system properties has no equivalent"),
    ("  ssl:\n    keyStore: {password: x}\n", "F:4: httpServer.ssl.keyStore.filename: is missing"),
    ("  ssl:\n    keyStore: {filename: /nonexistent.p12, password: x}\n",
     "F:4: httpServer.ssl.keyStore.filename: file /nonexistent.p12 does not exist"),
    ("  ssl:\n    pem: {certificate: {filename: /a}}\n    keyStore: {filename: /b}\n",
     "F:4: httpServer.ssl.pem: pem and keyStore are both set"),
    ("  ssl:\n    pem:\n      certificate: {filename: /nonexistent.crt}\n",
     "F:5: httpServer.ssl.pem.certificate.filename: file /nonexistent.crt does not exist"),
    ("  ssl: [a]\n", "F:3: httpServer.ssl: must be a mapping, not a list"),
    ("  - x\n", "F:2: httpServer: must be a mapping, not a list"),
])
def test_errors_name_file_line_and_key(tmp_path, text, expected):
    assert error(tmp_path, text).startswith(expected)


def test_nothing_configured_and_unknown_keys(tmp_path):
    assert block(tmp_path, "  threads: {minimum: 1, maximum: 10, keepAliveTime: 120}\n") == (None, [])
    web, warnings = block(tmp_path, basic(username="p", password="x", pasword="y") + "  metrics: {path: /jmx}\n")
    assert web.challenge == CHALLENGE and list(web.users) == ["p"]
    assert warnings == [
        f"{tmp_path}/exporter.yml:7: httpServer.authentication.basic.pasword: unknown key, ignored (known here: "
        "algorithm, iterations, keyLength, password, passwordHash, salt, username)",
        f"{tmp_path}/exporter.yml:8: httpServer.metrics.path: ignored: the sidecar serves its metrics at /metrics, not /jmx",
    ]


def test_variables_as_jmx_exporter_resolves_them(tmp_path):
    env = {"USER_NAME": "prometheus", "SECRET": "  s3cret  ", "BLANK": " "}
    web, _ = block(tmp_path, basic(username="${USER_NAME}", password="' ${ SECRET } '"), env)
    assert web.authorized("prometheus", "s3cret")  # name and value trimmed
    assert not web.authorized("${USER_NAME}", "s3cret")
    web, _ = block(tmp_path, basic(username="p", password="${}"))
    assert web.authorized("p", "${}")  # not a variable: the literal text
    web, _ = block(tmp_path, basic(username="p", password="pre${SECRET}"), env)
    assert web.authorized("p", "pre${SECRET}")  # only a whole value is a variable
    assert "environment variable BLANK is empty" in error(tmp_path, basic(username="p", password="${BLANK}"), env)


def test_sha_hashes_in_every_spelling(tmp_path):
    # this salt makes a SHA-256 digest with a leading zero, which jmx_exporter 1.0 prints without it
    salt = next(f"salt{i}" for i in range(1000) if hashlib.sha256(f"salt{i}:pw".encode()).hexdigest().startswith("0"))
    full = hashlib.sha256(f"{salt}:pw".encode()).hexdigest()
    spellings = [full, full.upper(), ":".join(full[i:i + 2] for i in range(0, 64, 2)).upper(), full.lstrip("0")]
    for hashed in spellings:
        web, _ = block(tmp_path, basic(username="p", algorithm="SHA-256", salt=salt, passwordHash=f'"{hashed}"'))
        assert web.authorized("p", "pw") and not web.authorized("p", "pw2") and not web.authorized("q", "pw")


def test_pbkdf2_key_length_in_bytes_or_bits(tmp_path):
    # jmx_exporter 1.0 derives keyLength bytes (128 by default); later releases document bits
    for key_length, size in ((None, 128), (None, 16), (32, 32), (256, 32)):
        hashed = hashlib.pbkdf2_hmac("sha256", b"pw", b"salt", 1000, size).hex()
        extra = {"keyLength": key_length} if key_length else {}
        web, _ = block(tmp_path, basic(username="p", algorithm="PBKDF2WithHmacSHA256", salt="salt", iterations=1000,
                                       passwordHash=hashed, **extra))
        assert web.authorized("p", "pw") and not web.authorized("p", "pW")


def test_the_block_and_a_web_config_file_are_refused_together(tmp_path):
    (tmp_path / "web.yml").write_text("basic_auth_users: {}\n")
    p = tmp_path / "exporter.yml"
    p.write_text("hostPort: 127.0.0.1:9999\nsidecar:\n  webConfigFile: " + str(tmp_path / "web.yml") + "\n"
                 "httpServer:\n" + basic(username="p", password="x"))
    with pytest.raises(ConfigError) as e:
        load(str(p))
    assert str(e.value).startswith(f"{p}:4: httpServer: TLS or basic auth is configured both here and in the web "
                                   f"config file {tmp_path}/web.yml; keep one")
    p.write_text("hostPort: 127.0.0.1:9999\nhttpServer:\n" + basic(username="p", password="x"))
    assert load(str(p)).web.challenge == CHALLENGE
    with pytest.raises(ConfigError):  # --web.config.file on the command line too
        load(str(p), {"web_config_file": str(tmp_path / "web.yml")})


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=cwd,
                   env={**os.environ, "KEY_PASS": "key-secret"})


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    """A CA, a server certificate and its key in four PEM forms, and a client certificate."""
    d = tmp_path_factory.mktemp("pem")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
            "-subj", "/CN=test-ca", cwd=d)
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={name}", cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.crt", "-days", "2", cwd=d)
    openssl("pkcs8", "-topk8", "-in", "server.key", "-out", "server-pkcs8-enc.key", "-passout", "env:KEY_PASS", cwd=d)
    openssl("rsa", "-in", "server.key", "-traditional", "-aes256", "-out", "server-trad-enc.key",
            "-passout", "env:KEY_PASS", cwd=d)
    openssl("rsa", "-in", "server.key", "-traditional", "-out", "server-trad.key", cwd=d)
    return d


def fingerprint(port: int, context: ssl.SSLContext) -> str:
    with ssl.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="server") as tls:
            return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def trusting(pem: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pem / "ca.crt"))
    ctx.check_hostname = False
    return ctx


@pytest.mark.parametrize("key, password", [("server.key", None), ("server-trad.key", None),
                                           ("server-pkcs8-enc.key", "${KEY_PASS}"),
                                           ("server-trad-enc.key", "key-secret")])
def test_pem_keys(tmp_path, pem, key, password):
    text = (f"  ssl:\n    pem:\n      certificate:\n        filename: {pem}/server.crt\n"
            f"      privateKey:\n        filename: {pem}/{key}\n" + (f"        password: {password}\n" if password else ""))
    web, _ = block(tmp_path, text, {"KEY_PASS": "key-secret"})
    server, _ = serve(web)
    try:
        expected = hashlib.sha256(ssl.PEM_cert_to_DER_cert((pem / "server.crt").read_text())).hexdigest()
        assert fingerprint(server.port, trusting(pem)) == expected
    finally:
        server.stop()


def test_pem_key_errors(tmp_path, pem):
    def text(key: str, password: str | None = None) -> str:
        return (f"  ssl:\n    pem:\n      certificate:\n        filename: {pem}/server.crt\n"
                f"      privateKey:\n        filename: {pem}/{key}\n"
                + (f"        password: {password}\n" if password else ""))

    assert error(tmp_path, text("server-pkcs8-enc.key")).startswith(
        f"F:7: httpServer.ssl.pem.privateKey.password: the private key in {pem}/server-pkcs8-enc.key is encrypted "
        "and no password is given")
    assert error(tmp_path, text("server-trad-enc.key", "wrong")).startswith(
        f"F:8: httpServer.ssl.pem.privateKey.filename: cannot load the certificate {pem}/server.crt with the key")
    assert "the key does not match" in error(tmp_path, text("client.key"))


def keytool(*args: str, cwd: Path) -> None:
    subprocess.run(["keytool", *args], check=True, capture_output=True, cwd=cwd)


def test_mutual_tls_with_a_trust_store(tmp_path, pem):
    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(pem / "ca.crt"), "-keystore", "trust.p12",
            "-storetype", "PKCS12", "-storepass", "trustpass", cwd=tmp_path)
    text = (f"  ssl:\n    mutualTLS: \"true\"\n    pem:\n      certificate:\n        filename: {pem}/server.crt\n"
            f"      privateKey:\n        filename: {pem}/server.key\n"
            f"    trustStore:\n      filename: {tmp_path}/trust.p12\n      password: ${{TRUST}}\n"
            "    protocols: TLSv1.2\n    ciphers: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_256_GCM_SHA384\n")
    web, warnings = block(tmp_path, text, {"TRUST": "trustpass"})
    assert warnings == []
    server, _ = serve(web)
    try:
        client = trusting(pem)
        client.load_cert_chain(str(pem / "client.crt"), str(pem / "client.key"))
        with ssl.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
            with client.wrap_socket(raw, server_hostname="server") as tls:
                assert tls.version() == "TLSv1.2" and tls.cipher()[0] == "ECDHE-RSA-AES128-GCM-SHA256"
        r, _ = get(server.port, "/metrics", context=client)
        assert r.status == 200
        with pytest.raises((ssl.SSLError, ConnectionResetError, OSError)):
            get(server.port, "/metrics", context=trusting(pem))  # no client certificate
    finally:
        server.stop()
    assert error(tmp_path, text.replace("trustStore", "trustStores"), {"TRUST": "trustpass"}).startswith(
        "F:4: httpServer.ssl.mutualTLS: mutualTLS is true but trustStore is missing")
    assert error(tmp_path, text, {"TRUST": "wrong"}).startswith(
        f"F:12: httpServer.ssl.trustStore.password: cannot read the trust store {tmp_path}/trust.p12: "
        "keystore password was incorrect")
    for bad, expected in (("protocols: TLSv1.2", "protocols: TLSv1,TLSv1.3"),
                          ("protocols: TLSv1.2", "protocols: SSLv3"),
                          ("TLS_RSA_WITH_AES_256_GCM_SHA384", "TLS_FOO_WITH_BAR")):
        message = error(tmp_path, text.replace(bad, expected), {"TRUST": "trustpass"})
        assert message.startswith("F:13: httpServer.ssl.protocols:" if "protocols" in expected
                                  else "F:14: httpServer.ssl.ciphers: cipher suite(s) unknown to this OpenSSL: "
                                       "TLS_FOO_WITH_BAR"), message


def test_key_store_errors(tmp_path):
    keytool("-genkeypair", "-alias", "Server", "-keyalg", "EC", "-dname", "CN=localhost", "-validity", "2",
            "-keystore", "server.jks", "-storetype", "JKS", "-storepass", "changeit", cwd=tmp_path)

    def text(alias: str = "server", password: str = "changeit", store_type: str = "JKS") -> str:
        return (f"  ssl:\n    keyStore:\n      filename: {tmp_path}/server.jks\n      password: {password}\n"
                f"      type: {store_type}\n    certificate:\n      alias: {alias}\n")

    web, _ = block(tmp_path, text())
    assert web.ssl_context is not None
    assert error(tmp_path, text(alias="Server")).startswith(
        f"F:9: httpServer.ssl.certificate.alias: certificate alias [Server] not found in the key store "
        f"{tmp_path}/server.jks, which spells it 'server' (jmx_exporter compares aliases exactly); write alias: server")
    assert error(tmp_path, text(alias="nope")).startswith(
        f"F:9: httpServer.ssl.certificate.alias: cannot use the key store {tmp_path}/server.jks: Alias <nope> does not exist")
    assert error(tmp_path, text(password="wrong")).startswith(
        f"F:6: httpServer.ssl.keyStore.password: cannot use the key store {tmp_path}/server.jks: "
        "Keystore was tampered with, or password was incorrect")
    assert error(tmp_path, text(store_type="BKS")).startswith("F:7: httpServer.ssl.keyStore.type: unsupported key store "
                                                               "type 'BKS'")
    assert error(tmp_path, text().replace("    certificate:\n      alias: server\n", "")).startswith(
        "F:3: httpServer.ssl.certificate.alias: is missing")


def test_challenge_and_probes_with_the_block(tmp_path):
    web, _ = block(tmp_path, basic(username="p", password="x"))
    server, _ = serve(web)
    try:
        r, _ = get(server.port, "/metrics")
        assert (r.status, r.getheader("WWW-Authenticate")) == (401, CHALLENGE)
        r, _ = get(server.port, "/metrics", {"Authorization": "Bearer x"})
        assert (r.status, r.getheader("WWW-Authenticate")) == (401, None)  # as the JDK's BasicAuthenticator
        r, _ = get(server.port, "/metrics", {"Authorization": "Basic " + base64.b64encode(b"p:x").decode()})
        assert r.status == 200
        r, _ = get(server.port, "/-/healthy")
        assert r.status == 200  # probes stay open (jmx_exporter asks credentials for /-/healthy too)
    finally:
        server.stop()
