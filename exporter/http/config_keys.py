"""The keys of /metrics' TLS and basic auth, in the two formats the sidecar reads: the Prometheus
web-config file (WEB_CONFIG, read by web_config.py: any other key is refused, and the
exporter-toolkit keys it does not implement are refused with what to do instead) and jmx_exporter
1.x's `httpServer:` block (HTTP_SERVER, read by server_block.py: an unknown key is a warning, which
`check-config` refuses). The checks of each value stay with its parser; these say which keys exist
and what they do, for the parsers, the reference and the JSON Schema.
"""
from __future__ import annotations

from kafka_jmx_sidecar.exporter.base.definitions import (FLAG, RESTART, WATCHED, Block, Key, choice, custom, text,
                                                         text_list, whole)

# The headers the toolkit lets a web-config set, with their allowed values (None: any).
HEADERS = {"Strict-Transport-Security": None, "X-Content-Type-Options": ("nosniff",),
           "X-Frame-Options": ("deny", "sameorigin"), "X-XSS-Protection": None, "Content-Security-Policy": None}
_NAMES = text_list("a list of names", non_empty=True)
_FILE = text("a file name")
_REFUSED = custom("refused", lambda v: True, {})

TLS_SERVER = Block(("tls_server_config",), "TLS of /metrics (relative paths: from the web-config file's folder).", keys=(
    Key("cert_file", _FILE, "The server certificate (chain), PEM.", required=True),
    Key("key_file", _FILE, "Its private key, PEM, unencrypted.", required=True),
    Key("client_auth_type", choice("NoClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"),
        "Whether clients must show a certificate signed by client_ca_file.", default="NoClientCert"),
    Key("client_ca_file", _FILE, "The CA certificates (PEM) that sign client certificates."),
    Key("client_allowed_sans", _NAMES, "A client certificate must carry one of these SANs (with "
        "RequireAndVerifyClientCert)."),
    Key("min_version", choice("TLS12", "TLS13"), "The lowest TLS version offered.", default="TLS12"),
    Key("max_version", choice("TLS12", "TLS13"), "The highest TLS version offered.", default="TLS13"),
    Key("cipher_suites", _NAMES, "TLS 1.2 cipher suites, by Go's names, in the server's order of preference."),
    Key("curve_preferences", _NAMES, "The key exchange curve (one: CurveP256, CurveP384, CurveP521 or X25519)."),
    Key("prefer_server_cipher_suites", FLAG, "The server's order of cipher_suites wins over the client's.",
        default=True),
), refused={
    "cert": "write the PEM certificate to a file and name it with cert_file",
    "key": "write the PEM key to a file and name it with key_file",
    "client_ca": "write the PEM CA certificates to a file and name it with client_ca_file",
})
HTTP_SERVER_CONFIG = Block(("http_server_config",), "HTTP of /metrics.", keys=(
    Key("headers", custom("a mapping of header names to values", lambda v: True, {
        "type": "object", "additionalProperties": False,
        "properties": {name: {"type": "string", **({"enum": list(allowed)} if allowed else {})}
                       for name, allowed in HEADERS.items()}}),
        f"Headers added to every answer: {', '.join(HEADERS)}."),
    Key("http2", FLAG, "Must be false: the sidecar speaks HTTP/1.1 only.", default=False),
))
WEB_CONFIG = Block((), "A file of its own, in the Prometheus exporter-toolkit format, named by --web.config.file "
                   "or sidecar.webConfigFile: TLS and basic auth of /metrics. Any key not listed is refused; "
                   "relative paths are relative to the file.", keys=(
    Key("tls_server_config", None, "TLS of /metrics.", block=TLS_SERVER),
    Key("http_server_config", None, "HTTP of /metrics.", block=HTTP_SERVER_CONFIG),
    Key("basic_auth_users", custom("a mapping of user names to bcrypt hashes", lambda v: True,
                                   {"type": "object", "additionalProperties": {"type": "string"}}),
        "Users allowed to scrape, each with the bcrypt hash of its password."),
), refused={
    "rate_limit": "remove it: the sidecar bounds connections and concurrent answers itself "
                  "(docs/security.md, 'The HTTP server on an open network')",
}, reload=WATCHED, example="""\
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS12
http_server_config:
  headers: {X-Frame-Options: deny}
basic_auth_users:
  prometheus: $2b$12$SIAijP8FRI0OOW1LHcmgl.ZANBeQ8Z2Z.F8bmlEntewg7FvhVIXFe   # bcrypt of changeit
""")


