"""The bounds of the HTTP server (`Limits`): connections (more are closed at once), time to send
the request headers (from the connection, TLS handshake included, or the first byte after a
keep-alive pause), keep-alive idle time and requests per connection, header size, responses being
written at once and the time to write one, worker threads, password checks; and the
open-files limit the connections need.
"""
from __future__ import annotations

import resource
from dataclasses import dataclass


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
    password_workers: int = 1  # threads that check passwords (bcrypt, PBKDF2): one hash at a time, as the toolkit
    password_queue: int = 4  # password checks waiting, at most one per client address; more are a 429 (logins.py)
    auth_log_seconds: float = 60.0  # failed logins are logged at most once per this (with their count)


def raise_file_limit(wanted: int) -> int:
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
