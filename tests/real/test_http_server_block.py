"""jmx_exporter 1.x's `httpServer` block, differentially: the real jmx_exporter 1.0.1 standalone
and `kafka-jmx-sidecar serve` read the same YAML file and scrape the same real Kafka 4.4 broker;
for every authentication algorithm, right, wrong and missing credentials get the same status
and the same WWW-Authenticate challenge; TLS from a PKCS12 and from a JKS key store (made with
keytool) presents the same certificate on both. PEM files (jmx_exporter 1.7, not runnable here)
are checked against the sidecar alone, with keys made by openssl, encrypted and not.

Hashes are made here with hashlib, from jmx_exporter's documented formulas, not with the
sidecar's code, so the real exporter judges them too.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import os
import ssl
import subprocess
from pathlib import Path

import pytest

from harness.sidecar import Serve

USER = "Prometheus"
CHALLENGE = 'Basic realm="/", charset="UTF-8"'
# one small MBean family keeps both scrapes short
HEAD = 'includeObjectNames: ["kafka.server:type=ReplicaManager,name=PartitionCount"]\n'


def _unverified() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def request(port: int, path: str, credentials: str | None = None, https: bool = False,
            raw_authorization: str | None = None) -> tuple[int, str | None]:
    """(status, WWW-Authenticate) of one GET; `credentials` is "user:password"."""
    headers = {}
    if credentials is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
    if raw_authorization is not None:
        headers["Authorization"] = raw_authorization
    conn = (http.client.HTTPSConnection("127.0.0.1", port, timeout=120, context=_unverified()) if https
            else http.client.HTTPConnection("127.0.0.1", port, timeout=120))
    try:
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        r.read()
        return r.status, r.getheader("WWW-Authenticate")
    finally:
        conn.close()


def peer_fingerprint(port: int) -> str:
    with ssl.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with _unverified().wrap_socket(raw, server_hostname="localhost") as tls:
            return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def sha_hash(algorithm: str, salt: str, password: str) -> str:
    return hashlib.new(algorithm.replace("-", "").lower(), f"{salt}:{password}".encode()).hexdigest()


def salt_without_leading_zero(algorithm: str, password: str) -> str:
    # jmx_exporter 1.0.1 prints the digest as a number (no leading zero) and compares text: a
    # hash starting with 0 never matches there (later releases fixed it; the sidecar takes both)
    for i in range(100):
        salt = f"U9i%=N+m]#i9yvUV:bA/3n4X9JdPXf=n{i}"
        if not sha_hash(algorithm, salt, password).startswith("0"):
            return salt
    raise AssertionError("no salt found")


def colons(hex_text: str) -> str:
    """The documentation's spelling: uppercase bytes separated by colons."""
    return ":".join(hex_text[i:i + 2] for i in range(0, len(hex_text), 2)).upper()


PASSWORD = "s3cr:t-p\u00e4ss"  # a colon and a non-ASCII letter, both legal in Basic auth


def basic_block(algorithm: str) -> str:
    if algorithm == "plaintext":
        return f"      username: {USER}\n      password: \"{PASSWORD}\"\n"
    if algorithm.startswith("SHA"):
        salt = salt_without_leading_zero(algorithm, PASSWORD)
        return (f"      username: {USER}\n      algorithm: {algorithm}\n      salt: \"{salt}\"\n"
                f"      passwordHash: \"{colons(sha_hash(algorithm, salt, PASSWORD))}\"\n")
    digest = {"PBKDF2WithHmacSHA1": "sha1", "PBKDF2WithHmacSHA256": "sha256", "PBKDF2WithHmacSHA512": "sha512"}
    # SHA-512 with jmx_exporter's defaults (210,000 iterations, keyLength 128 = 128 bytes in 1.0.1);
    # the others with fewer iterations and a short key, so the run stays short on two cores
    if algorithm == "PBKDF2WithHmacSHA512":
        iterations, key_bytes, extra = 210_000, 128, ""
    else:
        iterations, key_bytes, extra = 20_000, 32, "      iterations: 20000\n      keyLength: 32\n"
    salt = "98LeBWIjca"
    hashed = hashlib.pbkdf2_hmac(digest[algorithm], PASSWORD.encode(), salt.encode(), iterations, key_bytes).hex()
    return (f"      username: {USER}\n      algorithm: {algorithm}\n      salt: {salt}\n{extra}"
            f"      passwordHash: {colons(hashed) if algorithm.endswith('256') else hashed}\n")


