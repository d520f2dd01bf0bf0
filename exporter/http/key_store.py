"""Java key stores (JKS, PKCS12, JCEKS) -> PEM, for Python's ssl module, which reads PEM only.

Java's own `keytool` (shipped with every JRE and JDK, next to the JVM the sidecar already needs)
reads the store, so store types, alias case folding and the key password being the store
password behave as they do for jmx_exporter, which reads them with java.security.KeyStore. It
copies the one entry asked for into a fresh PKCS12 file protected by a one-time password, in a
private temporary directory deleted at once; the `cryptography` package then reads that file.
Passwords reach keytool through its environment (`-storepass:env`), never its command line.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# keytool's own store type names (java.security.KeyStore.getInstance is case-insensitive).
STORE_TYPES = ("JKS", "PKCS12", "JCEKS")
_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----\r?\n.*?-----END CERTIFICATE-----", re.S)
_JAVA_EXCEPTION = re.compile(r"^(?:[\w$]+\.)*[\w$]*(?:Exception|Error): ")


class KeyStoreError(ValueError):
    """What keytool or the conversion said, without any password."""


@dataclass(frozen=True)
class Identity:
    cert_chain_pem: bytes       # the entry's certificate first, then the rest of its chain
    key_pem: bytes              # PKCS#8, encrypted with `key_password`
    key_password: str = ""
    fingerprint_sha256: str = ""
    alias: str = ""             # as Java lists it (JKS and PKCS12 stores keep aliases in lowercase)


def keytool() -> str:
    """The keytool of the Java the sidecar runs: $JAVA_HOME, then PATH, then JPype's JVM."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "keytool")
    found = shutil.which("keytool")
    if found:
        candidates.append(Path(found))
    try:
        import jpype

        libjvm = Path(os.path.realpath(jpype.getDefaultJVMPath()))  # JAVA_HOME/lib/server/libjvm.so
        candidates += [libjvm.parents[2] / "bin" / "keytool", libjvm.parents[3] / "bin" / "keytool"]
    except Exception:  # no JVM found: said below
        pass
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    raise KeyStoreError("keytool (part of every Java runtime) was not found: set JAVA_HOME or put keytool on PATH")


def _run_keytool(args: list[str], secrets_env: dict[str, str]) -> str:
    env = {**os.environ, **secrets_env}
    try:
        # English messages whatever the locale, since the first line is shown to the user.
        proc = subprocess.run([keytool(), "-J-Duser.language=en", "-J-Duser.country=US", *args],
                              env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise KeyStoreError("keytool did not finish within 120 s") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.startswith("keytool error")]
        message = lines[0].partition(": ")[2] if lines else (proc.stderr.strip() or proc.stdout.strip())
        raise KeyStoreError(_JAVA_EXCEPTION.sub("", message).strip() or f"keytool exited {proc.returncode}")
    return proc.stdout


def _store_args(prefix: str, path: str, store_type: str | None) -> list[str]:
    args = [f"-{prefix}keystore", path]
    if store_type:
        args += [f"-{prefix}storetype", store_type]
    return args


def read_identity(path: str, password: str, alias: str, store_type: str | None = None) -> Identity:
    """The private key and certificate chain of `alias` in the key store at `path` (keytool
    finds the alias in any case; `Identity.alias` says how the store spells it)."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    one_time = secrets.token_urlsafe(24)
    src, dst = "KAFKA_JMX_SIDECAR_SRC_PASS", "KAFKA_JMX_SIDECAR_DST_PASS"
    tmp = tempfile.mkdtemp(prefix="kafka-jmx-sidecar-ks-")  # mode 0700
    try:
        out = os.path.join(tmp, "entry.p12")
        _run_keytool(["-importkeystore", "-noprompt", *_store_args("src", path, store_type),
                      "-srcstorepass:env", src, "-srcalias", alias, "-srckeypass:env", src,
                      "-destkeystore", out, "-deststoretype", "PKCS12",
                      "-deststorepass:env", dst, "-destkeypass:env", dst],
                     {src: password, dst: one_time})
        with open(out, "rb") as f:
            data = f.read()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        entry = pkcs12.load_pkcs12(data, one_time.encode())
    except ValueError as e:
        raise KeyStoreError(f"cannot read the converted entry ({e})") from None
    if entry.key is None or entry.cert is None:
        raise KeyStoreError(f"the entry {alias!r} holds a certificate but no private key")
    leaf = entry.cert.certificate
    chain = [leaf] + [c.certificate for c in entry.additional_certs if c.certificate != leaf]
    key_password = secrets.token_urlsafe(24)
    return Identity(
        cert_chain_pem=b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain),
        key_pem=entry.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.BestAvailableEncryption(key_password.encode())),
        key_password=key_password,
        fingerprint_sha256=leaf.fingerprint(hashes.SHA256()).hex(),
        alias=(entry.cert.friendly_name or b"").decode("utf-8", "replace"),
    )


def read_trusted_certificates(path: str, password: str, store_type: str | None = None) -> str:
    """Every certificate in the store at `path` (trusted entries and key entries' chains), PEM."""
    var = "KAFKA_JMX_SIDECAR_STORE_PASS"
    out = _run_keytool(["-list", "-rfc", *_store_args("", path, store_type), "-storepass:env", var], {var: password})
    certs = _PEM_CERT.findall(out.encode())
    if not certs:
        raise KeyStoreError("the store holds no certificate")
    return b"\n".join(certs).decode()
