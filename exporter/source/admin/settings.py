"""How the sidecar reaches the Kafka Admin API: bootstrap servers, TLS, SASL, timeouts.

`admin_settings` reads the `sidecar.admin` key of the configuration file, as every feature's
settings are read: `error(path, problem, fix)` makes the error that names the file, line and key.

    sidecar:
      admin:
        bootstrapServers: kafka-0.kafka:9093,kafka-1.kafka:9093   # or a YAML list
        securityProtocol: SASL_SSL     # PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; by default
                                       # what the tls/sasl blocks imply (PLAINTEXT without them)
        clientId: kafka-jmx-sidecar
        requestTimeoutSeconds: 10      # each request; a broker that does not answer is unknown
        logDirs: true                  # DescribeLogDirs each poll (one request per broker)
        tls:
          caFile: /etc/kafka-ca/ca.crt          # PEM; the system's CAs when absent
          certFile: /etc/sidecar/tls.crt        # client certificate (mutual TLS), PEM
          keyFile: /etc/sidecar/tls.key
          keyPasswordFile: /etc/sidecar/key-password   # or keyPasswordEnv: NAME
          checkHostname: true
        sasl:
          mechanism: SCRAM-SHA-512     # PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
          username: sidecar
          passwordFile: /etc/sidecar/sasl-password     # or passwordEnv: NAME

Passwords come from a file or an environment variable only, never from the configuration text
or the command line, and are read when the client connects (a rotated file is picked up by the
next connection). `Secret` holds where a password is, never the password.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

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
    """What the settings say together, checked once they are read."""
    if not s.bootstrap_servers or not all(map(_host_port, s.bootstrap_servers)):
        raise error(where + ("bootstrapServers",), f"must be host:port addresses, got "
                    f"{list(s.bootstrap_servers)!r}", "list the brokers' listeners, e.g. kafka-0:9092")
    if s.protocol not in SECURITY_PROTOCOLS:
        raise error(where + ("securityProtocol",), f"unknown protocol {s.protocol!r}",
                    f"use one of {', '.join(SECURITY_PROTOCOLS)}")
    if s.protocol.startswith("SASL_") and s.sasl is None:
        raise error(where + ("sasl",), f"{s.protocol} needs a sasl block",
                    "add sasl: {mechanism, username, passwordFile}")
    if s.sasl is not None and not s.protocol.startswith("SASL_"):
        raise error(where + ("securityProtocol",), f"{s.protocol} does not use the sasl block",
                    "use SASL_PLAINTEXT or SASL_SSL, or remove the sasl block")
    if s.sasl is not None and s.sasl.mechanism not in SASL_MECHANISMS:
        raise error(where + ("sasl", "mechanism"), f"{s.sasl.mechanism!r} is not supported",
                    f"use one of {', '.join(SASL_MECHANISMS)}")
    if s.tls is not None and bool(s.tls.cert_file) != bool(s.tls.key_file):
        raise error(where + ("tls",), "certFile and keyFile go together (mutual TLS)",
                    "give both, or neither")
    if not s.request_timeout_seconds > 0:
        raise error(where + ("requestTimeoutSeconds",), f"must be > 0, got {s.request_timeout_seconds!r}",
                    "give a number of seconds such as 10")
    return s


# --- reading the `sidecar.admin` mapping ------------------------------------------------

_TOP = {"bootstrapServers", "securityProtocol", "clientId", "requestTimeoutSeconds", "logDirs", "tls", "sasl"}
_TLS = {"caFile", "certFile", "keyFile", "keyPasswordFile", "keyPasswordEnv", "checkHostname"}
_SASL = {"mechanism", "username", "passwordFile", "passwordEnv"}


def admin_settings(raw: Any, error: Error, where: tuple = ("sidecar", "admin")) -> AdminSettings:
    """The `sidecar.admin` mapping as AdminSettings; `error(path, problem, fix)` makes the ConfigError."""
    _only(raw, _TOP, where, error)
    servers = raw.get("bootstrapServers")
    if isinstance(servers, str):
        servers = [s.strip() for s in servers.split(",") if s.strip()]
    if not isinstance(servers, list) or not servers:
        raise error(where + ("bootstrapServers",), "is missing or empty",
                    "list the brokers' listeners, e.g. kafka-0:9092,kafka-1:9092")
    tls = raw.get("tls")
    sasl = raw.get("sasl")
    timeout = raw.get("requestTimeoutSeconds", 10.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise error(where + ("requestTimeoutSeconds",), f"must be a number, got {timeout!r}",
                    "give a number of seconds such as 10")
    return _check(AdminSettings(
        bootstrap_servers=tuple(servers),
        security_protocol=raw.get("securityProtocol"),
        client_id=str(raw.get("clientId", "kafka-jmx-sidecar")),
        request_timeout_seconds=float(timeout),
        log_dirs=_bool(raw, "logDirs", True, where, error),
        tls=None if tls is None else _tls(tls, where + ("tls",), error),
        sasl=None if sasl is None else _sasl(sasl, where + ("sasl",), error),
    ), where, error)


def _tls(raw: Any, where: tuple, error: Error) -> TlsSettings:
    _only(raw, _TLS, where, error)
    return TlsSettings(
        ca_file=_file(raw, "caFile", where, error), cert_file=_file(raw, "certFile", where, error),
        key_file=_file(raw, "keyFile", where, error),
        key_password=_secret(raw, "keyPasswordFile", "keyPasswordEnv", where, error, required=False),
        check_hostname=_bool(raw, "checkHostname", True, where, error))


def _sasl(raw: Any, where: tuple, error: Error) -> SaslSettings:
    _only(raw, _SASL, where, error)
    username = raw.get("username")
    if not isinstance(username, str) or not username:
        raise error(where + ("username",), "is missing", "give the SASL user name")
    return SaslSettings(mechanism=str(raw.get("mechanism", "")).upper(), username=username,
                        password=_secret(raw, "passwordFile", "passwordEnv", where, error, required=True))


def _only(raw: Any, known: set[str], where: tuple, error: Error) -> None:
    if not isinstance(raw, Mapping):
        raise error(where, f"must be a mapping, got {type(raw).__name__}", "indent key: value lines under it")
    for key in raw:
        if key not in known:
            hint = " (passwords come from a file or the environment only)" if "assword" in str(key) else ""
            raise error(where + (key,), f"unknown setting{hint}", f"use one of {', '.join(sorted(known))}")


def _bool(raw: Mapping, key: str, default: bool, where: tuple, error: Error) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise error(where + (key,), f"must be true or false, got {value!r}", "write true or false")
    return value


def _file(raw: Mapping, key: str, where: tuple, error: Error) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise error(where + (key,), f"must be a file path, got {value!r}", "give the path of a PEM file")
    return value


def _secret(raw: Mapping, file_key: str, env_key: str, where: tuple, error: Error, required: bool) -> Secret | None:
    file, env = raw.get(file_key), raw.get(env_key)
    if file and env:
        raise error(where + (file_key,), f"both {file_key} and {env_key} are set", "keep one of them")
    if not file and not env:
        if required:
            raise error(where + (file_key,), "no password source",
                        f"give {file_key} (a mounted secret file) or {env_key} (an environment variable)")
        return None
    key = ".".join(map(str, where + (file_key if file else env_key,)))
    return Secret(key=key, file=str(file) if file else None, env=str(env) if env else None)