def write_config(path: Path, host_port: str, http_server: str) -> Path:
    path.write_text(f"hostPort: {host_port}\n{HEAD}httpServer:\n{http_server}rules:\n- pattern: \".*\"\n")
    return path


def pair(jmx_exporter, config: Path, https: bool = False):
    """The real jmx_exporter 1.0.1 and the sidecar, both started on `config`."""
    real = jmx_exporter("1.0.1", config, https=https)
    sidecar = Serve(config, https=https).start()
    return real, sidecar


def answers(port: int, https: bool = False) -> dict[str, tuple[int, str | None]]:
    no_pad = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode().rstrip("=")
    return {
        "none": request(port, "/metrics", https=https),
        "right": request(port, "/metrics", f"{USER}:{PASSWORD}", https),
        "right, base64 without padding": request(port, "/metrics", https=https, raw_authorization=f"Basic {no_pad}"),
        "wrong password": request(port, "/metrics", f"{USER}:{PASSWORD}x", https),
        "wrong user": request(port, "/metrics", f"prometheus:{PASSWORD}", https),
        "empty password": request(port, "/metrics", f"{USER}:", https),
        "another scheme": request(port, "/metrics", https=https, raw_authorization="Bearer abc"),
        "landing page, no credentials": request(port, "/", https=https),
    }


@pytest.mark.parametrize("algorithm", ["plaintext", "SHA-1", "SHA-256", "SHA-512", "PBKDF2WithHmacSHA1",
                                       "PBKDF2WithHmacSHA256", "PBKDF2WithHmacSHA512"])
def test_basic_auth_answers_as_jmx_exporter_does(real_kafka, jmx_exporter, tmp_path, algorithm):
    cluster = real_kafka("4.4")
    config = write_config(tmp_path / "exporter.yml", cluster.jmx_host_port(1),
                          f"  authentication:\n    basic:\n{basic_block(algorithm)}")
    real, sidecar = pair(jmx_exporter, config)
    try:
        theirs, ours = answers(real.port), answers(sidecar.port)
    finally:
        sidecar.stop()
    assert ours == theirs
    assert theirs["right"] == (200, None) and theirs["none"] == (401, CHALLENGE)


def make_key_stores(d: Path) -> dict[str, Path]:
    """A PKCS12 store with the server's key under alias "Server" and another key before it, and
    the same store converted to JKS by keytool."""
    p12, jks = d / "server.p12", d / "server.jks"
    for alias, cn in (("decoy", "decoy"), ("Server", "localhost")):
        subprocess.run(["keytool", "-genkeypair", "-alias", alias, "-keyalg", "RSA", "-keysize", "2048",
                        "-dname", f"CN={cn}", "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2",
                        "-keystore", str(p12), "-storetype", "PKCS12", "-storepass", "changeit"],
                       check=True, capture_output=True)
    subprocess.run(["keytool", "-importkeystore", "-noprompt", "-srckeystore", str(p12), "-srcstorepass", "changeit",
                    "-destkeystore", str(jks), "-deststoretype", "JKS", "-deststorepass", "changeit"],
                   check=True, capture_output=True)
    return {"PKCS12": p12, "JKS": jks}


def keytool_fingerprint(store: Path, alias: str) -> str:
    pem = subprocess.run(["keytool", "-exportcert", "-rfc", "-alias", alias, "-keystore", str(store),
                          "-storepass", "changeit"], check=True, capture_output=True, text=True).stdout
    der = ssl.PEM_cert_to_DER_cert(pem[pem.index("-----BEGIN"):])
    return hashlib.sha256(der).hexdigest()


