"""The HTTP endpoint: /metrics serves the collector's current snapshot (the request never waits on
the broker), /-/healthy and /-/ready for probes. TLS and basic auth come from the web config."""
from __future__ import annotations

import base64
import binascii
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Iterable

from exporter import exposition
from exporter.snapshot import OPENMETRICS, TEXT
from exporter.web_config import WebConfig

if TYPE_CHECKING:
    from exporter.collector import Collector

log = logging.getLogger("kafka_jmx_sidecar.http")

_LANDING = b"""<html><head><title>kafka-jmx-sidecar</title></head><body>
<h1>kafka-jmx-sidecar</h1><p><a href="/metrics">Metrics</a></p></body></html>
"""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: Prometheus reuses its connection
    server_version = "kafka-jmx-sidecar"
    collector: "Collector"
    web: WebConfig

    def log_message(self, fmt, *args):  # access logs stay at debug level
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s", self.address_string(), fmt % args)

    def _send(self, code: int, chunks: Iterable[bytes], content_type: str, extra: dict | None = None,
              head: bool = False, length: int | None = None) -> None:
        if length is None:
            chunks = list(chunks)
            length = sum(map(len, chunks))
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        for k, v in {**self.web.headers, **(extra or {})}.items():
            self.send_header(k, v)
        self._headers_buffer.append(b"\r\n")
        if head:
            chunks = ()
        elif isinstance(chunks, (list, tuple)) and len(chunks) <= 2:
            # headers and body in one write: each write gives up the GIL and waits to get it back
            self._headers_buffer.extend(chunks)
            chunks = ()
        self.wfile.write(b"".join(self._headers_buffer))
        self._headers_buffer = []
        for c in chunks:
            self.wfile.write(c)

    def _authorized(self) -> bool:
        if not self.web.users:
            return True
        header = self.headers.get("Authorization", "")
        user = password = None
        if header.startswith("Basic "):
            encoded = header[6:]
            try:
                # Padding is optional, as for Java's decoder (jmx_exporter); anything else is strict.
                decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                decoded = ""
            if ":" in decoded:
                user, _, password = decoded.partition(":")
        if self.web.authorized(user, password):
            return True
        # jmx_exporter (the JDK's BasicAuthenticator) challenges only a request with no credentials
        # or wrong Basic ones, not one that sent another scheme.
        challenge = not header or header.startswith("Basic ") or self.web.challenge_any_scheme
        self._send(401, [b"Unauthorized\n"], "text/plain; charset=utf-8",
                   {"WWW-Authenticate": self.web.challenge} if challenge else {})
        return False

    def do_HEAD(self):
        self.do_GET(head=True)

    def do_GET(self, head: bool = False):
        path = self.path.split("?", 1)[0]
        if path == "/-/healthy":
            return self._send(200, [b"Healthy\n"], "text/plain; charset=utf-8", head=head)
        if path == "/-/ready":
            if self.collector.ready:
                return self._send(200, [b"Ready\n"], "text/plain; charset=utf-8", head=head)
            # Probes need no credentials, so this says nothing about the broker's address.
            return self._send(503, [b"Not ready: no complete poll of the broker yet\n"],
                              "text/plain; charset=utf-8", head=head)
        if not self._authorized():
            return
        if path == "/metrics":
            content_type = exposition.choose_content_type(self.headers.get("Accept"))
            fmt = OPENMETRICS if content_type == exposition.OPENMETRICS_CONTENT_TYPE else TEXT
            gz = "gzip" in (self.headers.get("Accept-Encoding") or "")
            extra = {"Content-Encoding": "gzip"} if gz else {}
            length, chunks = self.collector.response(fmt, gz)
            return self._send(200, chunks, content_type, extra, head, length)
        if path == "/":
            return self._send(200, [_LANDING], "text/html; charset=utf-8", head=head)
        self._send(404, [b"Not found\n"], "text/plain; charset=utf-8", head=head)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    ssl_context = None

    def get_request(self):
        sock, addr = super().get_request()
        if self.ssl_context is not None:
            # The handshake runs in the request's own thread, not in the accept loop.
            sock = self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr


class MetricsServer:
    def __init__(self, host: str, port: int, collector: "Collector", web: WebConfig):
        handler = type("Handler", (_Handler,), {"collector": collector, "web": web})
        server = type("Server", (_Server,), {"address_family": socket.AF_INET6 if ":" in host else socket.AF_INET})
        self._server = server((host, port), handler)
        self._server.ssl_context = web.ssl_context
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
