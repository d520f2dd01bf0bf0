"""What the server writes around h11: the Server and Date headers, the error answer written when
h11's state cannot be trusted, and an exception told in one line for the logs.
"""
from __future__ import annotations

import time
from email.utils import formatdate

SERVER = "kafka-jmx-sidecar"  # the Server header: no version, no Python

_REASONS = {400: "Bad Request", 413: "Content Too Large", 431: "Request Header Fields Too Large",
            500: "Internal Server Error"}


def error_bytes(status: int) -> bytes:
    """A complete answer written without h11 (whose state may be broken by the request)."""
    body = f"{_REASONS.get(status, 'Error')}\n".encode()
    return (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nServer: {SERVER}\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode() + body


class Date:
    """The Date header, formatted once a second."""

    def __init__(self) -> None:
        self._second, self._text = -1, ""

    def __call__(self) -> str:
        now = int(time.time())
        if now != self._second:
            self._second, self._text = now, formatdate(now, usegmt=True)
        return self._text


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
