"""The HTTP server of /metrics, fit for the open network: one asyncio event loop in a thread of
its own holds every connection (an idle one costs a few kilobytes, not a thread), h11 parses and
frames HTTP/1.1, and exporter/http_endpoints.py decides what to answer.

Bounds (`Limits`): connections (more are closed at once), time to send the request headers
(from the connection, TLS handshake included, or the first byte after a keep-alive pause),
keep-alive idle time and requests per connection, header size, responses being
written at once and the time to write one, worker threads. A client's mistake (a timeout,
HTTP/0.9 or garbage, plain HTTP on the TLS port, a disconnect mid-request) is answered with
its status or closed quietly, counted in kafka_jmx_sidecar_http_client_errors_total{reason}
and logged as one debug line, never a traceback.

TLS: the handshake runs per connection with the web config's current SSLContext, so a rotated
certificate, key or client CA (exporter/web_config_reload.py) applies to the next connection.

The GIL: the poll thread holds it most of the time, and every turn of the loop and every
system call of the loop's thread waits up to the switch interval to get it back. So an answer
is driven on the loop without an asyncio Task, a /metrics body that was quick lately is taken
on the loop, and a big body on plain TCP is written by a sender thread blocked in the kernel
until the client has read it (as http.server wrote it): on the loop, each part the client reads
would be a wake-up waiting for the GIL. Threads: a few workers, and at most `max_responses`
senders, whatever the number of connections.

Why not a ready-made server: uvicorn never times out a connection that sends nothing and takes
one SSLContext for its lifetime; hypercorn and aiohttp also fix the context at start and have no
connection limit; cheroot does the TLS handshake in its accept thread. The response is bytes
the snapshot already holds, so the server only has to copy them out.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import resource
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import TYPE_CHECKING, Callable, Union

import h11

from kafka_jmx_sidecar.exporter.http.endpoints import Answer, Request, answer
from kafka_jmx_sidecar.exporter.output.self_metrics import ClientError
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig

if TYPE_CHECKING:
    from kafka_jmx_sidecar.exporter.poll.collector import Collector
    from kafka_jmx_sidecar.exporter.http.web_config_reload import WebConfigReloader

log = logging.getLogger("kafka_jmx_sidecar.http")

SERVER = "kafka-jmx-sidecar"  # the Server header: no version, no Python


@dataclass(frozen=True)
class Limits:
    max_connections: int = 2048  # more are closed at once (counted too_many_connections)
    header_timeout: float = 10.0  # seconds to send the request line and headers (and a small body), from the
    #                               connection (TLS handshake included) or the first byte after a keep-alive pause
    idle_timeout: float = 60.0  # seconds a kept-alive connection may wait for its next request
    max_requests: int = 1000  # per connection; the last answer says Connection: close
    max_header_bytes: int = 16384  # request line and headers; more is a 431
    max_body_bytes: int = 65536  # a GET carries none; more is a 413
    max_responses: int = 64  # responses being written at once (and sender threads); others wait their turn
    write_timeout: float = 60.0  # seconds to write one response (a client that does not read)
    write_chunk: int = 1 << 20  # bytes handed to the socket at a time: bounds the copies a slow reader holds
    workers: int = 4  # threads that build bodies
    password_workers: int = 2  # threads that check passwords (bcrypt, PBKDF2), apart so a flood of bad ones
    #                            cannot hold up the scrapes whose credentials are remembered


# A body call runs on the loop while the last one for its (format, encoding) took less than
# _QUICK_SECONDS and ended less than _WARM_SECONDS ago, well within the collector's 10 minutes
# after which a format nobody asked for is no longer rendered by the poll.
_QUICK_SECONDS = 0.005
_WARM_SECONDS = 60.0

_REASONS = {400: "Bad Request", 413: "Content Too Large", 431: "Request Header Fields Too Large",
            500: "Internal Server Error"}


def _error_bytes(status: int) -> bytes:
    """A complete answer written without h11 (whose state may be broken by the request)."""
    body = f"{_REASONS.get(status, 'Error')}\n".encode()
    return (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nServer: {SERVER}\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode() + body


class _Date:
    """The Date header, formatted once a second."""

    def __init__(self) -> None:
        self._second, self._text = -1, ""

    def __call__(self) -> str:
        now = int(time.time())
        if now != self._second:
            self._second, self._text = now, formatdate(now, usegmt=True)
        return self._text


class _Connection(asyncio.Protocol):
    """One client connection, from accept to close."""

    def __init__(self, server: "_Server"):
        self.server = server
        self.loop = server.loop
        self.limits = server.limits
        self.transport: asyncio.Transport | None = None
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.max_header_bytes)
        self.peer = "?"
        self.ready = False  # TLS (if any) done: requests may be answered
        self.busy = False  # a request is being answered
        self.closed = False
        self.eof = False
        self.requests = 0
        self.body_bytes = 0
        self.timer: asyncio.TimerHandle | None = None
        self.timer_kind = ""
        self.writable = True
        self.drained: asyncio.Future | None = None
        self.task: asyncio.Task | None = None  # the TLS handshake
        self.sock = None  # the plain TCP socket, for _send_blocking

    # --- asyncio.Protocol
    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        if len(self.server.connections) >= self.server.max_connections:
            self.closed = True
            self.server.client_error(ClientError.TOO_MANY_CONNECTIONS, self.peer, "the connection limit is reached")
            transport.abort()
            return
        self.server.opened(self)
        self._arm("request", self.limits.header_timeout)
        context = self.server.web().ssl_context
        if context is None:
            self._serve_on(transport)
        else:
            self.task = self.loop.create_task(self._handshake(context))  # held: the loop keeps tasks weakly

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.h11.receive_data(data)
        if self.timer_kind == "idle":  # the next request began: its headers get the header time
            self._arm("request", self.limits.header_timeout)
        self._process()

    def eof_received(self) -> bool:
        self.eof = True
        if not self.closed and not self.busy:
            self.h11.receive_data(b"")
            self._process()
        # keep the socket open for writing an answer to a request that came before the EOF
        # (TLS cannot half-close: asyncio warns when asked to)
        return self.busy and self.server.tls is False

    def connection_lost(self, exc: Exception | None) -> None:
        partial = bool(self.h11.trailing_data[0])
        if not self.closed and (self.busy or partial):
            self.server.client_error(ClientError.DISCONNECTED, self.peer,
                                     "went away mid-response" if self.busy else "went away mid-request")
        self._gone()

    def _gone(self) -> None:
        """The connection is over (may be called more than once)."""
        self.closed = True
        self._disarm()
        if self.drained is not None and not self.drained.done():
            self.drained.set_exception(ConnectionResetError("the client went away"))
        self.server.lost(self)

    def pause_writing(self) -> None:
        self.writable = False

    def resume_writing(self) -> None:
        self.writable = True
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    # --- set-up
    def _serve_on(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.sock = transport.get_extra_info("socket") if not self.server.tls else None
        transport.set_write_buffer_limits(high=self.limits.write_chunk)
        self.ready = True

    async def _handshake(self, context: ssl.SSLContext) -> None:
        raw = self.transport
        try:
            # the header timer (which includes the handshake) fires first and counts the timeout
            tls = await self.loop.start_tls(raw, self, context, server_side=True,
                                            ssl_handshake_timeout=self.limits.header_timeout + 5)
        except (OSError, EOFError, asyncio.CancelledError) as e:  # ssl.SSLError is an OSError
            if not self.closed:
                reason = ClientError.TLS_HANDSHAKE if isinstance(e, ssl.SSLError) else ClientError.DISCONNECTED
                self.server.client_error(reason, self.peer, _one_line(e))
                raw.abort()
            self._gone()  # a connection lost in the handshake never reaches connection_lost
            return
        if self.closed or tls is None:  # closed during the handshake (start_tls then gives None)
            if tls is not None:
                tls.abort()
            self._gone()
            return
        self._serve_on(tls)
        self._process()

    # --- timers
    def _arm(self, kind: str, seconds: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer_kind = kind
        self.timer = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer, self.timer_kind = None, ""

    def _expired(self) -> None:
        if self.closed:
            return
        kind, self.timer = self.timer_kind, None
        if kind == "request":
            what = ("the TLS handshake was not complete" if not self.ready
                    else "no request" if self.requests == 0 and not self.h11.trailing_data[0]
                    else "the request was not complete")
            self.server.client_error(ClientError.TIMEOUT, self.peer, f"{what} after {self.limits.header_timeout:g} s")
        # an idle keep-alive connection closes quietly: that is its normal end
        self._close(abort=True)

    # --- requests
    def _process(self) -> None:
        """Read events until a request is complete (then answer it) or more data is needed."""
        while self.ready and not self.busy and not self.closed:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as e:
                if self.eof:
                    self.server.client_error(ClientError.DISCONNECTED, self.peer, "went away mid-request")
                    self._close(abort=True)
                else:
                    self.server.client_error(ClientError.BAD_REQUEST, self.peer, _one_line(e))
                    self._fail(e.error_status_hint)
                return
            if event is h11.NEED_DATA:
                return
            if isinstance(event, h11.Request):
                # h11 bounds a request still arriving; one that came whole in a read is measured here
                size = len(event.target) + sum(len(n) + len(v) + 4 for n, v in event.headers)
                if size > self.limits.max_header_bytes:
                    self.server.client_error(ClientError.BAD_REQUEST, self.peer, f"request headers of {size} bytes")
                    self._fail(431)
                    return
                self.body_bytes = 0
                self.request = event
            elif isinstance(event, h11.Data):
                self.body_bytes += len(event.data)
                if self.body_bytes > self.limits.max_body_bytes:
                    self.server.client_error(ClientError.BAD_REQUEST, self.peer, "a request body too large")
                    self._fail(413)
                    return
            elif isinstance(event, h11.EndOfMessage):
                self._disarm()
                self.busy = True
                self.transport.pause_reading()  # pipelined requests wait in the socket
                self._drive(self._respond(self.request))
                return
            elif isinstance(event, h11.ConnectionClosed):
                self._close()
                return
            else:  # h11.PAUSED cannot come while not busy; nothing else is expected
                return

    def _drive(self, coro, value=None, error: BaseException | None = None) -> None:
        """Run an answer's coroutine up to its next wait, here and now. Not an asyncio Task: a Task
        starts a turn of the loop later and takes two more to come back from a worker thread; with
        the poll holding the GIL, every turn of the loop and every system call waits for it."""
        while True:
            try:
                step = coro.throw(error) if error is not None else coro.send(value)
            except StopIteration:
                return
            value = error = None
            if not isinstance(step, _Offload):  # an asyncio future (the semaphore, a drain): it hands
                step._asyncio_future_blocking = False  # its result back itself
                step.add_done_callback(lambda f: self._drive(coro))
                return
            if not self.server.warm(step.key):
                done = step.pool.submit(self.server.timed, step.key, step.fn, *step.args)
                done.add_done_callback(lambda f: self._resume_soon(coro, f))
                return
            try:  # known to be quick lately: no hand-over to a thread and back
                value = self.server.timed(step.key, step.fn, *step.args)
            except Exception as e:
                error = e

    def _resume_soon(self, coro, done: concurrent.futures.Future) -> None:
        """In the worker thread: the loop resumes `coro` with what the work gave."""
        if done.cancelled():  # the server stops
            return
        error = done.exception()
        try:
            if error is not None:
                self.loop.call_soon_threadsafe(self._drive, coro, None, error)
            else:
                self.loop.call_soon_threadsafe(self._drive, coro, done.result())
        except RuntimeError:  # the loop is closed: the server stopped
            pass

    def _fail(self, status: int) -> None:
        self.transport.write(_error_bytes(status))
        self._close()

    async def _respond(self, event: h11.Request) -> None:
        headers: dict[str, str] = {}
        for name, value in event.headers:
            name = name.decode("latin-1")
            value = value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        request = Request(event.method.decode("ascii", "replace"), event.target.decode("latin-1"), headers)
        server = self.server
        try:
            async with server.responding:
                if self.closed:
                    return
                web = server.web()
                got = await answer(request, web, server.collector, server.check_password, server.body)
                if self.closed:  # went away while the answer was made (counted in connection_lost)
                    return
                await self._write(got, web, request.method == "HEAD")
        except (ConnectionError, TimeoutError) as e:
            if not self.closed:
                reason = ClientError.DISCONNECTED if isinstance(e, ConnectionError) else ClientError.TIMEOUT
                server.client_error(reason, self.peer, f"{request.method} {request.target}: {_one_line(e)}")
                self._close(abort=True)
            return
        except Exception:  # a bug of ours, not the client's: say so, with the trace
            log.exception("answering %s %s failed", request.method, request.target)
            if not self.closed:
                if self.h11.our_state is h11.SEND_RESPONSE:
                    self._fail(500)
                else:
                    self._close(abort=True)
            return
        if self.closed:
            return
        if self.h11.our_state is h11.MUST_CLOSE or self.h11.their_state is not h11.DONE or self.eof:
            self._close()
            return
        self.h11.start_next_cycle()
        self.busy = False
        self._arm("idle" if not self.h11.trailing_data[0] else "request",
                  self.limits.idle_timeout if not self.h11.trailing_data[0] else self.limits.header_timeout)
        self.transport.resume_reading()
        self._process()

    async def _write(self, got: Answer, web: WebConfig, head: bool) -> None:
        self.requests += 1
        headers = [("Server", SERVER), ("Date", self.server.date()), ("Content-Type", got.content_type),
                   ("Content-Length", str(got.length)), *web.headers.items(), *got.headers]
        if self.requests >= self.limits.max_requests or self.server.stopping:
            headers.append(("Connection", "close"))
        deadline = self.loop.time() + self.limits.write_timeout
        start = self.h11.send(h11.Response(status_code=got.status, headers=headers,
                                           reason=HTTPStatus(got.status).phrase))
        chunks = got.chunks
        if head:
            chunks = ()
        elif not isinstance(chunks, (list, tuple)):  # decompressed piece by piece: off the loop
            chunks = _pieces(iter(chunks), self.server.work)
        elif len(chunks) == 1 and len(chunks[0]) <= 65536:
            # a small answer goes out with its headers in one write (one segment, one system call)
            start += b"".join(self.h11.send_with_data_passthrough(h11.Data(data=chunks[0])))
            chunks = ()
        elif (len(chunks) == 1 and not self.server.tls and self.transport.get_write_buffer_size() == 0
              and self.sock is not None):
            # A big body on plain TCP is written by a thread blocked in the kernel until the client
            # has taken it, as http.server did: on the loop, each part the client reads would
            # wake the loop, and each wake-up waits for the GIL the poll holds.
            body = self.h11.send_with_data_passthrough(h11.Data(data=chunks[0]))
            end = self.h11.send(h11.EndOfMessage())
            await _Offload(self.server.senders, _send_blocking, (self.sock, (start, *body, end), deadline))
            return
        self.transport.write(start)
        step = self.limits.write_chunk
        if isinstance(chunks, (list, tuple)):
            for chunk in chunks:
                await self._send_body(chunk, step, deadline)
        else:
            async for chunk in chunks:
                await self._send_body(chunk, step, deadline)
        self.transport.write(self.h11.send(h11.EndOfMessage()))

    async def _send_body(self, chunk: bytes, step: int, deadline: float) -> None:
        view = memoryview(chunk)
        for start in range(0, len(view), step):
            if self.closed:
                raise ConnectionResetError("the client went away")
            for data in self.h11.send_with_data_passthrough(h11.Data(data=view[start:start + step])):
                self.transport.write(data)
            if not self.writable:
                drained = self.drained = self.loop.create_future()
                late = self.loop.call_at(deadline, lambda: drained.done() or drained.set_exception(
                    TimeoutError(f"the answer was not read in {self.limits.write_timeout:g} s")))
                try:
                    await drained
                finally:
                    late.cancel()

    def _close(self, abort: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        self._disarm()
        if self.transport is not None:
            self.transport.abort() if abort else self.transport.close()


def _send_blocking(sock, pieces: tuple, deadline: float) -> None:
    """In a sender thread: write `pieces` to the connection's socket, blocking (the GIL is free
    while the kernel waits for the client), until done or the loop-clock `deadline`. The loop
    leaves the socket alone meanwhile: reading is paused and its write buffer is empty."""
    dup = socket.socket(fileno=os.dup(sock.fileno()))
    try:
        dup.setblocking(True)  # the flag belongs to the shared file: set back below
        for piece in pieces:
            view = memoryview(piece)
            while view:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the answer was not read in time")
                dup.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                               struct.pack("ll", int(left), int((left % 1) * 1e6)))
                try:
                    view = view[dup.send(view):]
                except BlockingIOError:  # SO_SNDTIMEO ran out: the client took nothing meanwhile
                    raise TimeoutError("the answer was not read in time") from None
    finally:
        dup.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 0, 0))
        dup.setblocking(False)
        dup.close()


class _Offload:
    """`await server.work(fn, *args)` in an answer's coroutine: fn runs in a worker thread (or
    at once when calls under `key` were quick lately) and the coroutine goes on with its result
    (see _Connection._drive)."""

    __slots__ = ("pool", "fn", "args", "key")

    def __init__(self, pool: concurrent.futures.Executor, fn, args: tuple, key=None):
        self.pool, self.fn, self.args, self.key = pool, fn, args, key

    def __await__(self):
        return (yield self)


async def _pieces(chunks, work):
    while True:
        piece = await work(next, chunks, None)
        if piece is None:
            return
        yield piece


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class _Server:
    """What the connections share; lives in the event loop's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, collector: "Collector", web: Callable[[], WebConfig],
                 limits: Limits, max_connections: int):
        self.loop, self.collector, self.web, self.limits = loop, collector, web, limits
        self.max_connections = max_connections
        self.tls = web().ssl_context is not None
        self.metrics = getattr(collector, "metrics", None)
        self.connections: set[_Connection] = set()
        self.responding = asyncio.Semaphore(limits.max_responses)
        self.stopping = False
        self.date = _Date()
        self._timings: dict = {}  # body key -> (when, seconds) of its last call
        self._workers = concurrent.futures.ThreadPoolExecutor(limits.workers, thread_name_prefix="http-worker")
        self._hashers = concurrent.futures.ThreadPoolExecutor(limits.password_workers,
                                                              thread_name_prefix="http-password")
        # one thread per big answer being written, at most max_responses (the semaphore's bound)
        self.senders = concurrent.futures.ThreadPoolExecutor(limits.max_responses, thread_name_prefix="http-send")

    def work(self, fn, *args) -> _Offload:
        return _Offload(self._workers, fn, args)

    def body(self, fn, *args) -> _Offload:
        """The /metrics body: `collector.response(fmt, gzip)`. It is a cached bytes object but
        for a format no poll rendered lately, which is rendered then (seconds at 40,000
        partitions): the first call for a (format, encoding) and any after a pause or a slow
        one go to a worker; while calls stay quick they run on the loop (a worker costs three
        hand-overs of the GIL, each waiting for the poll)."""
        return _Offload(self._workers, fn, args, key=args)

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

    def check_password(self, fn, *args) -> _Offload:
        return _Offload(self._hashers, fn, args)

    def opened(self, conn: _Connection) -> None:
        self.connections.add(conn)
        if self.metrics is not None:
            self.metrics.http_connections.set(len(self.connections))

    def lost(self, conn: _Connection) -> None:
        if conn in self.connections:
            self.connections.discard(conn)
            if self.metrics is not None:
                self.metrics.http_connections.set(len(self.connections))

    def client_error(self, reason: str, peer: str, detail: str) -> None:
        if self.metrics is not None:
            self.metrics.http_client_errors.labels(reason).inc()
        log.debug("client %s: %s (%s)", peer, reason, detail)

    def shutdown_pools(self) -> None:
        for pool in (self._workers, self._hashers, self.senders):
            pool.shutdown(wait=False, cancel_futures=True)


def _exception_handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """asyncio's own reports (an accept that failed for want of file descriptors, a transport
    error): one line. A bug in this module shows its trace where it is caught (_respond)."""
    exc = context.get("exception")
    log.warning("http: %s%s", context.get("message", "error"), f": {_one_line(exc)}" if exc else "")


def _raise_file_limit(wanted: int) -> int:
    """Raise the soft limit on open files toward the hard one (as Go does at start) and return
    how many connections fit, keeping room for the JVM's and the poll's own files."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted + 512:
        target = wanted + 512 if hard == resource.RLIM_INFINITY else min(hard, wanted + 512)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return wanted if soft == resource.RLIM_INFINITY else min(wanted, max(16, soft - 512))


class MetricsServer:
    """Serves until `stop`: `web` is a fixed WebConfig or a WebConfigReloader (its current one)."""

    def __init__(self, host: str, port: int, collector: "Collector",
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
        self._max_connections = _raise_file_limit(limits.max_connections)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: _Server | None = None
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
            self._server = _Server(loop, self._collector, self._web, self._limits, self._max_connections)
            self._listener = loop.run_until_complete(
                loop.create_server(lambda: _Connection(self._server), sock=self._sock))
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
