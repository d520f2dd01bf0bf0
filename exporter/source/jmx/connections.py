"""The connections to the broker's JMX port, kept across polls.

A connection that breaks is re-established at once on the next call (a broker restart costs no
poll), then with exponential backoff between failed attempts; meanwhile calls fail fast with the
last error. While the broker was unreachable or did not answer, each call during the backoff
first probes the registry (probe.py: a TCP connect and the start of the RMI handshake, at most
PROBE_SECONDS), and one that answers ends the wait: after an outage of any length the connection
is back at the first poll after the broker answers, not at the end of a backoff of up to
reconnect_max_seconds. Refused credentials or certificates keep the backoff: they need a new
configuration, not a retry. Every Java exception leaves here as the JmxError that says what to
set (errors.py).

`abort()`, from another thread, gives up the call in progress (the waiting Java thread is
interrupted) and refuses later ones: the sidecar is stopping and must not wait on the broker.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.source.jmx.client_settings import JmxSettings
from kafka_jmx_sidecar.exporter.source.jmx.engine import BatchFailure
from kafka_jmx_sidecar.exporter.source.jmx import probe
from kafka_jmx_sidecar.exporter.source.jmx.errors import (JmxAuthError, JmxConfigError, JmxError, JmxMemoryError,
                                                          JmxSslError, JmxStoppedError, JmxTimeoutError, stub_endpoint,
                                                          translate)
from kafka_jmx_sidecar.exporter.source.jmx.jvm import mark_used
from kafka_jmx_sidecar.exporter.source.jmx.stats import JmxStats

log = logging.getLogger(__name__)

PROBE_SECONDS = 1.0
# what a broker answering again does not mend: the backoff stands
_NOT_PROBED = (JmxAuthError, JmxSslError, JmxConfigError, JmxMemoryError)


def _stub_text(settings: JmxSettings) -> str:
    """The RMI stub the broker's registry hands out (toString names its host:port)."""
    import jpype

    host, _, port = settings.endpoint.rpartition(":")
    if not port.isdigit():
        return ""
    LocateRegistry = jpype.JClass("java.rmi.registry.LocateRegistry")
    csf = jpype.JClass("javax.rmi.ssl.SslRMIClientSocketFactory")() if settings.ssl else None
    registry = LocateRegistry.getRegistry(host.strip("[]"), int(port), csf)
    name = settings.url.rstrip("/").rpartition("/")[2] or "jmxrmi"
    return str(registry.lookup(name).toString())


