"""What each path answers: /metrics (the collector's current snapshot, in the format the Accept
header chooses, gzipped when Accept-Encoding takes gzip), /-/healthy and /-/ready for probes (no
credentials needed), the landing page, 404 for the rest; basic auth from the web config
(basic_auth.py; the checks bounded and the failures counted by logins.py).

No sockets here: connection.py parses the request, calls `answer` and writes the Answer. The
work that may take long (a password hash, the body) runs off the event loop, through `logins`
and the `work` callable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, Mapping, Protocol

from kafka_jmx_sidecar.exporter.output import exposition
from kafka_jmx_sidecar.exporter.output.exposition import OPENMETRICS, TEXT
from kafka_jmx_sidecar.exporter.http.basic_auth import is_basic, parse_authorization
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig
from kafka_jmx_sidecar.exporter.output.self_metrics import AuthFailure

Offload = Callable[..., Awaitable]  # offload(fn, *args): fn(*args) in a worker thread

TEXT_PLAIN = "text/plain; charset=utf-8"
LANDING = b"""<html><head><title>kafka-jmx-sidecar</title></head><body>
<h1>kafka-jmx-sidecar</h1><p><a href="/metrics">Metrics</a></p></body></html>
"""


class Served(Protocol):
    """What the endpoint serves (the poll's Collector), as far as the endpoint uses it. The
    server also counts connections and client errors in its `metrics` (a SelfMetrics) when it
    has one."""

    @property
    def ready(self) -> bool:
        """A complete poll of the broker has been made."""

    def response(self, fmt: str, gzip_wanted: bool) -> tuple[int, Iterable[bytes]]:
        """The /metrics body in `fmt` (TEXT or OPENMETRICS) as (length, chunks)."""


@dataclass(frozen=True)
class Request:
    method: str
    target: str
    headers: Mapping[str, str]  # lower-case names; repeated headers joined with ", "
    client: str = "?"  # the client's address


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    length: int
    chunks: Iterable[bytes]  # a list or tuple is ready; anything else is an iterator to advance off the loop
    headers: tuple[tuple[str, str], ...] = ()


def _plain(status: int, text: bytes, headers: tuple = ()) -> Answer:
    return Answer(status, TEXT_PLAIN, len(text), (text,), headers)


def gzip_accepted(accept_encoding: str | None) -> bool:
    """Whether `Accept-Encoding` takes gzip (RFC 9110 12.5.3): listed, or covered by `*`, with a
    q-value above 0. `gzip;q=0` refuses it; a malformed entry counts as absent."""
    if not accept_encoding:
        return False
    q_of: dict[str, float] = {}
    for item in accept_encoding.split(","):
        coding, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for p in params:
            name, _, value = p.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = -1.0
                if not 0 <= q <= 1:
                    q = -1.0
        if coding and q >= 0:
            q_of[coding.lower()] = q
    for name in ("gzip", "x-gzip", "*"):
        if name in q_of:
            return q_of[name] > 0
    return False


class Logins(Protocol):
    """The password checks and failed logins (logins.Logins)."""

    def check(self, web: WebConfig, user: str, password: str, client: str) -> Awaitable[bool] | None:
        """The verdict, checked off the loop; None when too many checks are under way."""

    def failed(self, reason: str, client: str) -> None:
        """Count and log a refused login (an AuthFailure reason)."""


async def _authorized(request: Request, web: WebConfig, logins: Logins) -> Answer | None:
    """None when the request may go on, else the 401 (or 429) to send."""
    if not web.users:
        return None
    header = request.headers.get("authorization", "")
    credentials = parse_authorization(header)
    if isinstance(credentials, str):
        reason = credentials
    else:
        user, password = credentials
        ok = web.remembered(user, password)
        if ok is None:
            pending = logins.check(web, user, password, request.client)
            if pending is None:  # too many checks under way: no hash, no wait
                logins.failed(AuthFailure.BUSY, request.client)
                return _plain(429, b"Too many password checks under way, try again\n", (("Retry-After", "1"),))
            ok = await pending
        if ok:
            return None
        reason = AuthFailure.WRONG_PASSWORD if user in web.users else AuthFailure.UNKNOWN_USER
    logins.failed(reason, request.client)
    # jmx_exporter (the JDK's BasicAuthenticator) challenges only a request with no credentials
    # or wrong Basic ones, not one that sent another scheme.
    challenge = not header or is_basic(header) or web.challenge_any_scheme
    return _plain(401, b"Unauthorized\n", (("WWW-Authenticate", web.challenge),) if challenge else ())


async def answer(request: Request, web: WebConfig, collector: Served, logins: Logins, work: Offload) -> Answer:
    if request.method not in ("GET", "HEAD"):
        return _plain(405, b"Method not allowed\n", (("Allow", "GET, HEAD"),))
    path = request.target.split("?", 1)[0]
    if path == "/-/healthy":
        return _plain(200, b"Healthy\n")
    if path == "/-/ready":
        if collector.ready:
            return _plain(200, b"Ready\n")
        # Probes need no credentials, so this says nothing about the broker's address.
        return _plain(503, b"Not ready: no complete poll of the broker yet\n")
    refused = await _authorized(request, web, logins)
    if refused is not None:
        return refused
    if path == "/metrics":
        content_type = exposition.choose_content_type(request.headers.get("accept"))
        fmt = OPENMETRICS if content_type == exposition.OPENMETRICS_CONTENT_TYPE else TEXT
        gz = gzip_accepted(request.headers.get("accept-encoding"))
        # the snapshot may render a format on its first request: never on the event loop
        length, chunks = await work(collector.response, fmt, gz)
        return Answer(200, content_type, length, chunks, (("Content-Encoding", "gzip"),) if gz else ())
    if path == "/":
        return Answer(200, "text/html; charset=utf-8", len(LANDING), (LANDING,))
    return _plain(404, b"Not found\n")