def _store(path: tuple, what: str) -> Block:
    return Block(path, what, keys=(
        Key("filename", _FILE, "The store's file (relative: from the working directory).", required=True),
        Key("password", text(), "Its password; ${NAME}: from the environment.", required=True),
        Key("type", choice("JKS", "PKCS12", "JCEKS"), "Its type.", default_doc="detected from the file"),
    ))


_K = ("httpServer",)
_BASIC = Block(_K + ("authentication", "basic"), "One user, its password in plain text or hashed.", keys=(
    Key("username", text(), "The user name Prometheus sends; ${NAME}: from the environment.", required=True),
    Key("password", text(), "The password (algorithm plaintext); ${NAME}: from the environment."),
    Key("algorithm", choice("plaintext", "SHA-1", "SHA-256", "SHA-512", "PBKDF2WithHmacSHA1", "PBKDF2WithHmacSHA256",
                            "PBKDF2WithHmacSHA512"), "How passwordHash was made.", default="plaintext"),
    Key("passwordHash", text(), "Hex of the hash: H(\"<salt>:<password>\") or PBKDF2's."),
    Key("salt", text(), "The salt the hash was made with."),
    Key("iterations", whole(1), "PBKDF2's iterations.", default_doc="1,300,000 | 600,000 | 210,000 per algorithm"),
    Key("keyLength", whole(1), "PBKDF2's key length.", default=128),
))
_AUTHENTICATION = Block(_K + ("authentication",), "Basic auth of /metrics.", keys=(
    Key("basic", None, "The user allowed to scrape.", block=_BASIC),
    Key("plugin", _REFUSED, "Not supported (a Java authenticator class cannot run in the sidecar): an error."),
))
_PEM_CERT = Block(_K + ("ssl", "pem", "certificate"), "The certificate (chain).", keys=(
    Key("filename", _FILE, "A PEM file.", required=True),))
_PEM_KEY = Block(_K + ("ssl", "pem", "privateKey"), "Its private key.", keys=(
    Key("filename", _FILE, "A PEM file (PKCS#8 or traditional).", required=True),
    Key("password", text(), "The password of an encrypted key; ${NAME}: from the environment."),
))
_SSL = Block(_K + ("ssl",), "TLS of /metrics.", keys=(
    Key("keyStore", None, "The server's key and certificate (or pem).",
        block=_store(_K + ("ssl", "keyStore"), "The key store.")),
    Key("certificate", None, "Which entry of the key store.",
        block=Block(_K + ("ssl", "certificate"), "The key entry of the store that serves.",
                    keys=(Key("alias", text(), "The alias of the server's key entry.", required=True),))),
    Key("pem", None, "The server's certificate and key as PEM files (jmx_exporter 1.7), instead of keyStore.",
        block=Block(_K + ("ssl", "pem"), "The server's certificate and key as PEM files.", keys=(
            Key("certificate", None, "The certificate.", block=_PEM_CERT),
            Key("privateKey", None, "The key.", block=_PEM_KEY)))),
    Key("mutualTLS", FLAG, "Clients must show a certificate signed by a CA of trustStore.", default=False),
    Key("trustStore", None, "The CAs of client certificates (with mutualTLS).",
        block=_store(_K + ("ssl", "trustStore"), "The trust store.")),
    Key("protocols", text("Java names separated by commas"), "The TLS versions offered, such as TLSv1.3,TLSv1.2."),
    Key("ciphers", text("Java names separated by commas"), "The cipher suites offered."),
))
HTTP_SERVER = Block(_K, "jmx_exporter 1.x's HTTP server settings: TLS and basic auth of /metrics (instead of a "
                    "web-config file).", keys=(
    Key("authentication", None, "Basic auth.", block=_AUTHENTICATION),
    Key("ssl", None, "TLS.", block=_SSL),
    Key("threads", None, "Checked as jmx_exporter checks them, then unused (each connection has a thread).",
        block=Block(_K + ("threads",), "jmx_exporter's thread pool.", keys=(
            Key("minimum", whole(0), "Pool minimum."), Key("maximum", whole(1), "Pool maximum."),
            Key("keepAliveTime", whole(1), "Seconds an idle thread lives."),))),
    Key("metrics", None, "Where metrics are served: only /metrics.",
        block=Block(_K + ("metrics",), "The path metrics are served at.", keys=(Key("path", text(), "Must be /metrics."),))),
), reload=RESTART, example="""\
httpServer:
  authentication:
    basic:
      username: prometheus
      password: ${METRICS_PASSWORD}
  ssl:
    keyStore:
      filename: /etc/sidecar/server.p12
      password: ${KEYSTORE_PASSWORD}
    certificate:
      alias: server
""")
