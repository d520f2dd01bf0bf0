"""Errors a user can act on: what failed, against which host:port, and what to set.

Java exceptions never leave this package: `translate()` walks a Java exception's cause chain
(RemoteException.detail, NamingException root causes), and the first of an ordered table of
cases that matches it says what to do. The Java chain is kept in `.java_chain` (class and
message per level) for debug logs.
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


class JmxMemoryError(JmxError):
    """The sidecar's own JVM (the JMX client) ran out of heap: sidecar.jvmMaxHeap is too small
    for the broker."""


class JmxStoppedError(JmxError):
    """A call given up because the sidecar is stopping (not a fault of the broker)."""


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


class _Failure:
    """What a failure tells: its Java chain (as text, lowercased for matching), what was being
    done against which endpoint, and the settings a message names."""

    def __init__(self, exc: Any, endpoint: str, doing: str, read_timeout: float,
                 connect_timeout: float, username: str, stub_lookup: Callable[[], str] | None):
        self.chain = java_chain(exc)
        self.names = [c for c, _ in self.chain]
        self.text = " | ".join(f"{c}: {m}" for c, m in self.chain)
        self.low = self.text.lower()
        self.where = endpoint or "the JMX target"
        self.doing, self.username = doing, username
        self.read_timeout, self.connect_timeout = read_timeout, connect_timeout
        self.stub_lookup = stub_lookup
        self.refused = "connection refused" in self.low or self.has("ConnectException")
        self.unreachable = ("no route to host" in self.low or "network is unreachable" in self.low
                            or "host is unreachable" in self.low or self.has("NoRouteToHostException"))
        self.unknown = self.has("UnknownHostException")

    def has(self, cls_suffix: str) -> bool:
        return any(n.endswith(cls_suffix) for n in self.names)

    def timed_out(self) -> bool:
        return (self.has("SocketTimeoutException") or self.has("TimeoutException") or "read timed out" in self.low
                or "timed out" in self.low)

    def stub_failed(self) -> bool:
        """The registry answered (the stub was retrieved), the server the stub names did not."""
        return (self.doing == "connect" and "failed to retrieve rmiserver stub" not in self.low
                and (self.refused or self.unreachable or self.unknown))

    def advertised(self) -> str:
        """The stub's host:port: asked of the registry again, else the host the chain names."""
        advertised = ""
        if self.stub_lookup is not None:
            try:
                advertised = self.stub_lookup()
            except Exception:
                advertised = ""
        m = _TO_HOST.search(self.text)
        return advertised or (m.group(1) if m else "")


def _stub_message(f: _Failure) -> str:
    advertised = f.advertised()
    what = f"the RMI server it advertises ({advertised})" if advertised else "the RMI server it advertises"
    how = ("does not resolve" if f.unknown else "refused the connection" if f.refused else "cannot be reached")
    port = f.where.rpartition(":")[2] or "PORT"
    return (f"the JMX registry at {f.where} answered, but {what} {how}: set "
            "-Djava.rmi.server.hostname=<an address the sidecar can reach> on the broker, and "
            f"-Dcom.sun.management.jmxremote.rmi.port={port} so one port serves both "
            "(\"Failed to retrieve RMIServer stub\" behind container networking is this)")


def _max_heap() -> str:
    """This process's JVM heap ceiling, as a size to read."""
    try:
        import jpype

        return f"{int(jpype.JClass('java.lang.Runtime').getRuntime().maxMemory()) >> 20} MB"
    except Exception:
        return "unknown"


def _memory_message(f: _Failure) -> str:
    return (f"the sidecar's own JVM (the JMX client) ran out of heap during {f.doing} of {f.where} "
            f"(its ceiling: {_max_heap()}): raise sidecar.jvmMaxHeap (a broker of 40,000 partitions "
            "needs about 50 MB; the default is 256m)")