@pytest.mark.parametrize("store_type", ["PKCS12", "JKS"])
def test_tls_from_a_key_store_serves_the_same_certificate(real_kafka, jmx_exporter, tmp_path, store_type):
    cluster = real_kafka("4.4")
    store = make_key_stores(tmp_path)[store_type]
    # keytool was told "Server"; Java's stores keep "server", which jmx_exporter compares exactly
    config = write_config(tmp_path / "exporter.yml", cluster.jmx_host_port(1),
                          f"  authentication:\n    basic:\n{basic_block('plaintext')}"
                          f"  ssl:\n    keyStore:\n      filename: {store}\n      password: changeit\n"
                          "    certificate:\n      alias: server\n")
    real, sidecar = pair(jmx_exporter, config, https=True)
    try:
        assert peer_fingerprint(sidecar.port) == peer_fingerprint(real.port) == keytool_fingerprint(store, "server")
        theirs, ours = answers(real.port, https=True), answers(sidecar.port, https=True)
        # a plain HTTP request to the TLS port gets no HTTP answer from either
        for port in (real.port, sidecar.port):
            with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError, http.client.BadStatusLine)):
                request(port, "/metrics", f"{USER}:{PASSWORD}")
    finally:
        sidecar.stop()
    assert ours == theirs and theirs["right"] == (200, None)


def openssl(*args: str, env: dict | None = None) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, env={**os.environ, **(env or {})})


def test_pem_files_with_an_encrypted_key_from_the_environment(real_kafka, tmp_path):
    cluster = real_kafka("4.4")
    key, cert = tmp_path / "server.key", tmp_path / "server.crt"
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes-256-cbc",
            "-pass", "env:KEY_PASS", "-out", str(key), env={"KEY_PASS": "pem-secret"})
    openssl("req", "-x509", "-key", str(key), "-passin", "env:KEY_PASS", "-subj", "/CN=localhost", "-days", "2",
            "-out", str(cert), env={"KEY_PASS": "pem-secret"})
    config = write_config(tmp_path / "exporter.yml", cluster.jmx_host_port(1),
                          f"  authentication:\n    basic:\n{basic_block('SHA-256')}"
                          f"  ssl:\n    pem:\n      certificate:\n        filename: {cert}\n"
                          f"      privateKey:\n        filename: {key}\n        password: ${{PEM_KEY_PASSWORD}}\n")
    with Serve(config, env={"PEM_KEY_PASSWORD": "pem-secret"}, https=True) as sidecar:
        der = ssl.PEM_cert_to_DER_cert(cert.read_text())
        assert peer_fingerprint(sidecar.port) == hashlib.sha256(der).hexdigest()
        got = answers(sidecar.port, https=True)
        assert got["right"] == (200, None) and got["none"] == (401, CHALLENGE)
        cmdline = Path(f"/proc/{sidecar.process.pid}/cmdline").read_bytes()
    assert b"pem-secret" not in cmdline and "pem-secret" not in sidecar.log.read_text()


@pytest.mark.parametrize("case", ["alias in another case", "algorithm in lowercase", "blank password",
                                  "hash without salt"])
def test_what_jmx_exporter_refuses_the_sidecar_refuses(tmp_path, case):
    from harness.jmx_exporter import command
    from harness.sidecar import command as sidecar_command

    store = make_key_stores(tmp_path)["JKS"] if case == "alias in another case" else None
    http_server = {
        "alias in another case": f"  ssl:\n    keyStore:\n      filename: {store}\n      password: changeit\n"
                                 "    certificate:\n      alias: Server\n",
        "algorithm in lowercase": basic_block("SHA-256").replace("algorithm: SHA-256", "algorithm: sha-256"),
        "blank password": "      username: p\n      password: \"  \"\n",
        "hash without salt": "      username: p\n      algorithm: SHA-1\n      passwordHash: ab\n",
    }[case]
    if not http_server.startswith("  ssl"):
        http_server = "  authentication:\n    basic:\n" + http_server
    config = write_config(tmp_path / "exporter.yml", "127.0.0.1:1", http_server)
    real = subprocess.run(command("1.0.1", "127.0.0.1:0", config), capture_output=True, text=True, timeout=120)
    assert real.returncode != 0 and "Configuration Exception" in real.stdout + real.stderr
    ours = subprocess.run([*sidecar_command(), "check-config", str(config)], capture_output=True, text=True, timeout=120)
    assert ours.returncode == 2 and ours.stderr.startswith(f"{config}:"), ours.stderr
