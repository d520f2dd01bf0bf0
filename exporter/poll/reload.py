"""The configuration file re-read when it changes, checked as at start (exporter/config/load.py):
a bad file keeps the last good configuration, counts a failure and says where it is wrong."""
from __future__ import annotations

import logging
import os

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.config.load import reload
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.rule_engine.config import Config

log = logging.getLogger("kafka_jmx_sidecar.collector")


class ConfigWatcher:
    """Reloads the config file when its mtime changes; a bad file keeps the last good config."""

    def __init__(self, path: str | None, config: Config, metrics: SelfMetrics, mode: str = "broker"):
        self.path, self.config, self.metrics, self.mode = path, config, metrics, mode
        self._mtime = self._stat()

    def _stat(self) -> float | None:
        try:
            return os.stat(self.path).st_mtime if self.path else None
        except OSError:
            return None

    def check(self) -> bool:
        """True when a new config was loaded."""
        mtime = self._stat()
        if mtime is None or mtime == self._mtime:
            return False
        self._mtime = mtime
        try:
            self.config = reload(self.path, self.mode)
        except ConfigError as e:
            self.metrics.reload_failure.inc()
            log.error("config reload failed, keeping the last good config: %s", e)
            return False
        self.metrics.reload_success.inc()
        for w in self.config.warnings:
            log.warning("%s", w)
        log.info("reloaded %s", self.path)
        return True
