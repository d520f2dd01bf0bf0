"""TLS and basic auth for /metrics, configured with the Prometheus exporter web-config file
(`--web.config.file`), the format node_exporter and the other Prometheus exporters read:

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # or NoClientCert, VerifyClientCertIfGiven
      client_ca_file: ca.crt
      client_allowed_sans: [prometheus.monitoring.svc]  # the client certificate must carry one
      min_version: TLS12        # TLS12 or TLS13; max_version too
      cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]   # Go names, TLS 1.2 only (as in Go)
      curve_preferences: [CurveP384]   # one curve: Python's ssl sets no list
      prefer_server_cipher_suites: true
    http_server_config:
      headers: {X-Frame-Options: deny}
      http2: false              # HTTP/1.1 only: `true` is refused
    basic_auth_users:
      prometheus: $2b$12$...   # bcrypt hash (htpasswd -nBC 12 "" | tr -d ':\\n'), checked whole (basic_auth.py)

Relative paths are relative to the web-config file, as in the exporter toolkit. It fails closed:
a key this sidecar does not honour exactly (an unknown one, an exporter-toolkit one not
implemented, a value it cannot apply as Go would) is an error naming file, line and key, never
ignored. The running sidecar re-reads the file when it changes (web_config_reload.py).
"""
from __future__ import annotations

import ipaddress
import os
import ssl
from dataclasses import dataclass, field
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile
from kafka_jmx_sidecar.exporter.http.config_keys import HEADERS, WEB_CONFIG
from kafka_jmx_sidecar.exporter.http.basic_auth import Verdicts, Verifier, read_users

_CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_UNSUPPORTED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")
_TLS_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
_OLD_TLS = ("TLS10", "TLS11")  # the toolkit's too; OpenSSL 3 negotiates them only at security level 0
# Every key read, per mapping, and the exporter-toolkit keys refused with what to do instead
# (config_keys.py); anything else is refused.
_KEYS = {block.path: block.names for block in WEB_CONFIG.walk()}
_TOOLKIT_ONLY = {block.path + (key,): fix for block in WEB_CONFIG.walk() for key, fix in block.refused.items()}
# Go's names (tls.CipherSuites()) -> OpenSSL's, for TLS 1.2 and below.
_CIPHERS = {
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA", "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256", "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
# TLS 1.3 suites: Go accepts their names and, as OpenSSL here, never restricts them.
_TLS13_CIPHERS = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
_CURVES = {"CurveP256": "prime256v1", "CurveP384": "secp384r1", "CurveP521": "secp521r1", "X25519": "X25519"}


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


@dataclass
class WebConfig:
    source: str | None = None
    ssl_context: ssl.SSLContext | None = None
    users: dict[str, Verifier] = field(default_factory=dict)  # user name -> checks a password
    headers: dict[str, str] = field(default_factory=dict)
    challenge: str = 'Basic realm="kafka-jmx-sidecar"'  # the WWW-Authenticate of a 401
    challenge_any_scheme: bool = True  # also when the request sent another scheme than Basic
    files: tuple[str, ...] = ()  # what it was read from (the file, its certificate, key and CA): watched for changes
    client_allowed_sans: tuple[str, ...] = ()  # a verified client certificate must carry one of them
    verdicts: Verdicts = field(default_factory=Verdicts, repr=False)  # kept across reloads (web_config_reload.py)

    def authorized(self, username: str | None, password: str | None) -> bool:
        known = self.remembered(username, password)
        return known if known is not None else self.verify(username, password)

    def remembered(self, username: str | None, password: str | None) -> bool | None:
        """The verdict on these credentials without hashing anything, or None when they must be
        verified. bcrypt and PBKDF2 cost tens of milliseconds to seconds by design; a scraper sends
        the same credentials every time, so a checked pair is remembered, right or wrong, as
        jmx_exporter and the exporter toolkit do (basic_auth.Verdicts)."""
        if not self.users:
            return True
        if username is None or password is None:
            return False
        return self.verdicts.get(self.verdict_key(username, password))

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
        self.verdicts.put(self.verdict_key(username, password), ok)
        return ok

    def verdict_key(self, username: str, password: str) -> bytes:
        check = self.users.get(username)
        return self.verdicts.key(username, check.identity if check is not None else b"", password)

    def client_refused(self, peercert: dict | None) -> str | None:
        """Why a client whose certificate was verified in the TLS handshake may not go on (None:
        it may). As the toolkit's VerifyPeerCertificate: one of the certificate's DNS names,
        email addresses, IP addresses (in Go's spelling) or URIs equals an allowed SAN exactly."""
        if not self.client_allowed_sans:
            return None
        if not peercert:
            return "no verified client certificate to match against client_allowed_sans"
        found = certificate_sans(peercert)
        if any(san in self.client_allowed_sans for san in found):
            return None
        return f"the client certificate's SANs {found} are none of client_allowed_sans"


def certificate_sans(peercert: dict) -> list[str]:
    """The SANs of a certificate (as ssl's getpeercert() gives it) spelled as Go's x509 does."""
    out = []
    for kind, value in peercert.get("subjectAltName", ()):
        if kind in ("DNS", "email", "URI"):
            out.append(value)
        elif kind == "IP Address":
            # OpenSSL writes IPv6 in full (0:0:0:0:0:0:0:1); Go's net.IP.String() compresses it
            # (::1) and writes an IPv4-mapped address as IPv4
            try:
                ip = ipaddress.ip_address(value.strip())
            except ValueError:
                continue
            out.append(str(ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip))
    return out


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
    _refuse_unknown_keys(data, err)
    cfg = WebConfig(source=path)
    tls = data.get("tls_server_config")
    named: list[str] = []
    if tls:
        cfg.ssl_context, cfg.client_allowed_sans = _ssl_context(tls, base, err, named)
    cfg.headers = _http_server_config(data.get("http_server_config"), err)
    cfg.users = read_users(data.get("basic_auth_users"), err)
    cfg.files = (path, *named)
    return cfg


def _refuse_unknown_keys(data: dict, err: Callable[..., ConfigError]) -> None:
    for parent, known in _KEYS.items():
        block = data.get(parent[0]) if parent else data
        if not isinstance(block, dict):
            continue  # a block of the wrong type is refused where it is read
        for key in block:
            where = parent + (key,)
            if where in _TOOLKIT_ONLY:
                raise err(where, "is an exporter-toolkit setting this sidecar does not implement", _TOOLKIT_ONLY[where])
            if key not in known:
                raise err(where, "unknown key", f"use {', '.join(known)}: anything else is refused")


def _http_server_config(http: Any, err: Callable[..., ConfigError]) -> dict[str, str]:
    k = ("http_server_config",)
    http = {} if http is None else http
    if not isinstance(http, dict):
        raise err(k, "must be a mapping", "see the exporter toolkit's web-config format")
    http2 = http.get("http2", False)
    if not isinstance(http2, bool):
        raise err(k + ("http2",), f"must be true or false, not {http2!r}", "write false or remove it")
    if http2:
        raise err(k + ("http2",), "HTTP/2 is not served here: the sidecar speaks HTTP/1.1 only",
                  "remove http2 or set it to false (Prometheus scrapes over HTTP/1.1)")
    headers = http.get("headers") or {}
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise err(k + ("headers",), "must map header names to strings", "quote the values")
    for name, value in headers.items():
        if name not in HEADERS:
            raise err(k + ("headers", name), "this HTTP header cannot be configured (as in the exporter toolkit)",
                      f"use {', '.join(HEADERS)}")
        allowed = HEADERS[name]
        if allowed is not None and value not in allowed:
            raise err(k + ("headers", name), f"{value!r} is not allowed", f"use one of {', '.join(allowed)}")
    return {str(name): value for name, value in headers.items()}


def _ssl_context(tls: Any, base: str, err: Callable[..., ConfigError],
                 named: list[str]) -> tuple[ssl.SSLContext, tuple[str, ...]]:
    k = ("tls_server_config",)
    if not isinstance(tls, dict):
        raise err(k, "must be a mapping", "give at least cert_file and key_file")

    def path_of(key: str) -> str | None:
        value = tls.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise err(k + (key,), f"must be a file name, not {value!r}", "give the path of a PEM file")
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
    ctx.maximum_version = _tls_version(tls, "max_version", "TLS13", err)
    if ctx.minimum_version > ctx.maximum_version:
        raise err(k + ("max_version",), f"is below min_version {tls.get('min_version')}", "raise max_version")
    _client_auth(ctx, tls, path_of("client_ca_file"), err)
    _cipher_suites(ctx, tls, err)
    _curve(ctx, tls, err)
    return ctx, _allowed_sans(ctx, tls, err)


def _client_auth(ctx: ssl.SSLContext, tls: dict, ca: str | None, err: Callable[..., ConfigError]) -> None:
    k = ("tls_server_config",)
    auth = tls.get("client_auth_type", "NoClientCert")
    if auth in _UNSUPPORTED_CLIENT_AUTH:
        raise err(k + ("client_auth_type",), f"{auth} (a client certificate taken without verification) is not supported",
                  "use RequireAndVerifyClientCert or VerifyClientCertIfGiven with client_ca_file")
    if auth not in _CLIENT_AUTH:
        raise err(k + ("client_auth_type",), f"unknown value {auth!r}", f"use one of {', '.join(_CLIENT_AUTH)}")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    if ctx.verify_mode == ssl.CERT_NONE:
        if ca:  # the toolkit's "client CA's have been configured without a Client Auth Policy"
            raise err(k + ("client_ca_file",), "is given but client_auth_type is NoClientCert, so no client "
                      "certificate would be asked for", "set client_auth_type: RequireAndVerifyClientCert, "
                      "or remove client_ca_file")
        return
    if not ca:
        raise err(k + ("client_auth_type",), f"{auth} needs client_ca_file", "give the CA that signs client certificates")
    try:
        require_client_certificates(ctx, ctx.verify_mode, cafile=ca)
    except TlsError as e:
        raise err(k + ("client_ca_file",), str(e), "give the PEM file of the CA that signs client certificates") from None


def _names(tls: dict, key: str, err: Callable[..., ConfigError]) -> list[str] | None:
    """A list of strings, or None when the key is absent or null (as Go's nil slice)."""
    value = tls.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise err(("tls_server_config", key), f"must be a list of names, not {value!r}", f"write {key}: [NAME, ...]")
    if not value:
        raise err(("tls_server_config", key), "is an empty list, which would allow nothing",
                  "list at least one, or remove the key")
    return value


def _cipher_suites(ctx: ssl.SSLContext, tls: dict, err: Callable[..., ConfigError]) -> None:
    k = ("tls_server_config", "cipher_suites")
    names = _names(tls, "cipher_suites", err)
    prefer = tls.get("prefer_server_cipher_suites", True)
    if not isinstance(prefer, bool):
        raise err(("tls_server_config", "prefer_server_cipher_suites"), f"must be true or false, not {prefer!r}",
                  "write true or false")
    if prefer:  # the server's order (that of cipher_suites) wins over the client's
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    if names is None:
        return
    for i, name in enumerate(names):
        if name not in _CIPHERS and name not in _TLS13_CIPHERS:
            raise err(k + (i,), f"unknown cipher suite {name!r}",
                      f"use Go's names: {', '.join(_CIPHERS)} (TLS 1.2); {', '.join(_TLS13_CIPHERS)} (TLS 1.3)")
    tls12 = [_CIPHERS[n] for n in names if n in _CIPHERS]
    if not tls12:  # as in Go: no TLS 1.2 suite left, only TLS 1.3 can be negotiated
        if ctx.maximum_version < ssl.TLSVersion.TLSv1_3:
            raise err(k, "lists only TLS 1.3 suites while max_version is below TLS13: no handshake could succeed",
                      "add TLS 1.2 suites or set max_version: TLS13")
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        return
    try:
        ctx.set_ciphers(":".join(tls12))
    except ssl.SSLError as e:
        raise err(k, f"OpenSSL refuses them ({e.reason or e})", "choose other suites") from None
    offered = {c["name"] for c in ctx.get_ciphers()}
    missing = [n for n in names if n in _CIPHERS and _CIPHERS[n] not in offered]
    if missing:
        raise err(k, f"this OpenSSL does not offer {', '.join(missing)}", "choose other suites")


def _curve(ctx: ssl.SSLContext, tls: dict, err: Callable[..., ConfigError]) -> None:
    k = ("tls_server_config", "curve_preferences")
    names = _names(tls, "curve_preferences", err)
    if names is None:
        return
    for i, name in enumerate(names):
        if name not in _CURVES:
            raise err(k + (i,), f"unknown curve {name!r}", f"use one of {', '.join(_CURVES)}")
    if len(set(names)) > 1:
        raise err(k, f"lists {len(set(names))} curves, but Python's ssl (this sidecar's TLS) can restrict the "
                  "key exchange to one curve only, not to a list", "list one curve, or remove the key")
    try:
        ctx.set_ecdh_curve(_CURVES[names[0]])
    except (ValueError, ssl.SSLError) as e:
        raise err(k, f"this OpenSSL cannot use {names[0]} ({e})", "choose another curve") from None


def _allowed_sans(ctx: ssl.SSLContext, tls: dict, err: Callable[..., ConfigError]) -> tuple[str, ...]:
    sans = _names(tls, "client_allowed_sans", err)
    if sans is None:
        return ()
    if ctx.verify_mode != ssl.CERT_REQUIRED:
        # as the toolkit: with no certificate required there may be nothing to match
        raise err(("tls_server_config", "client_allowed_sans"), "needs client_auth_type: RequireAndVerifyClientCert",
                  "set client_auth_type: RequireAndVerifyClientCert and client_ca_file, or remove client_allowed_sans")
    return tuple(sans)


def _tls_version(tls: dict, key: str, default: str, err: Callable[..., ConfigError]) -> ssl.TLSVersion:
    value = tls.get(key, default)
    if value in _OLD_TLS:
        raise err(("tls_server_config", key), f"{value} is not offered: this sidecar's OpenSSL negotiates TLS 1.0 "
                  "and 1.1 only at security level 0", "use TLS12 or TLS13")
    if value not in _TLS_VERSIONS:
        raise err(("tls_server_config", key), f"unknown TLS version {value!r}", f"use one of {', '.join(_TLS_VERSIONS)}")
    return _TLS_VERSIONS[value]
