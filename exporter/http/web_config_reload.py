"""The web-config file as it is now, as the exporter toolkit applies it: a change to the file or
to a certificate, key or CA file it names takes effect without a restart (a rotated certificate,
a revoked password). A bad new file keeps the last good one, says where it is wrong in one log
line and counts kafka_jmx_sidecar_web_config_reload_failure_total.

The files are compared by content (they are small), so a Kubernetes secret swapped under a
symlink, or rewritten within one mtime tick, is seen too. Whether the endpoint speaks TLS is
fixed at start: a file that adds or drops `tls_server_config` is refused rather than turning
TLS off by an edit. The credentials already checked stay remembered for the users whose hash
did not change, so a scraper's next request after a reload (a rotated certificate) needs no
hashing.
"""
from __future__ import annotations

import hashlib
import logging
import threading

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig, load_web_config

log = logging.getLogger("kafka_jmx_sidecar.web_config")

CHECK_SECONDS = 1.0


def _fingerprint(paths: tuple[str, ...]) -> tuple:
    out = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                out.append((path, hashlib.sha256(f.read()).digest()))
        except OSError as e:
            out.append((path, e.errno))
    return tuple(out)


class WebConfigReloader:
    def __init__(self, path: str, first: WebConfig, metrics: SelfMetrics):
        self.path, self.metrics = path, metrics
        self._current = first
        self._tls = first.ssl_context is not None
        self._seen = _fingerprint(self._watched())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def current(self) -> WebConfig:
        return self._current

    def _watched(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.path, *self._current.files)))

    def check(self) -> bool:
        """True when a changed file was loaded."""
        seen = _fingerprint(self._watched())
        if seen == self._seen:
            return False
        self._seen = seen  # a bad file is reported once, not at every check until it changes
        try:
            new = load_web_config(self.path)
            if (new.ssl_context is not None) != self._tls:
                raise ConfigError(self.path, None, "tls_server_config",
                                  "switching between TLS and plain HTTP needs a restart",
                                  f"restore tls_server_config{'' if self._tls else ' (remove it)'} or restart the sidecar")
        except ConfigError as e:
            self.metrics.web_config_reload_failure.inc()
            log.error("web config reload failed, keeping the last good one: %s", e)
            return False
        # verdicts are keyed by each user's stored hash: the remembered logins of unchanged users
        # hold (as the toolkit's cache does), a changed password's are never found again
        new.verdicts = self._current.verdicts
        self._current = new
        self._seen = _fingerprint(self._watched())  # the files the new config names
        self.metrics.web_config_reload_success.inc()
        log.info("reloaded the web config %s", self.path)
        return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="web-config", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(CHECK_SECONDS):
            try:
                self.check()
            except Exception:  # a bug must not stop the watching; say so loudly
                log.exception("web config check failed unexpectedly")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
