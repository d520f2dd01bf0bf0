"""The push: every `interval` seconds, what /metrics serves at that moment (the last good poll's
series, none while they are withdrawn, and the sidecar's own metrics) goes to the OTLP receiver
through the OpenTelemetry SDK's OTLP metric exporter (grpc or http/protobuf).

It runs on a thread of its own and reads the snapshot the scrapes read, so a push never delays a
poll or a scrape (it shares the process with them: converting a big broker's series takes CPU).
A push that fails (the receiver down, refusing, too slow) is counted
(`kafka_jmx_sidecar_otlp_pushes_total{result="failure"}`) and the next one is tried on time;
the sidecar never stops over it. The first failure is logged with the receiver's or the
exporter's reason, further ones at most every LOG_EVERY_SECONDS with how many failed, and the
first success after them once. The exporter's own log lines (one per failed request) are kept
for that reason instead of being printed at every push.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Sequence

from kafka_jmx_sidecar.exporter.base.families import Family
from kafka_jmx_sidecar.exporter.otlp.settings import GRPC, Push

log = logging.getLogger("kafka_jmx_sidecar.otlp")

LOG_EVERY_SECONDS = 600.0
_SDK_LOGGER = "opentelemetry.exporter.otlp"  # the grpc and http exporters log beneath it


class MissingSdk(RuntimeError):
    pass


def require_sdk() -> None:
    """The optional extra is installed (`serve` checks at start, so a missing one is an error then)."""
    try:
        import opentelemetry.exporter.otlp.proto.grpc.metric_exporter  # noqa: F401
        import opentelemetry.exporter.otlp.proto.http.metric_exporter  # noqa: F401
        import opentelemetry.sdk.metrics  # noqa: F401
    except ImportError as e:
        raise MissingSdk(f"openTelemetry: is set, but the OpenTelemetry SDK is not installed ({e}); install "
                         f"the extra: pip install 'kafka-jmx-sidecar[otlp]'") from e


def make_exporter(push: Push):
    """The SDK's OTLP metric exporter for `push`: every setting passed, none read from the
    environment behind `effective`'s back (the TLS files and compression variables excepted)."""
    if push.protocol == GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        # gRPC metadata keys are lowercase (HTTP/2's header names): grpcio refuses `Authorization`,
        # which grpc-java, jmx_exporter's, lowercases
        return OTLPMetricExporter(endpoint=push.endpoint, insecure=push.endpoint.startswith("http://"),
                                  headers={k.lower(): v for k, v in push.headers.items()}, timeout=push.timeout_seconds)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter(endpoint=push.endpoint, headers=dict(push.headers), timeout=push.timeout_seconds)


class _LastWords(logging.Handler):
    """Keeps the exporter's last log line: the reason of a failed push."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.text: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.text = record.getMessage()


class Pusher:
    """Pushes `served()` (the snapshot's families, the self metrics' text, the naming) on its
    interval until stopped. `metrics`: the SelfMetrics it counts in."""

    def __init__(self, push: Push, served: Callable[[], tuple[Sequence[Family], str, str]], metrics,
                 exporter=None, clock: Callable[[], float] = time.time):
        from opentelemetry.sdk.resources import Resource

        self.push, self._served, self.metrics, self.clock = push, served, metrics, clock
        self.resource = Resource(dict(push.resource))
        self.exporter = exporter if exporter is not None else make_exporter(push)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._words = _LastWords()
        sdk_log = logging.getLogger(_SDK_LOGGER)
        sdk_log.addHandler(self._words)
        sdk_log.propagate = False
        self._failures = 0  # since the last success
        self._told_at: float | None = None  # monotonic time of the last failure logged
        metrics.enable_otlp()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="otlp-push", daemon=True)
        self._thread.start()
        log.info("pushing to %s (%s) every %d s", self.push.endpoint, self.push.protocol, self.push.interval_seconds)

    def stop(self, wait: float = 1.0) -> None:
        """No further push; one under way is waited on for `wait` seconds at most (the process
        ends within seconds of a signal)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait)
        logging.getLogger(_SDK_LOGGER).removeHandler(self._words)
        try:
            self.exporter.shutdown(timeout_millis=wait * 1000)
        except Exception:  # shutting down: nothing left to report to
            pass

    def _run(self) -> None:
        interval = self.push.interval_seconds
        due = time.monotonic() + interval  # as OpenTelemetry's periodic reader: the first push after one interval
        while not self._stop.wait(max(due - time.monotonic(), 0)):
            self.push_once()
            now = time.monotonic()
            due += interval
            if due <= now:  # a push longer than the interval: the next tick after it
                due += ((now - due) // interval + 1) * interval

    def push_once(self) -> bool:
        """One push of what /metrics serves now; True when the receiver took all of it."""
        from kafka_jmx_sidecar.exporter.otlp.metrics import batches
        from opentelemetry.sdk.metrics.export import MetricExportResult

        started = time.monotonic()
        self._words.text = None
        try:
            families, self_text, naming = self._served()
            for data in batches(families, self_text, naming, self.push.preserve_names, self.resource,
                                int(self.clock() * 1e9)):
                if self._stop.is_set():
                    return False
                result = self.exporter.export(data, timeout_millis=self.push.timeout_seconds * 1000)
                if result != MetricExportResult.SUCCESS:
                    return self._failed(self._words.text or "the exporter reported a failure")
        except Exception as e:  # a bug or an exporter's exception must not end the pushes
            return self._failed(f"{type(e).__name__}: {e}")
        finally:
            self.metrics.otlp_push_duration.set(time.monotonic() - started)
        self.metrics.otlp_pushes.labels("success").inc()
        if self._failures:
            log.info("pushes to %s succeed again, after %d failed", self.push.endpoint, self._failures)
        self._failures, self._told_at = 0, None
        return True

    def _failed(self, reason: str) -> bool:
        self.metrics.otlp_pushes.labels("failure").inc()
        self._failures += 1
        now = time.monotonic()
        if self._told_at is None:
            log.warning("push to %s failed: %s; the next is tried in %d s (kafka_jmx_sidecar_otlp_pushes_total "
                        "counts them)", self.push.endpoint, reason, self.push.interval_seconds)
            self._told_at = now
        elif now - self._told_at >= LOG_EVERY_SECONDS:
            log.warning("push to %s: %d failed in a row, the last: %s", self.push.endpoint, self._failures, reason)
            self._told_at = now
        return False
