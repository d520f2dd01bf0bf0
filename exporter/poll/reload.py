"""The configuration file re-read when it changes, checked as at start (exporter/config/load.py):
a bad file keeps the last good configuration, counts a failure and says where it is wrong.

A change is a new content, not a new mtime: the file is read and hashed at every check (it is
small), so a rewrite within one mtime tick is seen, and a touch, or a Kubernetes ConfigMap update
that swaps the `..data` symlink to identical files, reloads nothing. Each distinct content taken
counts one reload, success or failure. A file replaced whole (a rename, the symlink swap: a new
inode) is taken at once; for one rewritten in place the check waits SETTLE_SECONDS and reads it
again, and takes it only if it stayed the same, so a check that lands in the middle of the write
never loads (nor counts) the half-written file. (Not by its mtime: truncating a file need not
change it, and an emptied file then looks as old as the content it replaces.)

What a reload changes at once and what waits for a restart (`plan`): the rules and the JMX target
apply at once (the source is rebuilt with them), and so do the `sidecar:` settings whose
definition says APPLIES (exporter/config/sidecar.py, SIDECAR): pollIntervalSeconds,
staleAfterSeconds, withdrawAfterSeconds, and the source's namesRefreshSeconds, connections,
connectTimeoutSeconds, readTimeoutSeconds. The keys read once at start (RESTART) keep their
running value and are named in one log line per reload. `sidecar.mode` cannot change at all: such
a file is refused (config/load.py, reload), since the rest of it is written for the other mode.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import logging
import os
import time
from typing import Any, Callable, Mapping, NamedTuple

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.config.load import Loaded, reload
from kafka_jmx_sidecar.exporter.base.definitions import RESTART
from kafka_jmx_sidecar.exporter.config.sidecar import SIDECAR, SidecarSettings
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.rule_engine.config import Config
from kafka_jmx_sidecar.exporter.rule_engine.config_keys import JMX_EXPORTER
from kafka_jmx_sidecar.exporter.source.protocol import Source, SourceError

log = logging.getLogger("kafka_jmx_sidecar.collector")

SETTLE_SECONDS = 0.5

# `sidecar:` settings read once, at start (RESTART in their definitions) -> their key. What they
# build lives as long as the process: the listening socket; the names of every series (the self
# metrics' too); the web config file watched (exporter/http/web_config_reload.py); the one JVM of
# the process; the Admin API client and the stages that keep state across polls (meter rates, the
# archive's open file).
RESTART_ONLY = {key.attr: "sidecar." + key.name for key in SIDECAR.keys if key.reload == RESTART}
# The jmx_exporter keys that take effect only at start (RESTART in JMX_EXPORTER): the first poll's
# delay, the endpoint's TLS and basic auth from an httpServer block (the server is made at start),
# the OTLP push of an openTelemetry block (its exporter, with the receiver's connection, is made at
# start, as in jmx_exporter) and SSL's JVM-wide properties (a JVM uses its trust and key stores,
# protocols and ciphers as first set). What of each is compared: as parsed where that differs from
# the file's text (an empty `openTelemetry:` pushes, no block does not).
_RUNNING = {
    "startDelaySeconds": lambda c: c.start_delay_seconds,
    "openTelemetry": lambda c: c.file.data.get("openTelemetry", False) if isinstance(c.file.data, Mapping) else False,
    "ssl": lambda c: (c.trust_store, c.key_store, c.ssl_options.get("protocols"), c.ssl_options.get("ciphers")),
}
_CONFIG_RESTART_ONLY = {
    key.name: _RUNNING.get(key.name, lambda c, name=key.name: c.file.data.get(name) if isinstance(c.file.data, Mapping)
                           else None)
    for key in JMX_EXPORTER.keys if key.reload == RESTART}
_SSL_FIELDS = ("ssl", "ssl_options", "trust_store", "key_store")


class Applied(NamedTuple):
    config: Config  # the new rules and target (SSL's JVM-wide part as running)
    settings: SidecarSettings  # the new settings, RESTART_ONLY as running
    restart: tuple[str, ...]  # the keys that changed but wait for a restart
    changed: tuple[str, ...]  # the settings applied at once that changed: "key: old -> new"


def with_settings(factory: Callable[..., Source]) -> Callable[[Config, SidecarSettings], Source]:
    """A source factory as (config, settings): one that takes the config alone keeps the settings
    it was made with (a reload then changes the rules, the target and the schedule, not the
    source's own settings)."""
    try:
        positional = [p for p in inspect.signature(factory).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        positional = []
    return factory if len(positional) >= 2 else (lambda config, settings: factory(config))


_KEY = {key.attr: "sidecar." + key.name for key in SIDECAR.keys}  # field -> key, as the log names it


def plan(settings: SidecarSettings, config: Config, loaded: Loaded) -> Applied:
    """What of the reloaded file applies, with the sidecar running `settings` and `config`."""
    new = loaded.settings
    restart = [key for name, key in RESTART_ONLY.items() if getattr(new, name) != getattr(settings, name)]
    applied = dataclasses.replace(new, **{name: getattr(settings, name) for name in RESTART_ONLY})
    changed = tuple(f"{_KEY[f.name]}: {getattr(settings, f.name)} -> {getattr(applied, f.name)}"
                    for f in dataclasses.fields(SidecarSettings)
                    if getattr(applied, f.name) != getattr(settings, f.name))
    new_config = loaded.config
    for key, value in _CONFIG_RESTART_ONLY.items():
        if value(new_config) != value(config):
            restart.append(key)
    if "ssl" in restart:
        new_config = dataclasses.replace(new_config, **{f: getattr(config, f) for f in _SSL_FIELDS})
    return Applied(new_config, applied, tuple(restart), changed)


def tell(path: str, applied: Applied) -> None:
    """The reload's log lines: what changed at once, and in ONE line what waits for a restart."""
    changes = f" ({'; '.join(applied.changed)})" if applied.changed else ""
    log.info("reloaded %s%s", path, changes)
    if applied.restart:
        keys = applied.restart
        names = keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " and " + keys[-1]
        log.warning("%s changed: %s effect at the next restart (the rest of %s is applied)", names,
                    "takes" if len(keys) == 1 else "take", path)


class _Seen(NamedTuple):
    digest: bytes
    file_id: tuple[int, int]  # (device, inode) of the file the path leads to


def _look(path: str) -> _Seen | None:
    try:
        with open(path, "rb") as f:  # through a symlink: the file it leads to now
            st = os.fstat(f.fileno())
            data = f.read()
    except OSError:
        return None
    return _Seen(hashlib.sha256(data).digest(), (st.st_dev, st.st_ino))


class ConfigWatcher:
    """Reloads the config file when its content changes (see the module docstring)."""

    def __init__(self, path: str | None, metrics: SelfMetrics, mode: str = "broker",
                 overrides: dict[str, Any] | None = None, sleep: Callable[[float], Any] = time.sleep):
        self.path, self.metrics, self.mode, self.overrides = path, metrics, mode, overrides
        self._sleep = sleep
        seen = _look(path) if path else None
        self._taken = seen.digest if seen else None  # the content last taken (loaded or refused)
        self._file_id = seen.file_id if seen else None

    def check(self, apply: Callable[[Loaded], None]) -> bool:
        """Load a changed file and `apply` it; True when it was applied. A file refused by the load
        or by `apply` (ConfigError, SourceError) counts a failure and keeps the last good one."""
        seen = _look(self.path) if self.path else None
        if seen is not None:
            replaced, self._file_id = seen.file_id != self._file_id, seen.file_id
        if seen is None or seen.digest == self._taken:
            return False
        if not replaced:  # rewritten in place: maybe in the middle of the write
            self._sleep(SETTLE_SECONDS)
            if not self._still(seen):
                return False  # still being written: the next check looks again
        try:
            loaded = reload(self.path, self.mode, self.overrides)
        except ConfigError as e:
            return self._refused(seen, e)
        if not self._still(seen):
            return False
        self._taken = seen.digest
        try:
            apply(loaded)
        except (ConfigError, SourceError) as e:
            return self._refused(seen, e)
        self.metrics.reload_success.inc()
        for w in loaded.config.warnings:
            log.warning("%s", w)
        return True

    def _still(self, seen: _Seen) -> bool:
        """The file still holds what was hashed: it did not change while it was loaded (if it
        did, the next check takes the new content, and only that one counts)."""
        now = _look(self.path)
        return now is not None and now.digest == seen.digest

    def _refused(self, seen: _Seen, e: Exception) -> bool:
        if not self._still(seen):
            return False
        self._taken = seen.digest
        self.metrics.reload_failure.inc()
        log.error("config reload failed, keeping the last good config: %s", e)
        return False
