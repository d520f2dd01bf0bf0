"""Errors a user can act on: what failed, against which host:port, and what to set.

Java exceptions never leave this package: `translate()` walks a Java exception's cause chain
(RemoteException.detail, NamingException root causes) and picks the message that says what to
do. The Java chain is kept in `.java_chain` (class and message per level) for debug logs.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence


class JmxError(Exception):
    """Base class. `.message` is the one line to show a user."""

    def __init__(self, message: str, *, endpoint: str = "", java_chain: Sequence[tuple[str, str]] = ()):
        super().__init__(message)
        self.message = message
        self.endpoint = endpoint
        self.java_chain = tuple(java_chain)

    def __str__(self) -> str:
        return self.message


class JmxConfigError(JmxError):
    """The settings cannot work (bad URL, JVM already started with other options)."""


class JmxConnectionError(JmxError):
    """No usable connection to the broker's JMX port (the poll has no fresh data)."""


class JmxUnreachableError(JmxConnectionError):
    """The registry port refused or could not be reached."""


class JmxStubError(JmxConnectionError):
    """The registry answered but the RMI server it advertises (java.rmi.server.hostname) did not."""


class JmxAuthError(JmxConnectionError):
    """Credentials missing or rejected, or the user has no access."""


class JmxSslError(JmxConnectionError):
    """SSL on one side only, or a certificate the sidecar does not trust."""


class JmxTimeoutError(JmxConnectionError):
    """The broker accepted a connection but did not answer in time."""


def java_chain(exc: Any, limit: int = 12) -> list[tuple[str, str]]:
    """[(class name, message)] from the outermost Java exception to the root cause."""
    chain: list[tuple[str, str]] = []
    seen: set[int] = set()
    e = exc
    while e is not None and len(chain) < limit:
        try:
            ident = int(e.hashCode()) ^ id(type(e))
            name = str(e.getClass().getName())
            msg = e.getMessage()
            msg = "" if msg is None else str(msg)
            cause = e.getCause()
        except Exception:  # not a Java throwable
            chain.append((type(e).__name__, str(e)))
            break
        if ident in seen:
            break
        seen.add(ident)
        chain.append((name, msg))
        e = cause
    return chain


_TO_HOST = re.compile(r"to host: ([^;\s]+)")
_STUB_ENDPOINT = re.compile(r"endpoint:\[([^\]]+)\]")


def stub_endpoint(stub_text: str) -> str:
    """host:port from an RMI stub's toString() (…[endpoint:[10.0.0.5:40123](remote),…)."""
    m = _STUB_ENDPOINT.search(stub_text or "")
    return m.group(1) if m else ""


