"""Reloading the configuration file: every distinct content counted once, whole files only, what
applies at once and what waits for a restart (exporter/poll/reload.py). The sidecar runs as `serve`
runs it (the poll loop, the HTTP server, the file on disk) against a stand-in source: the
reload does not depend on the broker (the JMX side of a reload: tests/e2e/test_recovery.py)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.exporter.http.server import MetricsServer
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.poll import reload as reload_module
from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.poll.reload import ConfigWatcher, plan
from tests.exporter.test_collector import URP, ScriptedSource, gauge, metric_value

RULE = "- pattern: 'kafka.server<type=(.+), name=(.+)><>Value'\n  name: {name}_$2\n"
BROKEN = "- pattern: 'kafka.server<type=(.+'\n  name: broken\n"


def config_text(name: str = "urp", sidecar: str = "", broken: bool = False) -> str:
    """A valid file whose series are named `name_...`; `broken`: the same with a bad rule after
    the good one (what a half-written broken file would read as when cut after the good rule)."""
    block = f"sidecar:\n{sidecar}" if sidecar else ""
    return "hostPort: 127.0.0.1:1\n" + block + "rules:\n" + RULE.format(name=name) + (BROKEN if broken else "")


# --- writing a file as users and Kubernetes do ---------------------------------------------------

def by_rename(path: Path, text: str, _n: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def by_symlink_swap(path: Path, text: str, n: int) -> None:
    """As the kubelet updates a ConfigMap volume: the files in a new timestamped directory, then
    the `..data` symlink swapped to it by a rename; `path` is a symlink to `..data/<name>`."""
    root, data = path.parent, path.parent / "..data"
    new = root / f"..2026_01_01_00_00_{n:02d}.000000001"
    new.mkdir()
    (new / path.name).write_text(text)
    old = os.readlink(data) if data.is_symlink() else None
    (root / "..data_tmp").symlink_to(new.name)
    os.replace(root / "..data_tmp", data)
    if not path.is_symlink():
        path.symlink_to(f"..data/{path.name}")
    if old:
        (root / old / path.name).unlink()
        (root / old).rmdir()


_WRITER = """
import json, sys, time
for line in sys.stdin:
    path, text, cut = json.loads(line)
    with open(path, "w") as f:
        f.write(text[:cut])
        f.flush()
        time.sleep(0.05)
        f.write(text[cut:])
    print("done", flush=True)