# (when, error, message): the first case whose `when` holds says what to set. The order matters:
# an SSL failure also reads as a broken connection, a stub failure also as a refused one.
_CASES: tuple[tuple[Callable[[_Failure], bool], type[JmxError], Callable[[_Failure], str]], ...] = (
    # --- this side's heap (a ServerError carries the broker's own OutOfMemoryError: not ours)
    (lambda f: f.has("OutOfMemoryError") and not f.has("ServerError"), JmxMemoryError, _memory_message),
    # --- credentials
    (lambda f: "credentials required" in f.low, JmxAuthError,
     lambda f: f"{f.where} requires JMX credentials (the broker runs with "
               "com.sun.management.jmxremote.authenticate=true): set username and password"),
    (lambda f: "invalid username or password" in f.low or "authentication failed" in f.low, JmxAuthError,
     lambda f: f"{f.where} rejected the JMX credentials"
               f"{f' for user {f.username!r}' if f.username else ''}: check username and password "
               "against the broker's jmxremote.password file"),
    (lambda f: "access denied" in f.low and f.has("SecurityException"), JmxAuthError,
     lambda f: f"{f.where} denied access to user {f.username!r}: give the user readonly access "
               "in the broker's jmxremote.access file"),
    # --- SSL
    (lambda f: "non-jrmp server at remote endpoint" in f.low, JmxSslError,
     lambda f: f"{f.where} did not answer as a plain JMX/RMI port: the broker uses SSL "
               "(com.sun.management.jmxremote.registry.ssl=true) -> set ssl: true; "
               "otherwise check that the port is the broker's JMX port"),
    (lambda f: "pkix path building failed" in f.low or "unable to find valid certification path" in f.low,
     JmxSslError,
     lambda f: f"the SSL certificate of {f.where} is not trusted: configure the trust store "
               "(ssl trustStore and trustStorePassword, i.e. -Djavax.net.ssl.trustStore=...) "
               "with the broker's certificate or its CA"),
    (lambda f: "no subject alternative" in f.low or "no name matching" in f.low, JmxSslError,
     lambda f: f"the SSL certificate of {f.where} does not name that host: connect with a name "
               "in its subject alternative names, or reissue it with -ext san=ip:...,dns:..."),
    (lambda f: "certificate_required" in f.low or "bad_certificate" in f.low, JmxSslError,
     lambda f: f"{f.where} requires a client certificate "
               "(com.sun.management.jmxremote.ssl.need.client.auth=true): configure the key store "
               "(ssl keyStore and keyStorePassword) with a certificate the broker trusts"),
    (lambda f: ("unsupported or unrecognized ssl message" in f.low or "plaintext connection" in f.low
                or "remote host terminated the handshake" in f.low
                or (f.has("SSLHandshakeException") and "timed out" not in f.low)), JmxSslError,
     lambda f: f"{f.where} does not speak SSL: set ssl: false (or enable "
               "com.sun.management.jmxremote.ssl and com.sun.management.jmxremote.registry.ssl "
               "on the broker)"),
    # --- timeouts
    (lambda f: f.timed_out() and f.doing == "connect", JmxTimeoutError,
     lambda f: f"{f.where} did not complete the JMX connection within "
               f"{f.connect_timeout:g} s: the port accepts connections but the broker's JVM does "
               "not answer (stopped, frozen by a long GC pause, or overloaded); raise "
               "sidecar connectTimeoutSeconds if it is only slow"),
    (_Failure.timed_out, JmxTimeoutError,
     lambda f: f"{f.where} did not answer a JMX {f.doing} within {f.read_timeout:g} s: the broker's JVM "
               "is stopped, in a long GC pause or overloaded; raise sidecar readTimeoutSeconds "
               "if it is only slow"),
    # --- the registry answered, the advertised RMI server did not
    (_Failure.stub_failed, JmxStubError, _stub_message),
    # --- the network, a stale or wrong endpoint
    (lambda f: f.unknown, JmxUnreachableError,
     lambda f: f"cannot resolve the host of {f.where}: check hostPort/jmxUrl"),
    (lambda f: f.refused and f.doing == "connect", JmxUnreachableError,
     lambda f: f"cannot connect to {f.where}: connection refused - is the broker running with "
               "remote JMX enabled (JMX_PORT, -Dcom.sun.management.jmxremote.port), and is "
               "the port right?"),
    (lambda f: f.unreachable, JmxUnreachableError,
     lambda f: f"cannot reach {f.where}: no route to host - check the address and any "
               "firewall between the sidecar and the broker"),
    (lambda f: "nosuchobjectexception" in f.low.replace(".", "") or f.has("NoSuchObjectException"),
     JmxConnectionError,
     lambda f: f"the JMX connection to {f.where} is stale (the broker restarted): reconnecting"),
    (lambda f: f.has("NameNotFoundException"), JmxConfigError,
     lambda f: f"{f.where} is an RMI registry but serves no JMX connector at that name: check "
               "the jmxUrl path (usually /jmxrmi)"),
    (lambda f: "error during jrmp connection establishment" in f.low or f.has("EOFException"),
     JmxConnectionError,
     lambda f: f"{f.where} closed the connection during the RMI handshake: check that it is "
               "the broker's JMX port and whether it requires SSL (ssl: true)"),
    (lambda f: f.refused or f.has("IOException") or f.has("RemoteException"), JmxConnectionError,
     lambda f: f"the JMX connection to {f.where} broke during {f.doing}: {_short(f.chain)}"),
    (lambda f: True, JmxError,
     lambda f: f"JMX {f.doing} against {f.where} failed: {_short(f.chain)}"),
)


def translate(exc: Any, endpoint: str, *, doing: str = "connect",
              read_timeout: float = 0.0, connect_timeout: float = 0.0, username: str = "",
              stub_lookup: Callable[[], str] | None = None) -> JmxError:
    """A Java exception from `doing` against `endpoint` -> the JmxError that says what to set.

    `stub_lookup` (called only when the failure is past the registry) returns the endpoint the
    broker's RMI stub advertises, so the message can name it.
    """
    f = _Failure(exc, endpoint, doing, read_timeout, connect_timeout, username, stub_lookup)
    return next(error(message(f), endpoint=endpoint, java_chain=f.chain) for when, error, message in _CASES
                if when(f))


def _short(chain: Sequence[tuple[str, str]]) -> str:
    """The root cause in one line, without Java's nested-exception noise."""
    if not chain:
        return "unknown error"
    cls, msg = chain[-1]
    msg = msg.split("; nested exception is:")[0].strip()
    return f"{cls.rpartition('.')[2]}: {msg}" if msg else cls.rpartition(".")[2]
