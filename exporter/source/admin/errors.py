"""Why a request failed, as one of the few `Reason`s, and the error that stops a whole read.

kafka-python reports a failed request as an exception and a failed resource inside a response as
an error code; both map here to a Reason (what a metric label says) and a name (what a log line
says). `AdminError` is for a read that cannot go on at all (no broker answers, TLS or SASL
refused): its text says what failed, against which brokers, and which setting to look at.
"""
from __future__ import annotations

import ssl

import kafka.errors as kerr

from kafka_jmx_sidecar.exporter.source.admin.view import Reason
from kafka_jmx_sidecar.exporter.source.protocol import SourceError

# Broker error codes (Kafka protocol) that say why a resource in a response has no value.
_CODE_REASONS = {
    kerr.TopicAuthorizationFailedError.errno: Reason.UNAUTHORIZED,
    kerr.ClusterAuthorizationFailedError.errno: Reason.UNAUTHORIZED,
    kerr.UnsupportedVersionError.errno: Reason.UNSUPPORTED,
    kerr.InvalidRequestError.errno: Reason.UNSUPPORTED,
}


class AdminError(SourceError):
    """The Admin API cannot be read at all; `str()` says what, where and what to do."""


def reason_of_code(code: int) -> Reason:
    return _CODE_REASONS.get(code, Reason.ERROR)


def code_name(code: int) -> str:
    return kerr.for_code(code).__name__.removesuffix("Error") + f" ({code})"


def reason_of(error: BaseException) -> Reason:
    """The Reason a failed request counts as."""
    if isinstance(error, (kerr.AuthorizationError, kerr.SaslAuthenticationFailedError)):
        return Reason.UNAUTHORIZED
    if isinstance(error, kerr.UnsupportedVersionError):
        return Reason.UNSUPPORTED
    if isinstance(error, (kerr.KafkaConnectionError, kerr.KafkaTimeoutError, kerr.NodeNotReadyError,
                          kerr.RequestTimedOutError, kerr.BrokerNotAvailableError, OSError)):
        return Reason.UNREACHABLE
    return Reason.ERROR


def describe(error: BaseException) -> str:
    """An exception as a log line names it: its class and message, once."""
    text = str(error).strip()
    name = type(error).__name__
    return text if text.startswith(name) else f"{name}: {text}" if text else name


# What kafka-python's failure lines say (its transport's name holds "SSL" whatever failed)
_TLS_SIGNS = ("[SSL", "SSLError", "CERTIFICATE_VERIFY_FAILED", "Handshake failed", "certificate verify")
_SASL_SIGNS = ("SaslAuthenticationFailed", "Authentication failed", "authentication failed")
# A broker closes a connection whose authentication failed (after connection.failed.authentication.
# delay.ms) once it has sent the error; kafka-python sometimes meets the close before it reads that
# answer (seen on Kafka 4.4 over SASL_SSL, a third of the tries under load) and logs only this.
_CLOSED_SIGN = "socket disconnected"
_SASL_FIX = "check sidecar.admin.sasl (mechanism, username, and the password file or variable)"


def connect_error(error: BaseException, servers: str, protocol: str, timeout: float,
                  logged: list[str] | None = None) -> AdminError:
    """Why the client could not start against `servers`, and which setting to check. `logged`:
    what kafka-python logged meanwhile, where the TLS or SASL cause of a bootstrap timeout is."""
    where = f"Kafka Admin API at {servers} ({protocol})"
    causes = [describe(error), *(logged or ())]
    tls = next((c for c in reversed(causes) if any(s in c for s in _TLS_SIGNS)), None)
    sasl = next((c for c in reversed(causes) if any(s in c for s in _SASL_SIGNS)), None)
    if isinstance(error, kerr.SaslAuthenticationFailedError) or sasl:
        return AdminError(f"{where}: SASL authentication failed: {sasl or describe(error)}; {_SASL_FIX}")
    if protocol.startswith("SASL") and not tls and any(_CLOSED_SIGN in c for c in causes):
        return AdminError(f"{where}: SASL authentication failed: the brokers closed every connection during "
                          f"authentication without an answer the client could read (refused credentials, or a "
                          f"listener that does not speak {protocol}); {_SASL_FIX}, and "
                          f"sidecar.admin.securityProtocol")
    if isinstance(error, ssl.SSLError) or tls:
        return AdminError(f"{where}: TLS handshake failed: {tls or describe(error)}; check sidecar.admin.tls.caFile "
                          f"(the CA that signed the brokers' certificates) and, if the brokers' names differ "
                          f"from bootstrapServers, tls.checkHostname")
    if isinstance(error, (kerr.KafkaTimeoutError, kerr.KafkaConnectionError, OSError)):
        last = f"; last: {logged[-1]}" if logged else ""
        return AdminError(f"{where}: no broker answered within {timeout:g} s ({describe(error)}{last}); check "
                          f"sidecar.admin.bootstrapServers, that the brokers run, and that the listener "
                          f"speaks {protocol} (sidecar.admin.securityProtocol)")
    return AdminError(f"{where}: {describe(error)}")


def read_error(error: BaseException, what: str, servers: str) -> AdminError:
    """A request the whole read depends on (the cluster or the partitions) failed."""
    fix = {
        Reason.UNAUTHORIZED: "grant the sidecar's principal DESCRIBE on the cluster and on the topics",
        Reason.UNREACHABLE: "check that the brokers run and answer within sidecar.admin.requestTimeoutSeconds",
        Reason.UNSUPPORTED: "the broker's version does not answer this request",
        Reason.ERROR: "see the broker's log",
        Reason.HIDDEN: "",
    }[reason_of(error)]
    return AdminError(f"Kafka Admin API at {servers}: {what} failed: {describe(error)}; {fix}")