"""


@pytest.fixture(scope="module")
def writer():
    """Another process that rewrites a file in place, as an editor, `cp` or `cat >` would."""
    proc = subprocess.Popen([sys.executable, "-S", "-c", _WRITER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    yield proc
    proc.stdin.close()
    proc.wait(10)


def in_place(path: Path, text: str, _n: int, writer: subprocess.Popen) -> None:
    """Rewritten in the same file in two writes 50 ms apart: a check in between reads the first
    half only (for a broken file: a valid one, cut before its bad rule)."""
    cut = text.index(BROKEN) if BROKEN in text else len(text) // 2
    writer.stdin.write(json.dumps([str(path), text, cut]) + "\n")
    writer.stdin.flush()
    assert writer.stdout.readline() == "done\n"


class Running:
    """The sidecar as `serve` runs it: poll loop, /metrics, the file watched."""

    def __init__(self, path: Path, overrides: dict | None = None):
        loaded = load(str(path), overrides)
        self.source = ScriptedSource([[gauge(URP, 2)]])
        self.polls: list[float] = []
        real = self.source.read
        self.source.read = lambda: self.polls.append(time.monotonic()) or real()
        self.collector = Collector(lambda cfg: self.source, loaded.config, loaded.settings, config_path=str(path),
                                   overrides=overrides)
        self.server = MetricsServer("127.0.0.1", 0, self.collector, WebConfig())
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.collector.run, args=(self.stop,), daemon=True)

    def __enter__(self) -> "Running":
        self.server.start()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)
        self.server.stop()

    def metrics(self) -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.server.port}/metrics", timeout=10) as r:
            return r.read()

    def reloads(self) -> tuple[float, float]:
        body = self.metrics()
        return (metric_value(body, "jmx_config_reload_success_total"),
                metric_value(body, "jmx_config_reload_failure_total"))


def wait_until(what: str, check, timeout: float = 10.0, every: float = 0.02):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


@pytest.mark.parametrize("how", ["rename", "symlink swap", "in place"])
def test_15_valid_and_15_broken_files_count_15_successes_and_15_failures_under_10_scrapers(tmp_path, how, writer,
                                                                                           monkeypatch):
    # half as long as in production, to keep the test short; still 5 times the half-written moment
    monkeypatch.setattr(reload_module, "SETTLE_SECONDS", 0.25)
    write = {"rename": by_rename, "symlink swap": by_symlink_swap,
             "in place": lambda path, text, n: in_place(path, text, n, writer)}[how]
    path = tmp_path / "config.yml"
    fast = "  pollIntervalSeconds: 0.1\n"
    write(path, config_text("v0", fast), 0)
    stop_scraping = threading.Event()
    scraped = []
    with Running(path) as s:
        def scrape():
            n = 0
            while not stop_scraping.is_set():
                assert b"jmx_config_reload_success_total" in s.metrics()
                n += 1
            scraped.append(n)

        scrapers = [threading.Thread(target=scrape) for _ in range(10)]
        for t in scrapers:
            t.start()
        try:
            for i in range(1, 16):
                for broken in (False, True):
                    before = s.reloads()
                    write(path, config_text(f"v{i}", fast, broken=broken), 2 * i + broken)
                    # the next write only once this one was taken: each write is one reload
                    after = wait_until(f"write {i} {'broken' if broken else 'valid'} taken",
                                       lambda: (r := s.reloads()) != before and r)
                    assert after == (before[0] + (not broken), before[1] + broken), (i, broken, before, after)
                    if not broken:
                        wait_until("the new rules' series", lambda: f"v{i}_UnderReplicatedPartitions".encode()
                                   in s.metrics())
            time.sleep(1.0)  # nothing more comes of them (no half-written file counted late)
            assert s.reloads() == (15, 15)
        finally:
            stop_scraping.set()
            for t in scrapers:
                t.join(10)
        body = s.metrics()
    assert len(scraped) == 10 and min(scraped) > 0
    assert b"v15_UnderReplicatedPartitions 2.0" in body  # the last good file's rules serve
    assert metric_value(body, 'kafka_jmx_sidecar_polls_total{result="failure"}') == 0


def test_a_file_touched_or_swapped_to_the_same_content_reloads_nothing(tmp_path):
    path = tmp_path / "config.yml"
    by_symlink_swap(path, config_text(), 0)
    metrics = SelfMetrics()
    watcher = ConfigWatcher(str(path), metrics)
    applied = []
    os.utime(path, (time.time() + 5, time.time() + 5))  # a new mtime, the same content
    assert not watcher.check(applied.append)
    by_symlink_swap(path, config_text(), 1)  # a ConfigMap update that changed another key
    assert not watcher.check(applied.append)
    by_symlink_swap(path, config_text("other"), 2)
    assert watcher.check(applied.append)  # replaced whole: taken at once
    assert len(applied) == 1 and metrics.reload_success.value == 1 and metrics.reload_failure.value == 0


def test_a_file_rewritten_in_place_is_taken_once_it_settled_never_half_written(tmp_path):
    path = tmp_path / "config.yml"
    path.write_text(config_text())
    writes = []  # what the writer does while the watcher waits for the file to settle

    def sleep(seconds):
        assert seconds == reload_module.SETTLE_SECONDS
        if writes:
            writes.pop(0)()

    metrics = SelfMetrics()
    watcher = ConfigWatcher(str(path), metrics, sleep=sleep)
    applied = []
    broken = config_text("half", broken=True)
    f = open(path, "w")  # emptied: the write begins (its mtime need not even change)
    writes.append(lambda: (f.write(broken[:broken.index(BROKEN)]), f.flush()))
    assert not watcher.check(applied.append)  # seen empty, then changed: not taken
    writes.append(lambda: (f.write(broken[broken.index(BROKEN):]), f.close()))
    assert not watcher.check(applied.append)  # seen valid but cut short, then changed: not taken
    assert metrics.reload_failure.value == 0 and metrics.reload_success.value == 0
    assert not watcher.check(applied.append)  # the whole file, settled: broken, refused, counted once
    assert metrics.reload_failure.value == 1 and metrics.reload_success.value == 0 and not applied
    assert not watcher.check(applied.append)  # the same content: not counted again
    path.write_text(config_text("good"))
    assert watcher.check(applied.append)
    assert metrics.reload_success.value == 1 and metrics.reload_failure.value == 1 and len(applied) == 1


def test_a_changed_poll_interval_takes_effect_at_once(tmp_path):
    path = tmp_path / "config.yml"
    by_rename(path, config_text(sidecar="  pollIntervalSeconds: 2\n"), 0)
    with Running(path) as s:
        wait_until("the first poll", lambda: s.polls)
        time.sleep(1.5)
        assert len(s.polls) == 1  # 2 s apart
        by_rename(path, config_text(sidecar="  pollIntervalSeconds: 0.1\n"), 1)
        changed = time.monotonic()
        wait_until("10 polls after the change", lambda: len([t for t in s.polls if t > changed]) >= 10, timeout=5)
        fast = [t for t in s.polls if t > changed]
        # the first poll on the new interval comes within a reload check, not at the old tick
        assert fast[0] - changed < 0.5, fast[0] - changed
        assert 0.09 < (fast[-1] - fast[0]) / (len(fast) - 1) < 0.2, fast
        assert s.collector.settings.poll_interval_seconds == 0.1
        assert metric_value(s.metrics(), "jmx_config_reload_success_total") == 1


def test_a_restart_only_change_is_logged_once_per_reload_and_not_applied(tmp_path, caplog):
    path = tmp_path / "config.yml"
    by_rename(path, config_text(sidecar="  listenAddress: 127.0.0.1:0\n  staleAfterSeconds: 50\n"), 0)
    with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.collector"), Running(path) as s:
        wait_until("the first poll", lambda: s.polls)
        port = s.server.port
        by_rename(path, config_text(sidecar="  listenAddress: 127.0.0.1:19404\n  naming: \"1.x\"\n"
                                            "  staleAfterSeconds: 30\n"), 1)
        wait_until("the reload", lambda: s.reloads() == (1, 0))
        time.sleep(1.0)  # polls go on: the line is not repeated
        restart = [r.getMessage() for r in caplog.records if "next restart" in r.getMessage()]
        assert restart == [f"sidecar.listenAddress and sidecar.naming changed: take effect at the next restart "
                           f"(the rest of {path} is applied)"]
        assert s.collector.settings.listen_address == "127.0.0.1:0" and s.collector.settings.naming == "0.x"
        assert s.collector.settings.stale_after_seconds == 30  # the rest applied
        reloaded = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reloaded")]
        assert reloaded == [f"reloaded {path} (sidecar.staleAfterSeconds: 50 -> 30)"]
        assert s.server.port == port and b"jmx_scrape_error 0.0" in s.metrics()  # still 0.x names, same port
        by_rename(path, config_text("renamed", sidecar="  listenAddress: 127.0.0.1:19404\n  naming: \"1.x\"\n"
                                                       "  staleAfterSeconds: 30\n"), 2)
        wait_until("the second reload", lambda: s.reloads() == (2, 0))
        restart = [r.getMessage() for r in caplog.records if "next restart" in r.getMessage()]
        assert len(restart) == 2  # one line per reload that still differs from what runs


def test_a_reloaded_source_gets_the_new_settings_and_the_restart_only_ones_as_running(tmp_path):
    path = tmp_path / "config.yml"
    by_rename(path, config_text(sidecar="  connections: 1\n  readTimeoutSeconds: 30\n"), 0)
    loaded = load(str(path))
    made = []

    def factory(config, settings):
        made.append((config, settings))
        return ScriptedSource([[gauge(URP, 1)]])

    c = Collector(factory, loaded.config, loaded.settings, config_path=str(path))
    by_rename(path, "hostPort: 127.0.0.1:2\nssl:\n  trustStore:\n    filename: /elsewhere.p12\n"
                    "sidecar:\n  connections: 4\n  readTimeoutSeconds: 90\n  namesRefreshSeconds: 60\n"
                    "  jvmMaxHeap: 512m\nrules:\n" + RULE.format(name="x"), 1)
    assert c.poll_once()
    config, settings = made[-1]
    assert (settings.connections, settings.read_timeout_seconds, settings.names_refresh_seconds) == (4, 90, 60)
    assert settings.jvm_max_heap is None  # the JVM runs as started
    assert config.jmx_url == "service:jmx:rmi:///jndi/rmi://127.0.0.1:2/jmxrmi"  # a new target applies
    assert config.trust_store.filename == "" and not config.ssl  # the JVM's SSL stores as they are


def test_plan_names_each_key_read_only_at_start(tmp_path):
    path = tmp_path / "config.yml"
    path.write_text(config_text())
    running = load(str(path))
    web = tmp_path / "web.yml"
    web.write_text("{}\n")
    path.write_text(f"hostPort: 127.0.0.1:1\nstartDelaySeconds: 5\nsidecar:\n  webConfigFile: {web}\n"
                    "  jvmOptions: ['-Xmx1g']\n  archive:\n    directory: /tmp/a\nrules:\n" + RULE.format(name="urp"))
    applied = plan(running.settings, running.config, load(str(path)))
    assert applied.restart == ("sidecar.webConfigFile", "sidecar.jvmOptions", "sidecar.archive", "startDelaySeconds")
    assert applied.settings == running.settings and applied.changed == ()
    path.write_text("hostPort: 127.0.0.1:1\nhttpServer:\n  authentication:\n    basic:\n      username: u\n"
                    "      password: p\nrules:\n" + RULE.format(name="urp"))
    assert plan(running.settings, running.config, load(str(path))).restart == ("httpServer",)


def test_a_file_for_another_mode_is_refused_and_counted(tmp_path, caplog):
    path = tmp_path / "config.yml"
    by_rename(path, config_text(), 0)
    loaded = load(str(path))
    c = Collector(lambda cfg: ScriptedSource([[gauge(URP, 1)]]), loaded.config, loaded.settings,
                  config_path=str(path))
    by_rename(path, "sidecar:\n  mode: cluster\n  admin:\n    bootstrapServers: [k:9092]\n", 1)
    with caplog.at_level(logging.ERROR, logger="kafka_jmx_sidecar.collector"):
        c.poll_once()
    assert c.metrics.reload_failure.value == 1 and c.settings.mode == "broker"
    assert "sidecar.mode: changed from broker to cluster" in caplog.text and "restart" in caplog.text
