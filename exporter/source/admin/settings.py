"""How the sidecar reaches the Kafka Admin API: bootstrap servers, TLS, SASL, timeouts.

`admin_settings` reads the `sidecar.admin` key of the configuration file, as every feature's
settings are read: `error(path, problem, fix)` makes the error that names the file, line and key.

Its keys: ADMIN, TLS and SASL below.

Passwords come from a file or an environment variable only, never from the configuration text
or the command line, and are read when the client connects (a rotated file is picked up by the
next connection). `Secret` holds where a password is, never the password.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from kafka_jmx_sidecar.exporter.base.definitions import FLAG, Block, Key, choice, custom, number, text

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
Error = Callable[..., Exception]  # error(path, problem, fix): the ConfigError naming file, line and key


class AdminConfigError(ValueError):
    """A password cannot be read when the client connects: `str()` names its key, the problem
    and the fix."""

    def __init__(self, key: str, problem: str, fix: str):
        self.key, self.problem, self.fix = key, problem, fix
        super().__init__(f"{key}: {problem}; {fix}")


@dataclass(frozen=True)
class Secret:
    """Where a password is: a file (its first line) or an environment variable."""

    key: str                # the setting it came from ("sidecar.admin.sasl.passwordFile")
    file: str | None = None
    env: str | None = None

    def reveal(self, environ: Mapping[str, str] | None = None) -> str:
        environ = os.environ if environ is None else environ
        if self.file:
            try:
                with open(self.file, encoding="utf-8") as f:
                    value = f.readline().rstrip("\r\n")
            except OSError as e:
                raise AdminConfigError(self.key, f"cannot read {self.file} ({e.strerror})",
                                       "mount the secret there or fix the path") from e
            if not value:
                raise AdminConfigError(self.key, f"{self.file} is empty", "write the password on its first line")
            return value
        value = environ.get(self.env or "")
        if not value:
            raise AdminConfigError(self.key, f"the environment variable {self.env} is unset or empty",
                                   f"set {self.env} in the sidecar's environment")
        return value


@dataclass(frozen=True)
class TlsSettings:
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    key_password: Secret | None = None
    check_hostname: bool = True


@dataclass(frozen=True)
class SaslSettings:
    mechanism: str
    username: str
    password: Secret


@dataclass(frozen=True)
class AdminSettings:
    bootstrap_servers: tuple[str, ...]
    security_protocol: str | None = None  # None: what `tls` and `sasl` imply
    client_id: str = "kafka-jmx-sidecar"
    request_timeout_seconds: float = 10.0
    log_dirs: bool = True
    tls: TlsSettings | None = None
    sasl: SaslSettings | None = None

    @property
    def protocol(self) -> str:
        if self.security_protocol:
            return self.security_protocol
        return ("SASL_" if self.sasl else "") + ("SSL" if self.tls else "PLAINTEXT")


def _host_port(address: Any) -> bool:
    if not isinstance(address, str):
        return False
    host, sep, port = address.strip().rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


def _check(s: AdminSettings, where: tuple, error: Error) -> AdminSettings:
    """What the keys say together, checked once each is read."""
    if s.protocol.startswith("SASL_") and s.sasl is None:
        raise error(where + ("sasl",), f"{s.protocol} needs a sasl block",
                    "add sasl: {mechanism, username, passwordFile}")
    if s.sasl is not None and not s.protocol.startswith("SASL_"):
        raise error(where + ("securityProtocol",), f"{s.protocol} does not use the sasl block",
                    "use SASL_PLAINTEXT or SASL_SSL, or remove the sasl block")
    if s.tls is not None and bool(s.tls.cert_file) != bool(s.tls.key_file):
        raise error(where + ("tls",), "certFile and keyFile go together (mutual TLS)",
                    "give both, or neither")
    return s


# --- the `sidecar.admin` keys ---------------------------------------------------------------

def _servers(v: Any) -> tuple[str, ...] | None:
    """bootstrapServers as written (a list, or one comma-separated text) -> addresses; None if not host:port."""
    items = [s.strip() for s in v.split(",") if s.strip()] if isinstance(v, str) else v
    ok = isinstance(items, list) and bool(items) and all(map(_host_port, items))
    return tuple(str(s).strip() for s in items) if ok else None


_PEM = text("a file path")
_PEM_FIX = "give the path of a PEM file"
_ENV = text("an environment variable name")
TLS = Block(("sidecar", "admin", "tls"), "TLS to the brokers (securityProtocol SSL or SASL_SSL).", keys=(
    Key("caFile", _PEM, "The CA certificates (PEM) the brokers' certificates are checked against.",
        default_doc="the system's CAs", fix=_PEM_FIX),
    Key("certFile", _PEM, "Client certificate (PEM), for mutual TLS; with keyFile.", fix=_PEM_FIX),
    Key("keyFile", _PEM, "The client certificate's private key (PEM).", fix=_PEM_FIX),
    Key("keyPasswordFile", _PEM, "A file whose first line is the private key's password.",
        fix="give a mounted secret file"),
    Key("keyPasswordEnv", _ENV, "Or: the environment variable holding it.", fix="give a variable name"),
    Key("checkHostname", FLAG, "Check that a broker's certificate names its host.", default=True,
        fix="write true or false"),
))
SASL = Block(("sidecar", "admin", "sasl"), "SASL authentication (securityProtocol SASL_PLAINTEXT or SASL_SSL); the "
             "password from a file or the environment only.", keys=(
    Key("mechanism", custom(", ".join(SASL_MECHANISMS), lambda v: str(v).upper() in SASL_MECHANISMS,
                            {"enum": [*SASL_MECHANISMS, *(m.lower() for m in SASL_MECHANISMS)]},
                            lambda v: str(v).upper(), problem=lambda v: f"{v!r} is not supported"),
        "The SASL mechanism.", required=True, fix=f"use one of {', '.join(SASL_MECHANISMS)}"),
    Key("username", text("a user name"), "The SASL user.", required=True, fix="give the SASL user name"),
    Key("passwordFile", _PEM, "A file whose first line is the password (read at each connection).",
        fix="give a mounted secret file"),
    Key("passwordEnv", _ENV, "Or: the environment variable holding it.", fix="give a variable name"),
), unknown_hint=lambda key: " (passwords come from a file or the environment only)" if "assword" in key else "")
ADMIN = Block(("sidecar", "admin"), "How the sidecar reaches the Kafka Admin API.", keys=(
    Key("bootstrapServers", custom("host:port addresses (a list, or separated by commas)",
                                   lambda v: _servers(v) is not None,
                                   {"type": ["string", "array"], "items": {"type": "string"}}, _servers),
        "The brokers' listeners to bootstrap from.", required=True,
        fix="list the brokers' listeners, e.g. kafka-0:9092,kafka-1:9092"),
    Key("securityProtocol", choice(*SECURITY_PROTOCOLS, problem=lambda v: f"unknown protocol {v!r}"),
        "The listener's protocol.", default_doc="what tls and sasl imply (PLAINTEXT without them)",
        fix=f"use one of {', '.join(SECURITY_PROTOCOLS)}"),
    Key("clientId", custom("a text value", lambda v: True, {"type": "string"}, str), "The client id the brokers "
        "see.", default="kafka-jmx-sidecar"),
    Key("requestTimeoutSeconds", number("seconds"), "Each request's timeout; a broker that does not answer is unknown.",
        default=10, fix="give a number of seconds such as 10"),
    Key("logDirs", FLAG, "DescribeLogDirs each poll (one request per broker; the reassignment series need it).",
        default=True, fix="write true or false"),
    Key("tls", None, "TLS to the brokers.", block=TLS),
    Key("sasl", None, "SASL authentication.", block=SASL),
), example="""\
sidecar:
  admin:
    bootstrapServers: kafka-0.kafka:9093,kafka-1.kafka:9093
    securityProtocol: SASL_SSL
    requestTimeoutSeconds: 10
    tls:
      caFile: /etc/kafka-ca/ca.crt
    sasl:
      mechanism: SCRAM-SHA-512
      username: sidecar
      passwordFile: /etc/sidecar/sasl-password
