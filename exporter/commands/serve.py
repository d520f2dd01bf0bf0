"""`serve`, `scrape` and `check-config`: configuration in, a running sidecar (or one poll) out."""
from __future__ import annotations

import dataclasses
import logging
import os
import signal
import ssl
import sys
import threading
from typing import IO, Iterable

from kafka_jmx_sidecar.exporter.commands import logs
from kafka_jmx_sidecar.exporter.poll import process_memory
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.config.load import Loaded, load
from kafka_jmx_sidecar.exporter.poll.snapshot import FORMATS, OPENMETRICS, TEXT, printed
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig, load_web_config
from kafka_jmx_sidecar.exporter.http.web_config_reload import WebConfigReloader
from kafka_jmx_sidecar.exporter.otlp.settings import Push, effective
from kafka_jmx_sidecar.exporter.source.jmx import JmxSettings

log = logging.getLogger("kafka_jmx_sidecar")

SWITCH_INTERVAL = 0.0005  # seconds; see serve()
# After SIGTERM, the longest wait for the poll in progress to give up. The process must be gone
# within 5 s whatever it is doing (Kubernetes kills it after its grace period, 30 s by default,
# and a rolling restart of the broker waits on it): what is left after this goes with the process.
STOP_SECONDS = 3.0


def make_collector(loaded: Loaded, config_path: str | None, overrides: dict | None = None,
                   formats: Iterable[str] = FORMATS) -> Collector:
    return Collector(loaded.source_factory(), loaded.config, loaded.settings, config_path=config_path,
                     freeze_gc=True, overrides=overrides, formats=formats)


