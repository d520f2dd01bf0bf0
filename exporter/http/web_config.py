"""TLS and basic auth for /metrics, configured with the Prometheus exporter web-config file
(`--web.config.file`), the format node_exporter and the other Prometheus exporters read:

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # or NoClientCert, VerifyClientCertIfGiven
      client_ca_file: ca.crt
      min_version: TLS12
    http_server_config:
      headers: {X-Frame-Options: deny}
    basic_auth_users:
      prometheus: $2b$12$...   # bcrypt hash (htpasswd -nBC 12 "" | tr -d ':\\n')

Relative paths are relative to the web-config file, as in the exporter toolkit. The running
sidecar re-reads it when it changes (exporter/web_config_reload.py).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import ssl
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile

_CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_UNSUPPORTED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert")
_TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
                 "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
_TOP = {"tls_server_config", "http_server_config", "basic_auth_users"}


class TlsError(ValueError):
    """Why a certificate, key or trust store cannot serve; the caller adds file, line and key."""


class _NoPassword(Exception):
    pass


def _no_password() -> bytes:
    # Without a password callback OpenSSL would prompt on the terminal for an encrypted key.
    raise _NoPassword()


def server_context(cert_file: str, key_file: str, key_password: str | None = None) -> ssl.SSLContext:
    """A TLS server context from PEM files: the certificate (chain) and its private key,
    unencrypted or encrypted (PKCS#8 or traditional) with `key_password`. One definition for the
    web-config file, the httpServer block's PEM files and its key stores (converted to PEM)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert_file, key_file, key_password if key_password is not None else _no_password)
    except _NoPassword:
        raise TlsError(f"the private key in {key_file} is encrypted and no password is given") from None
    except ssl.SSLError as e:
        raise TlsError(f"cannot load the certificate {cert_file} with the key {key_file} ({e.reason or e}): "
                       "the key does not match the certificate, a password is wrong, "
                       "or a file is not PEM") from None
    except OSError as e:
        raise TlsError(f"cannot read {e.filename or cert_file} ({e.strerror})") from None
    return ctx


def server_context_from_pem(cert_chain_pem: bytes, key_pem: bytes, key_password: str) -> ssl.SSLContext:
    """`server_context` for a certificate and key held in memory (converted from a key store):
    OpenSSL reads files only, so they go to anonymous in-memory files (memfd), never to disk;
    the key stays encrypted with `key_password` even there."""
    fds = []
    try:
        paths = []
        for name, data in (("cert", cert_chain_pem), ("key", key_pem)):
            fd = os.memfd_create(f"kafka-jmx-sidecar-{name}", os.MFD_CLOEXEC)
            fds.append(fd)
            os.write(fd, data)
            paths.append(f"/proc/self/fd/{fd}")
        return server_context(paths[0], paths[1], key_password)
    finally:
        for fd in fds:
            os.close(fd)


def require_client_certificates(ctx: ssl.SSLContext, mode: int, cafile: str | None = None,
                                cadata: str | None = None) -> None:
    ctx.verify_mode = mode
    try:
        ctx.load_verify_locations(cafile=cafile, cadata=cadata)
    except (ssl.SSLError, OSError) as e:
        raise TlsError(f"cannot load the client CA certificates ({getattr(e, 'reason', None) or e})") from None


Verifier = Callable[[str], bool]


def bcrypt_verifier(hashed: bytes) -> Verifier:
    def verify(password: str) -> bool:
        import bcrypt

        return bcrypt.checkpw(password.encode(), hashed)

    return verify


@dataclass
class WebConfig:
    source: str | None = None
    ssl_context: ssl.SSLContext | None = None
    users: dict[str, Verifier] = field(default_factory=dict)  # user name -> checks a password
    headers: dict[str, str] = field(default_factory=dict)
    challenge: str = 'Basic realm="kafka-jmx-sidecar"'  # the WWW-Authenticate of a 401
    challenge_any_scheme: bool = True  # also when the request sent another scheme than Basic
    files: tuple[str, ...] = ()  # what it was read from (the file, its certificate, key and CA): watched for changes
    _verified: dict[str, bool] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cache_key: bytes = field(default_factory=lambda: os.urandom(32), repr=False)

    def authorized(self, username: str | None, password: str | None) -> bool:
        known = self.remembered(username, password)
        return known if known is not None else self.verify(username, password)

    def remembered(self, username: str | None, password: str | None) -> bool | None:
        """The verdict on these credentials without hashing anything, or None when they must be
        verified. bcrypt and PBKDF2 cost tens of milliseconds to seconds by design; a scraper sends
        the same credentials every time, so a checked pair is remembered (by a keyed digest, never
        in clear), right or wrong, as jmx_exporter and the exporter toolkit do. Unknown and known
        user names take the same path here and in `verify`, so timing does not tell them apart."""
        if not self.users:
            return True
        if username is None or password is None:
            return False
        with self._lock:
            return self._verified.get(self._key(username, password))

    def verify(self, username: str | None, password: str | None) -> bool:
        """The slow check (run it off the event loop). An unknown user's password is checked
        against the first user's hash all the same and refused, so it costs what a known user's
        wrong password costs (the exporter toolkit compares against a fixed dummy hash)."""
        if not self.users:
            return True
        if username is None or password is None:
            return False
        check = self.users.get(username)
        ok = check(password) if check is not None else next(iter(self.users.values()))(password) and False
        with self._lock:
            if len(self._verified) > 1024:
                self._verified.clear()
            self._verified[self._key(username, password)] = ok
        return ok

    def _key(self, username: str, password: str) -> str:
        return hmac.new(self._cache_key, f"{username}:{password}".encode(), hashlib.sha256).hexdigest()


def load_web_config(path: str | None) -> WebConfig:
    if not path:
        return WebConfig()
    file = ConfigFile.read(path)  # the exporter toolkit reads no ${NAME}: values are taken as written
    file.refuse_duplicates()  # as the toolkit's strict YAML (yaml.UnmarshalStrict) does
    data, err = file.data, file.error
    base = os.path.dirname(os.path.abspath(path))
    if data is None:
        return WebConfig(source=path, files=(path,))
    if not isinstance(data, dict):
        raise err((), "the web config must be a mapping", "see the exporter toolkit's web-config format")
    for key in data:
        if key not in _TOP:
            raise err((key,), "unknown key", f"use {', '.join(sorted(_TOP))}")
    cfg = WebConfig(source=path)
    tls = data.get("tls_server_config")
    named: list[str] = []
    if tls:
        cfg.ssl_context = _ssl_context(tls, base, err, named)
    http = data.get("http_server_config") or {}
    if not isinstance(http, dict):
        raise err(("http_server_config",), "must be a mapping", "see the exporter toolkit's web-config format")
    headers = http.get("headers") or {}
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise err(("http_server_config", "headers"), "must map header names to strings", "quote the values")
    cfg.headers = {str(k): v for k, v in headers.items()}
    users = data.get("basic_auth_users") or {}
    if not isinstance(users, dict):
        raise err(("basic_auth_users",), "must map user names to bcrypt hashes", "write `name: $2b$...`")
    for user, hashed in users.items():
        if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise err(("basic_auth_users", user), "is not a bcrypt hash",
                      "generate one with `htpasswd -nBC 12 '' | tr -d ':\\n'` or python -c "
                      "\"import bcrypt; print(bcrypt.hashpw(b'secret', bcrypt.gensalt()).decode())\"")
        cfg.users[str(user)] = bcrypt_verifier(hashed.encode())
    cfg.files = (path, *named)
    return cfg


def _ssl_context(tls: Any, base: str, err: Callable[..., ConfigError], named: list[str]) -> ssl.SSLContext:
    k = ("tls_server_config",)
    if not isinstance(tls, dict):
        raise err(k, "must be a mapping", "give at least cert_file and key_file")

    def path_of(key: str) -> str | None:
        value = tls.get(key)
        if value is None:
            return None
        full = value if os.path.isabs(value) else os.path.join(base, value)
        if not os.path.isfile(full):
            raise err(k + (key,), f"file {full} does not exist", "give a readable PEM file")
        named.append(full)
        return full

    cert, key = path_of("cert_file"), path_of("key_file")
    if not cert or not key:
        raise err(k, "cert_file and key_file are both required", "give the server certificate and key (PEM)")
    try:
        ctx = server_context(cert, key)
    except TlsError as e:
        raise err(k + ("cert_file",), str(e), "check that key_file is the unencrypted private key of cert_file, "
                  "both PEM") from None
    ctx.minimum_version = _tls_version(tls, "min_version", "TLS12", err)
    if "max_version" in tls:
        ctx.maximum_version = _tls_version(tls, "max_version", "TLS13", err)
    auth = tls.get("client_auth_type", "NoClientCert")
    if auth in _UNSUPPORTED_CLIENT_AUTH:
        raise err(k + ("client_auth_type",), f"{auth} (a client certificate taken without verification) is not supported",
                  "use RequireAndVerifyClientCert or VerifyClientCertIfGiven with client_ca_file")
    if auth not in _CLIENT_AUTH:
        raise err(k + ("client_auth_type",), f"unknown value {auth!r}", f"use one of {', '.join(_CLIENT_AUTH)}")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    ca = path_of("client_ca_file")
    if ctx.verify_mode != ssl.CERT_NONE:
        if not ca:
            raise err(k + ("client_auth_type",), f"{auth} needs client_ca_file", "give the CA that signs client certificates")
        try:
            require_client_certificates(ctx, ctx.verify_mode, cafile=ca)
        except TlsError as e:
            raise err(k + ("client_ca_file",), str(e), "give the PEM file of the CA that signs client certificates") from None
    return ctx


def _tls_version(tls: dict, key: str, default: str, err) -> ssl.TLSVersion:
    value = tls.get(key, default)
    if value not in _TLS_VERSIONS:
        raise err(("tls_server_config", key), f"unknown TLS version {value!r}", f"use one of {', '.join(_TLS_VERSIONS)}")
    return _TLS_VERSIONS[value]
