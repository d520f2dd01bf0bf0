"""One client connection, from accept to close: h11 parses and frames HTTP/1.1, endpoints.py
decides what to answer. A client's mistake (a timeout, HTTP/0.9 or garbage, plain HTTP on the TLS
port, a disconnect mid-request) is answered with its status or closed quietly, counted in
kafka_jmx_sidecar_http_client_errors_total{reason} and logged as one debug line, never a traceback.

TLS: the handshake runs per connection with the web config's current SSLContext, so a rotated
certificate, key or client CA (web_config_reload.py) applies to the next connection; a client
certificate without one of `client_allowed_sans` ends the connection right after the handshake.

The GIL: the poll thread holds it most of the time, and every turn of the loop and every
system call of the loop's thread waits up to the switch interval to get it back. So an answer
is driven on the loop without an asyncio Task, a /metrics body that was quick lately is taken
on the loop, and a big body on plain TCP is written by a sender thread blocked in the kernel
until the client has read it (as http.server wrote it): on the loop, each part the client reads
would be a wake-up waiting for the GIL. Threads: a few workers, and at most `max_responses`
senders, whatever the number of connections.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import socket
import ssl
import struct
import time
from http import HTTPStatus
from typing import TYPE_CHECKING

import h11

from kafka_jmx_sidecar.exporter.http.endpoints import Answer, Request, answer
from kafka_jmx_sidecar.exporter.http.framing import SERVER, error_bytes, one_line
from kafka_jmx_sidecar.exporter.http.shared import Offload, offloaded_pieces
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig
from kafka_jmx_sidecar.exporter.output.self_metrics import ClientError

if TYPE_CHECKING:
    from kafka_jmx_sidecar.exporter.http.shared import Shared

log = logging.getLogger("kafka_jmx_sidecar.http")


class Connection(asyncio.Protocol):
    """One client connection, from accept to close."""

    def __init__(self, server: "Shared"):
        self.server = server
        self.loop = server.loop
        self.limits = server.limits
        self.transport: asyncio.Transport | None = None
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.max_header_bytes)
        self.peer = "?"
        self.client = "?"  # the peer's address without its port: password checks are bounded per address
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
        self.sock = None  # the plain TCP socket, for send_blocking

    # --- asyncio.Protocol
    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.client = str(peer[0]) if peer else "?"
        if len(self.server.connections) >= self.server.max_connections:
            self.closed = True
            self.server.client_error(ClientError.TOO_MANY_CONNECTIONS, self.peer, "the connection limit is reached")
            transport.abort()
            return
        self.server.opened(self)
        self._arm("request", self.limits.header_timeout)
        web = self.server.web()
        if web.ssl_context is None:
            self._serve_on(transport)
        else:
            self.task = self.loop.create_task(self._handshake(web))  # held: the loop keeps tasks weakly

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

    async def _handshake(self, web: WebConfig) -> None:
        raw = self.transport
        try:
            # the header timer (which includes the handshake) fires first and counts the timeout
            tls = await self.loop.start_tls(raw, self, web.ssl_context, server_side=True,
                                            ssl_handshake_timeout=self.limits.header_timeout + 5)
        except (OSError, EOFError, asyncio.CancelledError) as e:  # ssl.SSLError is an OSError
            if not self.closed:
                reason = ClientError.TLS_HANDSHAKE if isinstance(e, ssl.SSLError) else ClientError.DISCONNECTED
                self.server.client_error(reason, self.peer, one_line(e))
                raw.abort()
            self._gone()  # a connection lost in the handshake never reaches connection_lost
            return
        if self.closed or tls is None:  # closed during the handshake (start_tls then gives None)
            if tls is not None:
                tls.abort()
            self._gone()
            return
        refused = web.client_refused(tls.get_extra_info("peercert"))
        if refused:
            # Go's VerifyPeerCertificate fails the handshake; Python's ssl has no such hook, so the
            # connection ends as soon as the handshake is done, before a byte of a request is read
            self.server.client_error(ClientError.TLS_HANDSHAKE, self.peer, refused)
            self.closed = True
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
                    self.server.client_error(ClientError.BAD_REQUEST, self.peer, one_line(e))
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
            if not isinstance(step, Offload):  # an asyncio future (the semaphore, a drain): it hands
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
        self.transport.write(error_bytes(status))
        self._close()

    async def _respond(self, event: h11.Request) -> None:
        headers: dict[str, str] = {}
        for name, value in event.headers:
            name = name.decode("latin-1")
            value = value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        request = Request(event.method.decode("ascii", "replace"), event.target.decode("latin-1"), headers,
                          self.client)
        server = self.server
        try:
            async with server.responding:
                if self.closed:
                    return
                web = server.web()
                got = await answer(request, web, server.collector, server.logins, server.body)
                if self.closed:  # went away while the answer was made (counted in connection_lost)
                    return
                await self._write(got, web, request.method == "HEAD")
        except (ConnectionError, TimeoutError) as e:
            if not self.closed:
                reason = ClientError.DISCONNECTED if isinstance(e, ConnectionError) else ClientError.TIMEOUT
                server.client_error(reason, self.peer, f"{request.method} {request.target}: {one_line(e)}")
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
            chunks = offloaded_pieces(iter(chunks), self.server.work)
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
            await Offload(self.server.senders, send_blocking, (self.sock, (start, *body, end), deadline))
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


def send_blocking(sock, pieces: tuple, deadline: float) -> None:
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
