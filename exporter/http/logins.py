"""Logins, in the event loop's thread: the password checks, bounded, and the failed logins,
counted and logged in aggregate.

A login already checked (basic_auth.Verdicts) is answered on the loop and takes none of this.
Any other costs a hash (bcrypt, PBKDF2: tens of milliseconds to seconds by design), run by
`password_workers` threads (the toolkit: one at a time, so a flood takes one core at most) with
at most `password_queue` more waiting and at most one per client address; anything beyond is
answered 429 at once, never queued. A second request with the same credentials waits for the
check under way. So a flood of wrong passwords delays a scraper that logged in before by no
hashing at all, and a scraper's first login, when the flood comes from fewer addresses than
workers + queue, waits for at most workers + queue hashes.

Each refused login counts in kafka_jmx_sidecar_http_auth_failures_total{reason}. The log says
the first at once, then at most one line per `auth_log_seconds` with the count by reason and
the addresses seen, however many there are.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging

from kafka_jmx_sidecar.exporter.http.framing import one_line
from kafka_jmx_sidecar.exporter.http.limits import Limits
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig

log = logging.getLogger("kafka_jmx_sidecar.http")

_NAMED_ADDRESSES = 8  # addresses a log line names; the others are counted
_COUNTED_ADDRESSES = 10000  # distinct addresses counted per line, at most (memory)


class Logins:
    def __init__(self, loop: asyncio.AbstractEventLoop, limits: Limits, metrics=None):
        self.loop, self.metrics = loop, metrics
        self._pool = concurrent.futures.ThreadPoolExecutor(limits.password_workers, thread_name_prefix="http-password")
        self._room = limits.password_workers + limits.password_queue
        self._pending: dict[bytes, asyncio.Future] = {}  # verdict key -> its check under way
        self._clients: set[str] = set()  # addresses with a check under way
        self._seconds = limits.auth_log_seconds
        self._counts: collections.Counter = collections.Counter()
        self._addresses: dict[str, None] = {}  # in the order seen
        self._timer: asyncio.TimerHandle | None = None
        self._verify_failed = False

    # --- checks
    def check(self, web: WebConfig, user: str, password: str, client: str) -> asyncio.Future | None:
        """A future of the verdict, or None when there is no room: the caller answers 429."""
        key = web.verdict_key(user, password)
        pending = self._pending.get(key)
        if pending is not None:
            return pending
        if client in self._clients or len(self._pending) >= self._room:
            return None
        verdict = self.loop.create_future()
        self._pending[key] = verdict
        self._clients.add(client)
        done = self._pool.submit(self._verify, web, user, password)
        done.add_done_callback(lambda f: self._from_thread(self._finish, key, client, verdict, f))
        return verdict

    def _verify(self, web: WebConfig, user: str, password: str) -> bool:
        """In a worker: a verifier that fails on what a client sent refuses the login, with one log
        line per process (not one per request: the client chooses how many)."""
        try:
            return web.verify(user, password)
        except Exception as e:
            if not self._verify_failed:
                self._verify_failed = True
                log.error("checking a password failed, refused (said once): %s", one_line(e))
            return False

    def _from_thread(self, fn, *args) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: the server stopped
            pass

    def _finish(self, key: bytes, client: str, verdict: asyncio.Future, done: concurrent.futures.Future) -> None:
        self._pending.pop(key, None)
        self._clients.discard(client)
        if not done.cancelled() and not verdict.done():  # cancelled: the server stops
            verdict.set_result(done.result())

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._timer is not None:
            self._timer.cancel()

    # --- failures
    def failed(self, reason: str, client: str) -> None:
        if self.metrics is not None:
            self.metrics.http_auth_failures.labels(reason).inc()
        if self._timer is None:
            log.warning("failed login on /metrics from %s (%s); more are counted in "
                        "kafka_jmx_sidecar_http_auth_failures_total and logged together, at most once every %g s",
                        client, reason, self._seconds)
            self._timer = self.loop.call_later(self._seconds, self._flush)
            return
        self._counts[reason] += 1
        if len(self._addresses) < _COUNTED_ADDRESSES:
            self._addresses[client] = None

    def _flush(self) -> None:
        if not self._counts:
            self._timer = None  # quiet: the next failure is logged at once
            return
        named = list(self._addresses)[:_NAMED_ADDRESSES]
        more = len(self._addresses) - len(named)
        log.warning("%d failed logins on /metrics in the last %g s (%s) from %s%s",
                    sum(self._counts.values()), self._seconds,
                    ", ".join(f"{reason} {n}" for reason, n in self._counts.most_common()), ", ".join(named),
                    f" and {more}{'+' if len(self._addresses) >= _COUNTED_ADDRESSES else ''} more addresses"
                    if more else "")
        self._counts.clear()
        self._addresses.clear()
        self._timer = self.loop.call_later(self._seconds, self._flush)