""")


def admin_settings(raw: Any, error: Error, where: tuple = ("sidecar", "admin")) -> AdminSettings:
    """The `sidecar.admin` mapping as AdminSettings; `error(path, problem, fix)` makes the ConfigError."""
    v = ADMIN.read(raw, error, where)
    tls, sasl = v.pop("tls"), v.pop("sasl")
    return _check(AdminSettings(
        **v,
        tls=None if tls is None else TlsSettings(
            ca_file=tls["ca_file"], cert_file=tls["cert_file"], key_file=tls["key_file"], check_hostname=tls["check_hostname"],
            key_password=_secret(tls, TLS, "keyPasswordFile", "keyPasswordEnv", where + ("tls",), error, required=False)),
        sasl=None if sasl is None else SaslSettings(
            mechanism=sasl["mechanism"], username=sasl["username"],
            password=_secret(sasl, SASL, "passwordFile", "passwordEnv", where + ("sasl",), error, required=True)),
    ), where, error)


def _secret(values: dict, block: Block, file_key: str, env_key: str, where: tuple, error: Error,
            required: bool) -> Secret | None:
    file, env = values[block.key(file_key).attr], values[block.key(env_key).attr]
    if file and env:
        raise error(where + (file_key,), f"both {file_key} and {env_key} are set", "keep one of them")
    if not file and not env:
        if required:
            raise error(where + (file_key,), "no password source",
                        f"give {file_key} (a mounted secret file) or {env_key} (an environment variable)")
        return None
    key = ".".join(map(str, where + (file_key if file else env_key,)))
    return Secret(key=key, file=str(file) if file else None, env=str(env) if env else None)
