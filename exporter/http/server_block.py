"""jmx_exporter 1.x's `httpServer:` block (basic auth and TLS of its HTTP server) -> `WebConfig`,
the same object the Prometheus web-config file gives, so one implementation serves both.

    httpServer:
      authentication:
        basic:
          username: prometheus          # ${VAR}: from the environment (jmx_exporter 1.5+)
          password: secret              # plaintext (the default algorithm); ${VAR} (1.4+)
          # or: algorithm: SHA-1 | SHA-256 | SHA-512, passwordHash: hex of H("<salt>:<password>"), salt
          # or: algorithm: PBKDF2WithHmacSHA1 | ...SHA256 | ...SHA512, passwordHash, salt,
          #     iterations (default 1,300,000 | 600,000 | 210,000), keyLength
      ssl:
        keyStore: {filename: server.p12, password: changeit, type: PKCS12}   # JKS, PKCS12, JCEKS
        certificate: {alias: server}
        # or (jmx_exporter 1.7): pem: {certificate: {filename: server.crt},
        #                              privateKey: {filename: server.key, password: ...}}
        mutualTLS: true                 # 1.3+: client certificates signed by the trust store's
        trustStore: {filename: ca.p12, password: changeit}
        protocols: TLSv1.3,TLSv1.2      # 1.3+, Java names
        ciphers: TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,...   # 1.3+, Java (IANA) names

What jmx_exporter checks (blank values, algorithm names, hash lengths) is checked here at load,
with the file, line and key. Relative file names are relative to the working directory, as in
jmx_exporter (Java resolves them so). jmx_exporter falls back to the JVM system properties
javax.net.ssl.keyStore/keyStorePassword/trustStore/... when a key store value is missing; the
sidecar's HTTP server has no JVM whose properties could apply, so those values are required.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import ssl
from typing import Any

from kafka_jmx_sidecar.exporter.http import key_store
from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile, kind
from kafka_jmx_sidecar.exporter.base.java_text import java_str
from kafka_jmx_sidecar.exporter.http.basic_auth import Verifier
from kafka_jmx_sidecar.exporter.http.config_keys import HTTP_SERVER
from kafka_jmx_sidecar.exporter.http.web_config import TlsError, WebConfig, require_client_certificates, server_context, \
    server_context_from_pem

KEY = "httpServer"
# What jmx_exporter's com.sun.net.httpserver.BasicAuthenticator (realm "/", UTF-8) sends with a 401.
CHALLENGE = 'Basic realm="/", charset="UTF-8"'
SHA = {"SHA-1": "sha1", "SHA-256": "sha256", "SHA-512": "sha512"}
# jmx_exporter's default iterations per algorithm (OWASP's recommendations).
PBKDF2 = {"PBKDF2WithHmacSHA1": ("sha1", 1_300_000), "PBKDF2WithHmacSHA256": ("sha256", 600_000),
          "PBKDF2WithHmacSHA512": ("sha512", 210_000)}
DEFAULT_KEY_LENGTH = 128
_TLS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1.2": ssl.TLSVersion.TLSv1_2,
        "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_KNOWN = {block.path[1:]: set(block.names) for block in HTTP_SERVER.walk()}  # the keys of each mapping (config_keys.py)


def read_http_server_block(file: ConfigFile) -> tuple[WebConfig | None, list[str], list[str]]:
    """The `httpServer` block of the jmx_exporter file as a WebConfig (None when the block
    configures neither TLS nor basic auth), warnings for keys that change nothing, and which of
    them are mistakes (unknown keys: `check-config` refuses them)."""
    if not isinstance(file.data, dict) or file.data.get(KEY) is None:
        return None, [], []
    block = _Block(file)
    return block.parse(file.data[KEY]), block.warnings, block.mistakes


def pbkdf2_hex(algorithm: str, password: str, salt: str, iterations: int, key_bytes: int) -> str:
    """jmx_exporter's PBKDF2 passwordHash: lowercase hex of PBKDF2(password, UTF-8 salt)."""
    return hashlib.pbkdf2_hmac(PBKDF2[algorithm][0], password.encode(), salt.encode(), iterations, key_bytes).hex()


def sha_hex(algorithm: str, password: str, salt: str) -> str:
    """jmx_exporter's SHA passwordHash: lowercase hex of H("<salt>:<password>")."""
    return hashlib.new(SHA[algorithm], f"{salt}:{password}".encode()).hexdigest()