def check_config(path: str | None, out: IO[str] | None = None, err: IO[str] | None = None,
                 web_config_file: str | None = None) -> int:
    """0 and an OK line per file, or 2 and why: the configuration file, and the web-config file it
    names or `web_config_file` names (alone when `path` is None, as `promtool check web-config`)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        if path is None:
            web = load_web_config(web_config_file)
            out.write(_web_ok(web_config_file, web))
            return 0
        loaded = load(path, {"web_config_file": web_config_file})
    except ConfigError as e:
        err.write(f"{e}\n")
        return 2
    return check_loaded(loaded, path, out, err)


def check_loaded(loaded: Loaded, path: str, out: IO[str], err: IO[str]) -> int:
    """What `check-config` adds to the loader's checks, on a file already loaded: 0 and the OK
    lines, or 2 and why (jmx_exporter's mistakes, which serve would ignore; an unwritable archive)."""
    c = loaded.config
    for w in c.warnings:
        err.write(f"{'error' if w in c.mistakes else 'warning'}: {w}\n")
    if c.mistakes:
        err.write(f"{path}: refused: {len(c.mistakes)} mistake(s) above (serve would load the file and ignore "
                  f"them, as jmx_exporter does); fix them\n")
        return 2
    unwritable = _archive_unwritable(loaded)
    if unwritable is not None:
        err.write(f"{unwritable}\n")
        return 2
    try:
        push = otlp_push(loaded)
    except (ConfigError, RuntimeError) as e:
        err.write(f"{e}\n")
        return 2
    s = loaded.settings
    target = (f"the whole cluster from the Admin API at {','.join(s.admin.bootstrap_servers)} (sidecar.mode: cluster)"
              if s.cluster else f"target {c.jmx_url}")
    out.write(f"{path}: OK: {len(c.rules)} rule(s), {target}, listening on {s.listen_address}\n")
    if s.web_config_file:
        out.write(_web_ok(s.web_config_file, loaded.web))
    if push is not None:
        out.write(f"{path}: OK: openTelemetry, pushing to {push.endpoint} ({push.protocol}) every "
                  f"{push.interval_seconds} s\n")
    return 0


def otlp_push(loaded: Loaded) -> Push | None:
    """The `openTelemetry:` push with OpenTelemetry's environment variables over it (None: no
    push); ConfigError for a wrong variable, RuntimeError when the SDK is not installed."""
    if loaded.otlp is None:
        return None
    from kafka_jmx_sidecar.exporter.otlp.push import require_sdk

    require_sdk()
    s = loaded.settings
    # service.instance.id when none is configured: what the sidecar reads, so that the sidecars
    # of a cluster's brokers push series that stay apart
    instance = (",".join(s.admin.bootstrap_servers) if s.cluster and s.admin is not None
                else JmxSettings(jmx_url=loaded.config.jmx_url).endpoint)
    return effective(loaded.otlp, os.environ, instance)


def _archive_unwritable(loaded: Loaded) -> ConfigError | None:
    """Why `serve` could not write sidecar.archive.directory as this user, here: it must be a
    writable directory, or one it may create (the nearest existing parent writable). None if it can."""
    archive = loaded.settings.archive
    if archive is None:
        return None
    directory = os.path.abspath(archive.directory)
    where, error = ("sidecar", "archive", "directory"), loaded.config.file.error
    fix = (f"make it writable by the sidecar's user (uid {os.getuid()}; in Kubernetes a volume mounted there, "
           "with fsGroup), or choose another directory")
    if os.path.lexists(directory):
        if not os.path.isdir(directory):
            return error(where, f"{directory} exists and is not a directory", "give the path of a directory")
        if not os.access(directory, os.W_OK | os.X_OK):
            return error(where, f"{directory} is not writable", fix)
        return None
    parent = os.path.dirname(directory)
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return error(where, f"{directory} cannot be created: {parent} is not a directory", "give another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        return error(where, f"{directory} does not exist and cannot be created: {parent} is not writable", fix)
    return None


def _web_ok(path: str, web: WebConfig) -> str:
    tls = "TLS" if web.ssl_context is not None else "plain HTTP"
    if web.ssl_context is not None and web.ssl_context.verify_mode == ssl.CERT_REQUIRED:
        tls += " with client certificates" + (f" ({len(web.client_allowed_sans)} allowed SAN(s))"
                                              if web.client_allowed_sans else "")
    return f"{path}: OK: web config, {tls}, {len(web.users)} basic auth user(s)\n"


def scrape(path: str, openmetrics: bool = False, out: IO[bytes] | None = None,
           err: IO[str] = sys.stderr) -> int:
    """One poll, printed as the endpoint would serve it (without the sidecar's own metrics)."""
    out = out or sys.stdout.buffer
    try:
        loaded = load(path)
    except ConfigError as e:
        err.write(f"{e}\n")
        return 2
    # The contract is one line on stderr: the reason below, not the loggers' copies of it.
    logging.disable(logging.ERROR)
    # one poll to look at: only `serve` archives; the JVM is sized for one listing (ONE_SHOT_JVM_OPTIONS)
    loaded = dataclasses.replace(loaded, settings=dataclasses.replace(loaded.settings, archive=None, one_shot=True))
    collector = make_collector(loaded, None, formats=())  # the one format is printed below
    try:
        if not collector.poll_once():
            err.write(f"scrape: {collector.last_error}\n")
            return 1
        for chunk in printed(collector.snapshot, OPENMETRICS if openmetrics else TEXT):
            out.write(chunk)
        out.flush()
    finally:
        collector.close()
    return 0


def serve(path: str, overrides: dict | None = None, err: IO[str] = sys.stderr) -> int:
    from kafka_jmx_sidecar.exporter.http.server import MetricsServer

    process_memory.limit_arenas()  # before the JVM and the HTTP server start their threads
    try:
        loaded = load(path, overrides)
        push = otlp_push(loaded)
    except (ConfigError, RuntimeError) as e:  # RuntimeError: openTelemetry without the SDK installed
        logs.failure(str(e), err)
        return 2
    for w in loaded.config.warnings:
        log.warning("%s", w)
    # Scrapes and the poll share the GIL. A request takes it a few times (read the request, write
    # the response); each time it waits for the poll thread to hand it over, which Python forces
    # after the switch interval (5 ms by default). At 40,000 partitions with Strimzi's rules that
    # took the p99 of a paced scrape from ~40 ms to ~250 ms. The switch is forced only when another
    # thread waits, so a poll nobody scrapes runs as before.
    sys.setswitchinterval(SWITCH_INTERVAL)
    collector = make_collector(loaded, path, overrides)
    host, port = loaded.settings.listen()
    web = loaded.web
    if loaded.settings.web_config_file and web.source == loaded.settings.web_config_file:
        # the exporter toolkit's behaviour: the file (and the certificates it names) can change under us
        web = WebConfigReloader(loaded.settings.web_config_file, loaded.web, collector.metrics)
    try:
        server = MetricsServer(host, port, collector, web)
    except OSError as e:
        logs.failure(f"cannot listen on {loaded.settings.listen_address}: {e.strerror}; "
                     f"choose another sidecar.listenAddress or --web.listen-address", err)
        return 2
    stop = threading.Event()

    def on_signal(*_) -> None:
        if stop.is_set():
            os._exit(1)  # a second signal: at once
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    server.start()
    if isinstance(web, WebConfigReloader):
        web.start()
    scheme = "https" if loaded.web.ssl_context else "http"
    log.info("serving %s://%s:%d/metrics for %s", scheme, host, server.port, collector.target)
    # The poll runs in a thread of its own, so that this one is free to act on a signal at once
    # (a signal handler runs in the main thread, between bytecodes: never inside a JVM call).
    poller = threading.Thread(target=collector.run, args=(stop,), name="poll", daemon=True)
    poller.start()
    pusher = _start_push(push, collector)
    try:
        while poller.is_alive() and not stop.wait(1.0):
            pass
    finally:
        stopping = stop.is_set()
        stop.set()
        collector.stop()
        if pusher is not None:
            pusher.stop()
        poller.join(STOP_SECONDS)
        if isinstance(web, WebConfigReloader):
            web.stop()
        server.stop()
    if poller.is_alive():
        log.warning("stopped with a poll of %s still in progress (not waiting on the broker past %g s)",
                    collector.target, STOP_SECONDS)
    elif not stopping:
        log.error("the poll loop ended unexpectedly (see above); exiting")
    exit_now(0 if stopping else 1)


def _start_push(push: Push | None, collector: Collector):
    """The OTLP push of what /metrics serves, on a thread of its own (None: no push)."""
    if push is None:
        return None
    from kafka_jmx_sidecar.exporter.otlp.push import Pusher

    def served():
        snapshot, self_metrics = collector.pushed()
        return snapshot.families, self_metrics.decode(), collector.settings.naming

    pusher = Pusher(push, served, collector.metrics)
    pusher.start()
    return pusher


def exit_now(code: int) -> None:
    """End the process now. An orderly interpreter exit shuts the JVM down and waits on it: on the
    poll thread when it is still inside a JVM call, for 10 s on JPype's reference queue when an
    OutOfMemoryError ended that thread, and ~0.4 s after a one-shot `scrape` at 10,000
    partitions. Nothing in the JVM needs an orderly end (no shutdown hooks: -Xrs; the JMX
    connections are closed before), so the logs and standard streams are flushed and the
    process goes."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


__all__ = ["check_config", "check_loaded", "exit_now", "make_collector", "scrape", "serve"]
