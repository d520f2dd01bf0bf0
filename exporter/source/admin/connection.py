"""AdminSettings as kafka-python's client options, and kafka-python's logs kept free of secrets.

Passwords are read here, when a client is built, and handed over as `Masked` strings:
kafka-python logs its whole configuration at DEBUG ("Starting KafkaAdminClient with configuration:
..."), and a Masked password prints as '<secret>' there while it encodes as itself on the wire.
Its network layer also logs every request and the bytes it sends at DEBUG, SASL PLAIN's password
among them (SaslAuthenticateRequest(auth_bytes=b'user\\x00user\\x00PASSWORD')): `quiet_wire_logs`
caps those loggers at INFO, so a DEBUG root logger never writes a password.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

log = logging.getLogger(__name__)

# kafka-python's loggers that dump requests and bytes at DEBUG
WIRE_LOGGERS = ("kafka.net", "kafka.protocol", "kafka.conn", "kafka.client_async")


def quiet_wire_logs() -> None:
    for name in WIRE_LOGGERS:
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() < logging.INFO:
            logger.setLevel(logging.INFO)


class FailureLog(logging.Handler):
    """What kafka-python logged at WARNING or above while it bootstrapped: it retries failed
    connections until its timeout and then raises a bare KafkaTimeoutError, so the TLS or SASL
    failure that is the real cause is only in these lines."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # a record that cannot format is no cause worth keeping
            pass

    def __enter__(self) -> "FailureLog":
        logging.getLogger("kafka").addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        logging.getLogger("kafka").removeHandler(self)

from kafka_jmx_sidecar.exporter.source.admin.settings import AdminSettings


class Masked(str):
    """A password that prints as '<secret>' (repr and str) but is the password everywhere else."""

    def __repr__(self) -> str:
        return "'<secret>'"

    def __str__(self) -> str:
        return "<secret>"

    def __format__(self, spec: str) -> str:
        return "<secret>"


def client_options(settings: AdminSettings, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    timeout_ms = int(settings.request_timeout_seconds * 1000)
    options: dict[str, Any] = {
        "bootstrap_servers": list(settings.bootstrap_servers),
        "client_id": settings.client_id,
        "security_protocol": settings.protocol,
        "request_timeout_ms": timeout_ms,
        "bootstrap_timeout_ms": timeout_ms,
        # One slow poll must not turn into many: a broker that refused a connection is tried
        # again at the next read, not in a tight loop.
        "reconnect_backoff_max_ms": 2 * timeout_ms,
    }
    tls = settings.tls
    if settings.protocol.endswith("SSL"):
        options["ssl_check_hostname"] = True if tls is None else tls.check_hostname
        if tls is not None:
            options.update(ssl_cafile=tls.ca_file, ssl_certfile=tls.cert_file, ssl_keyfile=tls.key_file)
            if tls.key_password is not None:
                options["ssl_password"] = Masked(tls.key_password.reveal(environ))
    sasl = settings.sasl
    if sasl is not None:
        options.update(sasl_mechanism=sasl.mechanism, sasl_plain_username=sasl.username,
                       sasl_plain_password=Masked(sasl.password.reveal(environ)))
    return options


def new_client(factory: Callable[..., Any], options: dict[str, Any]) -> Any:
    """factory(**options), and when it raises, what it had started stopped: kafka-python 3.0's
    KafkaAdminClient starts its IO thread before it bootstraps, and a bootstrap that fails leaves
    that thread retrying the servers with no client to close (one more thread, and its
    connections, at every poll's attempt while the brokers are down or refuse the credentials)."""
    if not isinstance(factory, type):
        return factory(**options)
    client = factory.__new__(factory)
    try:
        client.__init__(**options)
    except BaseException:
        _stop_started(client)
        raise
    return client


def _stop_started(client: Any) -> None:
    """Close what a client's failed __init__ had started, as its close() would, in its order."""
    for part, call in (("_metrics", "close"), ("_client", "close"), ("_net", "stop")):
        started = getattr(client, part, None)
        if started is None:
            continue
        try:
            getattr(started, call)()
        except Exception as e:  # the start's own failure is the one to report
            log.debug("kafka-python's %s.%s() after a failed start: %r", part, call, e)