class _Block:
    def __init__(self, file: ConfigFile):
        self.file = file
        self.warnings: list[str] = []
        self.mistakes: list[str] = []

    # --- reporting (`keys` are inside the block)
    def error(self, keys: tuple, problem: str, fix: str) -> ConfigError:
        return self.file.error((KEY,) + keys, problem, fix)

    def warn(self, keys: tuple, message: str) -> None:
        self.warnings.append(self.file.warning((KEY,) + keys, message))

    # --- typed getters (jmx_exporter's ConvertToString / ValidateStringIsNotBlank / ConvertToInteger)
    def mapping(self, value: Any, keys: tuple) -> dict:
        if not isinstance(value, dict):
            raise self.error(keys, f"must be a mapping, not {kind(value)}", "write the keys under it, indented")
        known = _KNOWN.get(keys, set())
        for k in value:
            if k not in known:
                self.warn(keys + (k,), f"unknown key, ignored (known here: {', '.join(sorted(known))})")
                self.mistakes.append(self.warnings[-1])
        return value

    def string(self, d: dict, keys: tuple, required: str | None = None) -> str | None:
        value = d.get(keys[-1])
        if value is None:
            if required is not None:
                raise self.error(keys, "is required" if keys[-1] in d else "is missing", required)
            return None
        if isinstance(value, (dict, list)):
            raise self.error(keys, f"must be a text value, not {kind(value)}", "write a single value")
        text = java_str(value)
        if not text.strip():
            raise self.error(keys, "must not be blank", required or "write a value or remove the key")
        return text

    def secret(self, d: dict, keys: tuple, required: str | None = None) -> str | None:
        """A value that may be `${NAME}`: jmx_exporter 1.4+ reads it from environment variable NAME
        (trimmed; unset or blank is an error)."""
        text = self.string(d, keys, required)
        return None if text is None else self.file.variable((KEY,) + keys, text, trim=True)

    def integer(self, d: dict, keys: tuple, minimum: int, default: int | None = None) -> int:
        value = d.get(keys[-1])
        if value is None:
            if default is None:
                raise self.error(keys, "is missing", f"write a whole number >= {minimum}")
            return default
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(keys, f"must be a whole number, not {value!r}", f"write a whole number >= {minimum}")
        if value < minimum:
            raise self.error(keys, f"must be {minimum} or more, not {value}", f"write a whole number >= {minimum}")
        return value

    # --- the block
    def parse(self, block: Any) -> WebConfig | None:
        block = self.mapping(block, ())
        users: dict[str, Verifier] = {}
        if block.get("authentication") is not None:
            users = self.authentication(self.mapping(block["authentication"], ("authentication",)))
        context = self.ssl(self.mapping(block["ssl"], ("ssl",))) if block.get("ssl") is not None else None
        if block.get("threads") is not None:
            self.threads(self.mapping(block["threads"], ("threads",)))
        if block.get("metrics") is not None:
            path = self.string(self.mapping(block["metrics"], ("metrics",)), ("metrics", "path"),
                               "write path: /metrics or remove metrics:")
            if path != "/metrics":
                self.warn(("metrics", "path"), f"ignored: the sidecar serves its metrics at /metrics, not {path}")
        if not users and context is None:
            return None
        return WebConfig(source=self.file.where((KEY,)), ssl_context=context, users=users, challenge=CHALLENGE,
                         challenge_any_scheme=False)

    def authentication(self, auth: dict) -> dict[str, Verifier]:
        k = ("authentication",)
        if "plugin" in auth:
            raise self.error(k + ("plugin",), "a Java authenticator class cannot run in the sidecar",
                             "use authentication.basic, or client certificates (ssl.mutualTLS)")
        if auth.get("basic") is None:
            raise self.error(k, "basic is missing", "write basic: with username and password (or passwordHash)")
        basic = self.mapping(auth["basic"], k + ("basic",))
        k += ("basic",)
        username = self.secret(basic, k + ("username",), "write the user name Prometheus sends")
        algorithm = self.string(basic, k + ("algorithm",)) or "plaintext"
        if algorithm.lower() == "plaintext":  # jmx_exporter compares this one ignoring case
            password = self.secret(basic, k + ("password",),
                                   "write the password (for a hashed one, also set algorithm, passwordHash and salt)")
            expected = password.encode()
            return {username: Verifier(b"plaintext:" + hashlib.sha256(expected).digest(),
                                       lambda given: hmac.compare_digest(given.encode(), expected))}
        if algorithm not in SHA and algorithm not in PBKDF2:
            raise self.error(k + ("algorithm",), f"unsupported algorithm {algorithm!r}",
                             f"use plaintext, {', '.join(SHA)} or {', '.join(PBKDF2)} (spelled exactly so)")
        fix = "write the lowercase or uppercase hex of the hash, with or without colons between bytes"
        hashed = self.string(basic, k + ("passwordHash",), fix)
        salt = self.string(basic, k + ("salt",), "write the salt the hash was made with")
        digits = hashed.lower().replace(":", "")
        if any(c not in "0123456789abcdef" for c in digits):
            raise self.error(k + ("passwordHash",), "is not hexadecimal", fix)
        if algorithm in SHA:
            return {username: self._sha_verifier(algorithm, digits, salt, k)}
        return {username: self._pbkdf2_verifier(algorithm, digits, salt, basic, k)}

    def _sha_verifier(self, algorithm: str, digits: str, salt: str, k: tuple) -> Verifier:
        size = hashlib.new(SHA[algorithm]).digest_size * 2
        if len(digits) > size:
            raise self.error(k + ("passwordHash",), f"has {len(digits)} hex digits; {algorithm} gives {size}",
                             f"write the {algorithm} hash of \"<salt>:<password>\"")

        def verify(password: str) -> bool:
            full = sha_hex(algorithm, password, salt)
            # jmx_exporter up to 1.x wrote the digest as a number (leading zeros dropped) and later
            # releases in full: a hash made for either matches.
            return hmac.compare_digest(digits, full) or hmac.compare_digest(digits, full.lstrip("0") or "0")

        return Verifier(f"{algorithm}:{digits}:{salt}".encode(), verify)

    def _pbkdf2_verifier(self, algorithm: str, digits: str, salt: str, basic: dict, k: tuple) -> Verifier:
        iterations = self.integer(basic, k + ("iterations",), 1, PBKDF2[algorithm][1])
        key_length = self.integer(basic, k + ("keyLength",), 1, DEFAULT_KEY_LENGTH)
        if len(digits) % 2:
            raise self.error(k + ("passwordHash",), f"has an odd number of hex digits ({len(digits)})",
                             "write every byte of the hash as two hex digits")
        size = len(digits) // 2
        # jmx_exporter 1.0 derives keyLength BYTES; its documentation (and later releases) speak of
        # bits. The hash's own length says which was meant; any other length could never match.
        if size not in (key_length, key_length / 8):
            raise self.error(k + ("passwordHash",),
                             f"has {size} bytes, but keyLength {key_length} means {key_length} bytes "
                             f"(jmx_exporter 1.0) or {key_length // 8} (bits, later releases)",
                             "make the hash with the same keyLength, or set keyLength to the hash's length")
        expected = bytes.fromhex(digits)

        def verify(password: str) -> bool:
            return hmac.compare_digest(bytes.fromhex(pbkdf2_hex(algorithm, password, salt, iterations, size)), expected)

        return Verifier(f"{algorithm}:{digits}:{salt}:{iterations}".encode(), verify)

    def threads(self, threads: dict) -> None:
        """Validated as jmx_exporter does, then unused: the sidecar answers each connection in a
        thread of its own from a ready-made response, so a pool size changes nothing."""
        k = ("threads",)
        minimum = self.integer(threads, k + ("minimum",), 0)
        maximum = self.integer(threads, k + ("maximum",), 1)
        self.integer(threads, k + ("keepAliveTime",), 1)
        if maximum < minimum:
            raise self.error(k + ("maximum",), f"{maximum} is less than minimum {minimum}", "raise maximum")

    # --- TLS
    def ssl(self, s: dict) -> ssl.SSLContext:
        k = ("ssl",)
        pem = s.get("pem")
        if pem is not None and s.get("keyStore") is not None:
            raise self.error(k + ("pem",), "pem and keyStore are both set (jmx_exporter: mutually exclusive)",
                             "keep one of them")
        ctx = self._pem(self.mapping(pem, k + ("pem",))) if pem is not None else self._key_store(s)
        if self._mutual_tls(s):
            trust = s.get("trustStore")
            fix = ("set ssl.trustStore.filename and password: the store of the CA certificates that sign "
                   "client certificates (jmx_exporter's javax.net.ssl.trustStore fallback has no equivalent here)")
            if trust is None:
                raise self.error(k + ("mutualTLS",), "mutualTLS is true but trustStore is missing", fix)
            trust = self.mapping(trust, k + ("trustStore",))
            t = k + ("trustStore",)
            filename = self._file(trust, t + ("filename",), fix)
            password = self.secret(trust, t + ("password",), fix)
            try:
                cadata = key_store.read_trusted_certificates(filename, password, self._store_type(trust, t))
                require_client_certificates(ctx, ssl.CERT_REQUIRED, cadata=cadata)
            except (key_store.KeyStoreError, TlsError) as e:
                raise self.error(t + ("password" if "password" in str(e) else "filename",),
                                 f"cannot read the trust store {filename}: {e}",
                                 "check the file, its type and its password") from None
        elif s.get("trustStore") is not None:
            self.warn(k + ("trustStore",), "ignored: it serves client certificates, and mutualTLS is not true")
        self._protocols(ctx, s)
        self._ciphers(ctx, s)
        return ctx

    def _file(self, d: dict, keys: tuple, fix: str) -> str:
        name = self.string(d, keys, fix)
        full = os.path.abspath(name)
        if not os.path.isfile(full):
            raise self.error(keys, f"file {full} does not exist" + ("" if os.path.isabs(name) else
                             f" ({name} is relative to the working directory {os.getcwd()})"),
                             "give the path of a readable file")
        return full

    def _store_type(self, d: dict, keys: tuple) -> str | None:
        store_type = self.string(d, keys + ("type",))
        if store_type is not None and store_type.upper() not in key_store.STORE_TYPES:
            raise self.error(keys + ("type",), f"unsupported key store type {store_type!r}",
                             f"use {', '.join(key_store.STORE_TYPES)}, or leave it out (the type is then detected)")
        return store_type

    def _pem(self, pem: dict) -> ssl.SSLContext:
        k = ("ssl", "pem")
        cert_d = self.mapping(pem.get("certificate"), k + ("certificate",)) if pem.get("certificate") is not None else {}
        key_d = self.mapping(pem.get("privateKey"), k + ("privateKey",)) if pem.get("privateKey") is not None else {}
        cert = self._file(cert_d, k + ("certificate", "filename"), "give the PEM certificate (chain) file")
        key = self._file(key_d, k + ("privateKey", "filename"), "give the PEM private key file")
        password = self.secret(key_d, k + ("privateKey", "password"))
        try:
            return server_context(cert, key, password)
        except TlsError as e:
            where = "password" if "encrypted" in str(e) and password is None else "filename"
            raise self.error(k + ("privateKey", where), str(e),
                             "give the private key of the certificate (PKCS#8 or traditional RSA/EC PEM) "
                             "and its password if it is encrypted") from None

    def _key_store(self, s: dict) -> ssl.SSLContext:
        k = ("ssl", "keyStore")
        fix = ("set ssl.keyStore.filename and ssl.keyStore.password (jmx_exporter's fallback to the "
               "javax.net.ssl.keyStore system properties has no equivalent here), or use ssl.pem")
        if s.get("keyStore") is None:
            raise self.error(("ssl",), "keyStore is missing", fix)
        ks = self.mapping(s["keyStore"], k)
        filename = self._file(ks, k + ("filename",), fix)
        password = self.secret(ks, k + ("password",), fix)
        store_type = self._store_type(ks, k)
        cert = self.mapping(s["certificate"], ("ssl", "certificate")) if s.get("certificate") is not None else {}
        alias = self.string(cert, ("ssl", "certificate", "alias"), "write the alias of the server's key entry "
                            "(keytool -list shows the aliases)")
        try:
            identity = key_store.read_identity(filename, password, alias, store_type)
        except key_store.KeyStoreError as e:
            text = str(e)
            keys = (("ssl", "certificate", "alias") if "Alias" in text or "no private key" in text
                    else k + ("password",) if "password" in text else k + ("filename",))
            raise self.error(keys, f"cannot use the key store {filename}: {e}",
                             "check the file, its type, its password and the alias") from None
        if identity.alias and identity.alias != alias:
            # jmx_exporter 1.0 keeps only the entry whose alias equals this text exactly
            raise self.error(("ssl", "certificate", "alias"),
                             f"certificate alias [{alias}] not found in the key store {filename}, which spells it "
                             f"{identity.alias!r} (jmx_exporter compares aliases exactly)",
                             f"write alias: {identity.alias}")
        try:
            return server_context_from_pem(identity.cert_chain_pem, identity.key_pem, identity.key_password)
        except TlsError as e:
            raise self.error(k + ("filename",), str(e), "check the key entry of the store") from None

    def _mutual_tls(self, s: dict) -> bool:
        value = s.get("mutualTLS")
        if value is None or isinstance(value, bool):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise self.error(("ssl", "mutualTLS"), f"must be true or false, not {value!r}", "write true or false")

    def _list(self, s: dict, key: str) -> list[str]:
        text = self.string(s, ("ssl", key))
        return [p.strip() for p in text.split(",") if p.strip()] if text is not None else []

    def _protocols(self, ctx: ssl.SSLContext, s: dict) -> None:
        names = [n for n in self._list(s, "protocols") if n != "SSLv2Hello"]  # Java's hello format, no protocol
        if not names:
            return
        unknown = [n for n in names if n not in _TLS]
        if unknown:
            raise self.error(("ssl", "protocols"), f"unknown or unsupported protocol(s) {', '.join(unknown)}",
                             f"use {', '.join(_TLS)}, separated by commas")
        order = list(_TLS)
        chosen = sorted({order.index(n) for n in names})
        if chosen != list(range(chosen[0], chosen[-1] + 1)):
            raise self.error(("ssl", "protocols"), f"{', '.join(names)} leave a gap",
                             "list consecutive versions (for example TLSv1.2,TLSv1.3)")
        ctx.minimum_version, ctx.maximum_version = _TLS[order[chosen[0]]], _TLS[order[chosen[-1]]]

    def _ciphers(self, ctx: ssl.SSLContext, s: dict) -> None:
        names = self._list(s, "ciphers")
        if not names:
            return
        table = _openssl_cipher_names()
        tls13 = [n for n in names if n in _TLS13_SUITES]
        tls12 = [n for n in names if n not in _TLS13_SUITES]
        unknown = [n for n in tls12 if n not in table]
        if unknown:
            raise self.error(("ssl", "ciphers"), f"cipher suite(s) unknown to this OpenSSL: {', '.join(unknown)}",
                             "use Java (IANA) names such as TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
        try:
            if tls12:
                ctx.set_ciphers(":".join(table[n] for n in tls12))
        except ssl.SSLError as e:
            raise self.error(("ssl", "ciphers"), f"OpenSSL refuses them ({e.reason or e})", "choose other suites") from None
        if not tls12 and ctx.minimum_version < ssl.TLSVersion.TLSv1_3:
            ctx.minimum_version = ssl.TLSVersion.TLSv1_3  # only TLS 1.3 suites: TLS 1.2 has none left
        if not tls13 and ctx.maximum_version != ssl.TLSVersion.TLSv1_2 and ctx.minimum_version <= ssl.TLSVersion.TLSv1_2:
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2  # no TLS 1.3 suite listed: Java would not offer 1.3
        elif tls13 and set(tls13) != set(_TLS13_SUITES):
            self.warn(("ssl", "ciphers"), "Python's ssl cannot narrow TLS 1.3 suites: all of "
                      f"{', '.join(_TLS13_SUITES)} stay enabled")


_TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256")
_KX = {"kx-ecdhe": "ECDHE", "kx-dhe": "DHE", "kx-rsa": "RSA"}
_AUTH = {"auth-rsa": "RSA", "auth-ecdsa": "ECDSA", "auth-dss": "DSS", "auth-null": "anon"}


def _openssl_cipher_names() -> dict[str, str]:
    """Java (IANA) cipher suite name -> OpenSSL name, for the TLS 1.2 suites this OpenSSL has,
    built from what OpenSSL says of each suite (key exchange, authentication, cipher, MAC)."""
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    probe.set_ciphers("ALL:@SECLEVEL=0")
    out: dict[str, str] = {}
    for c in probe.get_ciphers():
        kx, auth, name = _KX.get(c.get("kea")), _AUTH.get(c.get("auth")), c["name"]
        if kx is None or auth is None or c["protocol"] == "TLSv1.3":
            continue
        if kx == "RSA":
            who = "RSA"
        elif auth == "anon":
            who = f"{'ECDH' if kx == 'ECDHE' else 'DH'}_anon"
        else:
            who = f"{kx}_{auth}"
        cipher = c["symmetric"].upper().replace("-", "_")          # AES_256_GCM, CHACHA20_POLY1305
        if cipher.endswith("_CCM") and name.endswith("CCM8"):
            cipher += "_8"
        if c.get("digest"):                                          # CBC: the HMAC
            mac = {"sha1": "SHA", "sha256": "SHA256", "sha384": "SHA384"}.get(c["digest"])
        elif "CCM" in cipher:
            mac = ""
        else:                                                        # AEAD: the PRF's hash
            mac = "SHA384" if name.endswith("SHA384") else "SHA256"
        if mac is None:
            continue
        out[f"TLS_{who}_WITH_{cipher}" + (f"_{mac}" if mac else "")] = name
    return out