class Connections:
    """Up to `settings.connections` connections of one engine (`want()`: how many; one until
    then); `call(fn)` runs fn with them up.

    `mbscs` (the MBeanServerConnections; the first serves queries) and `jconns` (the engine's
    handle on all of them, for batches) are read by fn when it runs, after (re)connecting."""

    def __init__(self, settings: JmxSettings, engine: Any, stats: JmxStats, clock: Callable[[], float]):
        import jpype

        self.settings, self._engine, self._stats, self._clock = settings, engine, stats, clock
        self._JException = jpype.JException
        self._IOException = jpype.JClass("java.io.IOException")
        self._Thread = jpype.JClass("java.lang.Thread")
        self._caller: Any = None  # the Java thread inside call(), for abort()
        self._aborted = False
        self._connectors: list[Any] = []
        self.mbscs: list[Any] = []
        self.wanted = 1  # connections to keep open (want())
        self.jconns: Any = None
        self._failures = 0
        self._next_attempt = 0.0
        self._last_error: JmxError | None = None

    @property
    def up(self) -> bool:
        return bool(self.mbscs)

    def close(self) -> None:
        for c in self._connectors:
            self._engine.close(c)
        self._connectors, self.mbscs, self.jconns = [], [], None

    def abort(self) -> None:
        """Give up the call in progress and refuse later ones (any thread; see the docstring)."""
        self._aborted = True
        caller = self._caller
        if caller is not None:
            caller.interrupt()

    def _stopped(self) -> JmxStoppedError:
        return JmxStoppedError(f"JMX calls to {self.settings.endpoint} given up: the sidecar is stopping",
                               endpoint=self.settings.endpoint)

    def call(self, fn: Callable[[], Any], doing: str) -> Any:
        """fn() with connections up. A connection that worked before and broke is re-established
        at once and fn() tried again (a broker restart costs no poll); otherwise the error is
        raised and later attempts back off."""
        self._caller = self._Thread.currentThread()  # before the check: abort() sees one or the other
        try:
            if self._aborted:
                raise self._stopped()
            return self._call(fn, doing)
        finally:
            self._caller = None

    def _call(self, fn: Callable[[], Any], doing: str) -> Any:
        fresh = self._ensure_connected()
        ok, result = self._attempt(fn, doing)
        if ok:
            return result
        self.close()
        # no second attempt after a timeout, or when this side's heap is short (it would be again)
        if fresh or isinstance(result, (JmxTimeoutError, JmxMemoryError)):
            self._backoff(result)
            raise result
        log.info("JMX connection to %s broke (%s); reconnecting", self.settings.endpoint, result.message)
        self._ensure_connected()
        ok, result = self._attempt(fn, doing)
        if ok:
            return result
        self.close()
        self._backoff(result)
        raise result

    def _translate(self, java_exc: Any, doing: str) -> JmxError:
        s = self.settings
        return translate(java_exc, s.endpoint, doing=doing, username=s.username,
                         read_timeout=s.read_timeout_seconds, connect_timeout=s.connect_timeout_seconds,
                         stub_lookup=lambda: stub_endpoint(_stub_text(s)))

    def _ensure_connected(self) -> bool:
        """Connect every connection if needed; True when this call connected."""
        if self.mbscs:
            return False
        now = self._clock()
        if self._last_error is not None and now < self._next_attempt and not self._answers_again():
            last = self._last_error
            raise type(last)(f"{last.message} (next attempt in {self._next_attempt - now:.0f} s)",
                             endpoint=last.endpoint, java_chain=last.java_chain)
        connectors: list[Any] = []
        mbscs: list[Any] = []
        mark_used(self.settings.ssl)
        try:
            try:
                connectors = self._open()
                mbscs = [c.getMBeanServerConnection() for c in connectors]
            except BatchFailure as e:
                raise self._translate(e.java, "connect") from None
            except self._JException as e:
                raise (self._stopped() if self._aborted else self._translate(e, "connect")) from None
        except JmxStoppedError:
            for c in connectors:
                self._engine.close(c)
            raise
        except JmxError as e:
            for c in connectors:
                self._engine.close(c)
            self._stats.connect_failures += 1
            self._backoff(e)
            log.warning("%s", e.message)
            raise
        self._connectors, self.mbscs = connectors, mbscs
        self.jconns = self._engine.conns(mbscs)
        self._failures, self._last_error = 0, None
        self._stats.connects += len(connectors)
        return True

    def want(self, n: int) -> None:
        """Keep n connections open from now on (at least 1): more are opened at once when
        connected (a failure to open them leaves the ones open, said in the log), fewer closed."""
        n = max(1, n)
        self.wanted = n
        if not self.mbscs or n == len(self.mbscs):
            return
        if n < len(self.mbscs):
            for c in self._connectors[n:]:
                self._engine.close(c)
            self._connectors, self.mbscs = self._connectors[:n], self.mbscs[:n]
        else:
            try:
                more = self._open(n - len(self.mbscs))
                mbscs = [c.getMBeanServerConnection() for c in more]
            except (BatchFailure, self._JException) as e:
                java = e.java if isinstance(e, BatchFailure) else e
                log.info("could not open %d more JMX connection(s) to %s (%s); reading on %d", n - len(self.mbscs),
                         self.settings.endpoint, self._translate(java, "connect").message, len(self.mbscs))
                return
            self._connectors, self.mbscs = self._connectors + list(more), self.mbscs + mbscs
            self._stats.connects += len(more)
        self.jconns = self._engine.conns(self.mbscs)

    def _open(self, n: int | None = None) -> list[Any]:
        """n connectors (wanted by default): all at once when the engine can (ready in the time of one)."""
        n = self.wanted if n is None else n
        if hasattr(self._engine, "connect_all"):
            return self._engine.connect_all(self.settings, n)
        connectors: list[Any] = []
        try:
            for _ in range(n):
                connectors.append(self._engine.connect(self.settings))
        except BaseException:
            for c in connectors:
                self._engine.close(c)
            raise
        return connectors

    def _answers_again(self) -> bool:
        """During the backoff: the broker was away and its registry answers now (see the docstring)."""
        if isinstance(self._last_error, _NOT_PROBED):
            return False
        s = self.settings
        if probe.answers(s.endpoint, s.ssl, min(PROBE_SECONDS, s.connect_timeout_seconds)):
            log.debug("JMX registry of %s answers again: reconnecting before the backoff ends", s.endpoint)
            return True
        return False

    def _backoff(self, err: JmxError) -> None:
        """Remember err; the next connection attempt waits reconnect_min * 2^(failures-1) s."""
        self._failures += 1
        s = self.settings
        self._next_attempt = self._clock() + min(s.reconnect_max_seconds,
                                                 s.reconnect_min_seconds * 2 ** (self._failures - 1))
        self._last_error = err

    def _attempt(self, fn: Callable[[], Any], doing: str) -> tuple[bool, Any]:
        """(True, fn()) or (False, the JmxError of a broken connection); other errors raise."""
        try:
            return True, fn()
        except BatchFailure as e:
            self._stats.round_trips += e.round_trips
            if self._aborted:
                raise self._stopped() from None
            return False, self._translate(e.java, doing)
        except self._JException as e:
            if self._aborted:
                raise self._stopped() from None
            error = self._translate(e, doing)
            if not isinstance(e, self._IOException) and not isinstance(error, JmxMemoryError):
                raise error from None  # the MBean failed, not the connection
            return False, error
