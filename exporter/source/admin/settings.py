"""How the sidecar reaches the Kafka Admin API: bootstrap servers, TLS, SASL, timeouts.

A plain dataclass for now; the keys proposed for the `sidecar:` block of the configuration file
(`admin_settings` reads this mapping and names the key of any problem):

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
from typing import Any, Mapping

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class AdminConfigError(ValueError):
    """A setting is wrong: `str()` names its key, the problem and the fix."""

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

    def __post_init__(self) -> None:
        where = "sidecar.admin"
        if not self.bootstrap_servers or not all(_host_port(s) for s in self.bootstrap_servers):
            raise AdminConfigError(f"{where}.bootstrapServers", f"must be host:port addresses, got "
                                   f"{list(self.bootstrap_servers)!r}", "list the brokers' listeners, e.g. kafka-0:9092")
        if self.protocol not in SECURITY_PROTOCOLS:
            raise AdminConfigError(f"{where}.securityProtocol", f"unknown protocol {self.protocol!r}",
                                   f"use one of {', '.join(SECURITY_PROTOCOLS)}")
        if self.protocol.startswith("SASL_") and self.sasl is None:
            raise AdminConfigError(f"{where}.sasl", f"{self.protocol} needs a sasl block",
                                   "add sasl: {mechanism, username, passwordFile}")
        if self.sasl is not None and not self.protocol.startswith("SASL_"):
            raise AdminConfigError(f"{where}.securityProtocol", f"{self.protocol} does not use the sasl block",
                                   "use SASL_PLAINTEXT or SASL_SSL, or remove the sasl block")
        if self.sasl is not None and self.sasl.mechanism not in SASL_MECHANISMS:
            raise AdminConfigError(f"{where}.sasl.mechanism", f"{self.sasl.mechanism!r} is not supported",
                                   f"use one of {', '.join(SASL_MECHANISMS)}")
        if self.tls is not None and bool(self.tls.cert_file) != bool(self.tls.key_file):
            raise AdminConfigError(f"{where}.tls", "certFile and keyFile go together (mutual TLS)",
                                   "give both, or neither")
        if not self.request_timeout_seconds > 0:
            raise AdminConfigError(f"{where}.requestTimeoutSeconds", f"must be > 0, got {self.request_timeout_seconds!r}",
                                   "give a number of seconds such as 10")


def _host_port(address: Any) -> bool:
    if not isinstance(address, str):
        return False
    host, sep, port = address.strip().rpartition(":")
    return bool(sep and host and port.isdigit() and 0 < int(port) < 65536)


# --- reading the proposed `sidecar.admin` mapping ------------------------------------------------

_TOP = {"bootstrapServers", "securityProtocol", "clientId", "requestTimeoutSeconds", "logDirs", "tls", "sasl"}
_TLS = {"caFile", "certFile", "keyFile", "keyPasswordFile", "keyPasswordEnv", "checkHostname"}
_SASL = {"mechanism", "username", "passwordFile", "passwordEnv"}


def admin_settings(raw: Mapping[str, Any], where: str = "sidecar.admin") -> AdminSettings:
    """The `sidecar.admin` mapping as AdminSettings; AdminConfigError names the key at fault."""
    _only(raw, _TOP, where)
    servers = raw.get("bootstrapServers")
    if isinstance(servers, str):
        servers = [s.strip() for s in servers.split(",") if s.strip()]
    if not isinstance(servers, list) or not servers:
        raise AdminConfigError(f"{where}.bootstrapServers", "is missing or empty",
                               "list the brokers' listeners, e.g. kafka-0:9092,kafka-1:9092")
    tls = raw.get("tls")
    sasl = raw.get("sasl")
    timeout = raw.get("requestTimeoutSeconds", 10.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise AdminConfigError(f"{where}.requestTimeoutSeconds", f"must be a number, got {timeout!r}",
                               "give a number of seconds such as 10")
    return AdminSettings(
        bootstrap_servers=tuple(servers),
        security_protocol=raw.get("securityProtocol"),
        client_id=str(raw.get("clientId", "kafka-jmx-sidecar")),
        request_timeout_seconds=float(timeout),
        log_dirs=_bool(raw, "logDirs", True, where),
        tls=None if tls is None else _tls(tls, f"{where}.tls"),
        sasl=None if sasl is None else _sasl(sasl, f"{where}.sasl"),
    )


def _tls(raw: Any, where: str) -> TlsSettings:
    _only(raw, _TLS, where)
    return TlsSettings(
        ca_file=_file(raw, "caFile", where), cert_file=_file(raw, "certFile", where),
        key_file=_file(raw, "keyFile", where),
        key_password=_secret(raw, "keyPasswordFile", "keyPasswordEnv", where, required=False),
        check_hostname=_bool(raw, "checkHostname", True, where))


def _sasl(raw: Any, where: str) -> SaslSettings:
    _only(raw, _SASL, where)
    username = raw.get("username")
    if not isinstance(username, str) or not username:
        raise AdminConfigError(f"{where}.username", "is missing", "give the SASL user name")
    return SaslSettings(mechanism=str(raw.get("mechanism", "")).upper(), username=username,
                        password=_secret(raw, "passwordFile", "passwordEnv", where, required=True))


def _only(raw: Any, known: set[str], where: str) -> None:
    if not isinstance(raw, Mapping):
        raise AdminConfigError(where, f"must be a mapping, got {type(raw).__name__}", "indent key: value lines under it")
    for key in raw:
        if key not in known:
            hint = " (passwords come from a file or the environment only)" if "assword" in str(key) else ""
            raise AdminConfigError(f"{where}.{key}", f"unknown setting{hint}", f"use one of {', '.join(sorted(known))}")


def _bool(raw: Mapping, key: str, default: bool, where: str) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise AdminConfigError(f"{where}.{key}", f"must be true or false, got {value!r}", "write true or false")
    return value


def _file(raw: Mapping, key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise AdminConfigError(f"{where}.{key}", f"must be a file path, got {value!r}", "give the path of a PEM file")
    return value


def _secret(raw: Mapping, file_key: str, env_key: str, where: str, required: bool) -> Secret | None:
    file, env = raw.get(file_key), raw.get(env_key)
    if file and env:
        raise AdminConfigError(f"{where}.{file_key}", f"both {file_key} and {env_key} are set", "keep one of them")
    if not file and not env:
        if required:
            raise AdminConfigError(f"{where}.{file_key}", "no password source",
                                   f"give {file_key} (a mounted secret file) or {env_key} (an environment variable)")
        return None
    key = f"{where}.{file_key if file else env_key}"
    return Secret(key=key, file=str(file) if file else None, env=str(env) if env else None)
