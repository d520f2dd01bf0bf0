"""The HTTP server of /metrics, fit for the open network: one asyncio event loop in a thread of
its own holds every connection (an idle one costs a few kilobytes, not a thread).

    limits.py      Limits: how many connections, how long, how big
    connection.py  one connection: TLS, HTTP/1.1 through h11, the answer written
    shared.py      what the connections share: thread pools, work off the loop, the self metrics
    framing.py     the Server and Date headers, error answers written without h11

Why not a ready-made server: uvicorn never times out a connection that sends nothing and takes
one SSLContext for its lifetime; hypercorn and aiohttp also fix the context at start and have no
connection limit; cheroot does the TLS handshake in its accept thread. The response is bytes
the snapshot already holds, so the server only has to copy them out.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import threading
from typing import TYPE_CHECKING, Union

from kafka_jmx_sidecar.exporter.http.connection import Connection
from kafka_jmx_sidecar.exporter.http.endpoints import Served
from kafka_jmx_sidecar.exporter.http.framing import one_line
from kafka_jmx_sidecar.exporter.http.limits import Limits, raise_file_limit
from kafka_jmx_sidecar.exporter.http.shared import Shared
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig

if TYPE_CHECKING:
    from kafka_jmx_sidecar.exporter.http.web_config_reload import WebConfigReloader

__all__ = ["Limits", "MetricsServer"]

log = logging.getLogger("kafka_jmx_sidecar.http")


def _exception_handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """asyncio's own reports (an accept that failed for want of file descriptors, a transport
    error): one line. A bug of ours shows its trace where it is caught (Connection._respond)."""
    exc = context.get("exception")
    log.warning("http: %s%s", context.get("message", "error"), f": {one_line(exc)}" if exc else "")


class MetricsServer:
    """Serves until `stop`: `web` is a fixed WebConfig or a WebConfigReloader (its current one)."""

    def __init__(self, host: str, port: int, collector: Served,
                 web: Union[WebConfig, "WebConfigReloader"], limits: Limits = Limits()):
        self._collector, self._limits = collector, limits
        self._web = (lambda: web) if isinstance(web, WebConfig) else (lambda: web.current)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(min(socket.SOMAXCONN, 1024))
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        self._sock = sock
        self._max_connections = raise_file_limit(limits.max_connections)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Shared | None = None
        self._listener: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()

    @property
    def port(self) -> int:
        return self._sock.getsockname()[1]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="http", daemon=True)
        self._thread.start()
        self._started.wait(30)

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        loop.set_exception_handler(_exception_handler)
        asyncio.set_event_loop(loop)
        try:
            self._server = Shared(loop, self._collector, self._web, self._limits, self._max_connections)
            self._listener = loop.run_until_complete(
                loop.create_server(lambda: Connection(self._server), sock=self._sock))
        finally:
            self._started.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _shutdown(self, grace: float) -> None:
        server = self._server
        server.stopping = True
        self._listener.close()
        for conn in list(server.connections):
            if not conn.busy:
                conn._close(abort=True)
        deadline = self._loop.time() + grace
        while any(c.busy for c in server.connections) and self._loop.time() < deadline:
            await asyncio.sleep(0.05)
        for conn in list(server.connections):
            conn._close(abort=True)
        server.shutdown_pools()

    def stop(self, grace: float = 2.0) -> None:
        """Stop listening, let answers being written finish (up to `grace` seconds), close the rest."""
        if self._loop is None or self._loop.is_closed():
            self._sock.close()
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(grace), self._loop).result(grace + 5)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._sock.close()
