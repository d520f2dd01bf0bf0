"""What the connections share (`Shared`, in the event loop's thread): the thread pools, the
limits, the open connections, the self metrics, the logins (logins.py); and `Offload`, the work an answer hands to a
thread: a /metrics body that was quick lately is taken on the loop instead, since with the poll
holding the GIL each hand-over to a thread and back waits for it.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from typing import TYPE_CHECKING, Callable

from kafka_jmx_sidecar.exporter.http.endpoints import Served
from kafka_jmx_sidecar.exporter.http.framing import Date
from kafka_jmx_sidecar.exporter.http.limits import Limits
from kafka_jmx_sidecar.exporter.http.logins import Logins
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig

if TYPE_CHECKING:
    from kafka_jmx_sidecar.exporter.http.connection import Connection

log = logging.getLogger("kafka_jmx_sidecar.http")

# A body call runs on the loop while the last one for its (format, encoding) took less than
# _QUICK_SECONDS and ended less than _WARM_SECONDS ago, well within the collector's 10 minutes
# after which a format nobody asked for is no longer rendered by the poll.
_QUICK_SECONDS = 0.005
_WARM_SECONDS = 60.0


class Offload:
    """`await server.work(fn, *args)` in an answer's coroutine: fn runs in a worker thread (or
    at once when calls under `key` were quick lately) and the coroutine goes on with its result
    (see Connection._drive)."""

    __slots__ = ("pool", "fn", "args", "key")

    def __init__(self, pool: concurrent.futures.Executor, fn, args: tuple, key=None):
        self.pool, self.fn, self.args, self.key = pool, fn, args, key

    def __await__(self):
        return (yield self)


async def offloaded_pieces(chunks, work):
    while True:
        piece = await work(next, chunks, None)
        if piece is None:
            return
        yield piece


class Shared:
    """What the connections share; lives in the event loop's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, collector: Served, web: Callable[[], WebConfig],
                 limits: Limits, max_connections: int):
        self.loop, self.collector, self.web, self.limits = loop, collector, web, limits
        self.max_connections = max_connections
        self.tls = web().ssl_context is not None
        self.metrics = getattr(collector, "metrics", None)
        self.connections: set[Connection] = set()
        self.responding = asyncio.Semaphore(limits.max_responses)
        self.stopping = False
        self.date = Date()
        self._timings: dict = {}  # body key -> (when, seconds) of its last call
        self._workers = concurrent.futures.ThreadPoolExecutor(limits.workers, thread_name_prefix="http-worker")
        self.logins = Logins(loop, limits, self.metrics)  # password checks, failed logins
        # one thread per big answer being written, at most max_responses (the semaphore's bound)
        self.senders = concurrent.futures.ThreadPoolExecutor(limits.max_responses, thread_name_prefix="http-send")

    def work(self, fn, *args) -> Offload:
        return Offload(self._workers, fn, args)

    def body(self, fn, *args) -> Offload:
        """The /metrics body: `collector.response(fmt, gzip)`. It is a cached bytes object but
        for a format no poll rendered lately, which is rendered then (seconds at 40,000
        partitions): the first call for a (format, encoding) and any after a pause or a slow
        one go to a worker; while calls stay quick they run on the loop (a worker costs three
        hand-overs of the GIL, each waiting for the poll)."""
        return Offload(self._workers, fn, args, key=args)

    def warm(self, key) -> bool:
        last = self._timings.get(key) if key is not None else None
        return last is not None and last[1] < _QUICK_SECONDS and time.monotonic() - last[0] < _WARM_SECONDS

    def timed(self, key, fn, *args):
        if key is None:
            return fn(*args)
        started = time.monotonic()
        try:
            return fn(*args)
        finally:
            ended = time.monotonic()
            self._timings[key] = (ended, ended - started)

    def opened(self, conn: Connection) -> None:
        self.connections.add(conn)
        if self.metrics is not None:
            self.metrics.http_connections.set(len(self.connections))

    def lost(self, conn: Connection) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
            if self.metrics is not None:
                self.metrics.http_connections.set(len(self.connections))

    def client_error(self, reason: str, peer: str, detail: str) -> None:
        if self.metrics is not None:
            self.metrics.http_client_errors.labels(reason).inc()
        log.debug("client %s: %s (%s)", peer, reason, detail)

    def shutdown_pools(self) -> None:
        for pool in (self._workers, self.senders):
            pool.shutdown(wait=False, cancel_futures=True)
        self.logins.shutdown()