def translate(exc: Any, endpoint: str, *, host: str = "", doing: str = "connect",
              read_timeout: float = 0.0, connect_timeout: float = 0.0, username: str = "",
              stub_lookup: Callable[[], str] | None = None) -> JmxError:
    """A Java exception from `doing` against `endpoint` -> the JmxError that says what to set.

    `stub_lookup` (called only when the failure is past the registry) returns the endpoint the
    broker's RMI stub advertises, so the message can name it.
    """
    chain = java_chain(exc)
    names = [c for c, _ in chain]
    text = " | ".join(f"{c}: {m}" for c, m in chain)
    low = text.lower()
    kw = {"endpoint": endpoint, "java_chain": chain}
    where = endpoint or "the JMX target"

    def has(cls_suffix: str) -> bool:
        return any(n.endswith(cls_suffix) for n in names)

    # --- credentials
    if "credentials required" in low:
        return JmxAuthError(f"{where} requires JMX credentials (the broker runs with "
                            "com.sun.management.jmxremote.authenticate=true): set username and password", **kw)
    if "invalid username or password" in low or "authentication failed" in low:
        who = f" for user {username!r}" if username else ""
        return JmxAuthError(f"{where} rejected the JMX credentials{who}: check username and password "
                            "against the broker's jmxremote.password file", **kw)
    if "access denied" in low and has("SecurityException"):
        return JmxAuthError(f"{where} denied access to user {username!r}: give the user readonly access "
                            "in the broker's jmxremote.access file", **kw)
    # --- SSL
    if "non-jrmp server at remote endpoint" in low:
        return JmxSslError(f"{where} did not answer as a plain JMX/RMI port: the broker uses SSL "
                           "(com.sun.management.jmxremote.registry.ssl=true) -> set ssl: true; "
                           "otherwise check that the port is the broker's JMX port", **kw)
    if "pkix path building failed" in low or "unable to find valid certification path" in low:
        return JmxSslError(f"the SSL certificate of {where} is not trusted: configure the trust store "
                           "(ssl trustStore and trustStorePassword, i.e. -Djavax.net.ssl.trustStore=...) "
                           "with the broker's certificate or its CA", **kw)
    if "no subject alternative" in low or "no name matching" in low:
        return JmxSslError(f"the SSL certificate of {where} does not name that host: connect with a name "
                           "in its subject alternative names, or reissue it with -ext san=ip:...,dns:...", **kw)
    if "certificate_required" in low or "bad_certificate" in low:
        return JmxSslError(f"{where} requires a client certificate "
                           "(com.sun.management.jmxremote.ssl.need.client.auth=true): configure the key store "
                           "(ssl keyStore and keyStorePassword) with a certificate the broker trusts", **kw)
    if ("unsupported or unrecognized ssl message" in low or "plaintext connection" in low
            or "remote host terminated the handshake" in low
            or (has("SSLHandshakeException") and "timed out" not in low)):
        return JmxSslError(f"{where} does not speak SSL: set ssl: false (or enable "
                           "com.sun.management.jmxremote.ssl and com.sun.management.jmxremote.registry.ssl "
                           "on the broker)", **kw)
    # --- timeouts
    if (has("SocketTimeoutException") or has("TimeoutException") or "read timed out" in low
            or "timed out" in low):
        if doing == "connect":
            return JmxTimeoutError(f"{where} did not complete the JMX connection within "
                                   f"{connect_timeout:g} s: the port accepts connections but the broker's JVM does "
                                   "not answer (stopped, frozen by a long GC pause, or overloaded); raise "
                                   "sidecar connectTimeoutSeconds if it is only slow", **kw)
        return JmxTimeoutError(f"{where} did not answer a JMX {doing} within {read_timeout:g} s: the broker's JVM "
                               "is stopped, in a long GC pause or overloaded; raise sidecar readTimeoutSeconds "
                               "if it is only slow", **kw)
    # --- the registry answered, the advertised RMI server did not
    past_registry = "failed to retrieve rmiserver stub" not in low
    m = _TO_HOST.search(text)
    stub_host = m.group(1) if m else ""
    refused = "connection refused" in low or has("ConnectException")
    unreachable = ("no route to host" in low or "network is unreachable" in low
                   or "host is unreachable" in low or has("NoRouteToHostException"))
    unknown = has("UnknownHostException")
    if doing == "connect" and past_registry and (refused or unreachable or unknown):
        advertised = ""
        if stub_lookup is not None:
            try:
                advertised = stub_lookup()
            except Exception:
                advertised = ""
        advertised = advertised or stub_host
        what = f"the RMI server it advertises ({advertised})" if advertised else "the RMI server it advertises"
        how = ("does not resolve" if unknown else "refused the connection" if refused else "cannot be reached")
        port = where.rpartition(":")[2] or "PORT"
        return JmxStubError(f"the JMX registry at {where} answered, but {what} {how}: set "
                            "-Djava.rmi.server.hostname=<an address the sidecar can reach> on the broker, and "
                            f"-Dcom.sun.management.jmxremote.rmi.port={port} so one port serves both "
                            "(\"Failed to retrieve RMIServer stub\" behind container networking is this)", **kw)
    if unknown:
        return JmxUnreachableError(f"cannot resolve the host of {where}: check hostPort/jmxUrl", **kw)
    if refused and doing == "connect":
        return JmxUnreachableError(f"cannot connect to {where}: connection refused - is the broker running with "
                                   "remote JMX enabled (JMX_PORT, -Dcom.sun.management.jmxremote.port), and is "
                                   "the port right?", **kw)
    if unreachable:
        return JmxUnreachableError(f"cannot reach {where}: no route to host - check the address and any "
                                   "firewall between the sidecar and the broker", **kw)
    if "nosuchobjectexception" in low.replace(".", "") or has("NoSuchObjectException"):
        return JmxConnectionError(f"the JMX connection to {where} is stale (the broker restarted): reconnecting",
                                  **kw)
    if has("NameNotFoundException"):
        return JmxConfigError(f"{where} is an RMI registry but serves no JMX connector at that name: check "
                              "the jmxUrl path (usually /jmxrmi)", **kw)
    if "error during jrmp connection establishment" in low or has("EOFException"):
        return JmxConnectionError(f"{where} closed the connection during the RMI handshake: check that it is "
                                  "the broker's JMX port and whether it requires SSL (ssl: true)", **kw)
    if refused or has("IOException") or has("RemoteException"):
        return JmxConnectionError(f"the JMX connection to {where} broke during {doing}: {_short(chain)}", **kw)
    return JmxError(f"JMX {doing} against {where} failed: {_short(chain)}", **kw)


def _short(chain: Sequence[tuple[str, str]]) -> str:
    """The root cause in one line, without Java's nested-exception noise."""
    if not chain:
        return "unknown error"
    cls, msg = chain[-1]
    msg = msg.split("; nested exception is:")[0].strip()
    return f"{cls.rpartition('.')[2]}: {msg}" if msg else cls.rpartition(".")[2]
