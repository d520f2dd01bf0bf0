"""The poll loop's contract with a stand-in source (a pure unit: no JVM involved here; the JMX
path is covered against the simulator elsewhere)."""
from __future__ import annotations

import os
import time

from kafka_jmx_sidecar.exporter.poll.collector import Collector
from kafka_jmx_sidecar.exporter.base.model import Attribute, MBean, ObjectName
from kafka_jmx_sidecar.exporter.rule_engine.config import load_config, parse_config
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from kafka_jmx_sidecar.exporter.poll.snapshot import OPENMETRICS, TEXT, printed
from kafka_jmx_sidecar.exporter.source.protocol import ReadResult, SourceError

URP = "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"


def gauge(name: str, value) -> MBean:
    return MBean(ObjectName.parse(name), "com.yammer.metrics.reporting.JmxReporter$Gauge",
                 (Attribute("Value", value, "Attribute exposed for management", "java.lang.Object"),))


class ScriptedSource:
    """Returns the next scripted result per read: a list of MBeans, or an exception to raise."""

    target = "127.0.0.1:9999"

    def __init__(self, script):
        self.script = list(script)
        self.connected = True
        self.closed = False

    def read(self) -> ReadResult:
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, Exception):
            self.connected = False
            raise step
        self.connected = True
        return ReadResult(step, round_trips=len(step))

    def close(self):
        self.closed = True


class Clock:
    def __init__(self, t=1_000_000.0):
        self.t = t

    def __call__(self):
        return self.t


def metric_value(text: bytes, name: str) -> float:
    for line in text.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in output")


def make(script, clock=None, settings=None, config=None, path=None):
    src = ScriptedSource(script)
    c = Collector(lambda cfg: src, config or parse_config("{}"), settings or SidecarSettings(poll_interval_seconds=10),
                  config_path=path, clock=clock or Clock())
    return c, src


def test_a_failed_poll_keeps_the_last_good_snapshot_and_marks_it_stale():
    clock = Clock()
    c, _ = make([[gauge(URP, 3)], SourceError("connection refused to 127.0.0.1:9999")], clock)
    assert not c.ready
    assert c.poll_once()
    assert c.ready and not c.stale()
    body = c.snapshot.bodies[TEXT]
    assert b'kafka_server_ReplicaManager_Value{name="UnderReplicatedPartitions",} 3.0' in body
    clock.t += 5
    assert not c.poll_once()
    assert c.snapshot.bodies[TEXT] == body  # the last good snapshot is still served
    assert c.stale()
    snap, tail = c.exposition(TEXT)
    assert snap.bodies[TEXT] == body
    assert metric_value(tail, "jmx_scrape_error") == 1
    assert metric_value(tail, "kafka_jmx_sidecar_snapshot_stale") == 1
    assert metric_value(tail, "kafka_jmx_sidecar_snapshot_age_seconds") == 5
    assert metric_value(tail, 'kafka_jmx_sidecar_polls_total{result="failure"}') == 1
    assert c.last_error == "connection refused to 127.0.0.1:9999"


def test_recovery_clears_stale_and_serves_the_new_values():
    clock = Clock()
    c, _ = make([[gauge(URP, 3)], SourceError("down"), [gauge(URP, 0)]], clock)
    c.poll_once()
    c.poll_once()
    clock.t += 1
    assert c.poll_once()
    assert not c.stale()
    assert b'UnderReplicatedPartitions",} 0.0' in c.snapshot.bodies[TEXT]
    _, tail = c.exposition(TEXT)
    assert metric_value(tail, "jmx_scrape_error") == 0
    assert metric_value(tail, 'kafka_jmx_sidecar_polls_total{result="success"}') == 2


def test_an_old_snapshot_becomes_stale_after_the_limit():
    clock = Clock()
    c, _ = make([[gauge(URP, 1)]], clock, SidecarSettings(poll_interval_seconds=10, stale_after_seconds=25))
    c.poll_once()
    clock.t += 24
    assert not c.stale()
    clock.t += 2
    assert c.stale()


def test_openmetrics_tail_has_no_eof_of_its_own():
    c, _ = make([[gauge(URP, 1)]])
    c.poll_once()
    snap, tail = c.exposition(OPENMETRICS)
    assert not tail.endswith(b"# EOF\n")
    assert not snap.bodies[OPENMETRICS].endswith(b"# EOF\n")
    assert b"jmx_exporter_build_info" in tail


def _rewrite(path, text: str) -> None:
    """New content, replacing the file whole (a rename, as an editor or Kubernetes does): taken
    at the next check (one rewritten in place is taken once it settled: test_reload.py)."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


def test_a_bad_config_reload_keeps_the_last_good_config_and_counts_a_failure(tmp_path):
    path = tmp_path / "config.yml"
    path.write_text("hostPort: 127.0.0.1:1\nrules:\n- pattern: 'kafka.server<type=(.+), name=(.+)><>Value'\n  name: urp_$2\n")
    c, _ = make([[gauge(URP, 2)]], config=load_config(str(path)), path=str(path))
    c.poll_once()
    assert b"urp_UnderReplicatedPartitions 2.0" in c.snapshot.bodies[TEXT]
    _rewrite(path, "hostPort: 127.0.0.1:1\nrules:\n- pattern: 'kafka.server<type=(.+'\n  name: broken\n")
    c.poll_once()
    assert b"urp_UnderReplicatedPartitions 2.0" in c.snapshot.bodies[TEXT]
    _, tail = c.exposition(TEXT)
    assert metric_value(tail, "jmx_config_reload_failure_total") == 1
    assert metric_value(tail, "jmx_config_reload_success_total") == 0
    _rewrite(path, "hostPort: 127.0.0.1:1\nrules:\n- pattern: 'kafka.server<type=(.+), name=(.+)><>Value'\n  name: fixed_$2\n")
    c.poll_once()
    assert b"fixed_UnderReplicatedPartitions 2.0" in c.snapshot.bodies[TEXT]
    _, tail = c.exposition(TEXT)
    assert metric_value(tail, "jmx_config_reload_success_total") == 1


def test_run_polls_on_its_own_interval_until_stopped():
    import threading

    c, src = make([[gauge(URP, 1)]], clock=time.time, settings=SidecarSettings(poll_interval_seconds=0.05))
    stop = threading.Event()
    t = threading.Thread(target=c.run, args=(stop,))
    t.start()
    time.sleep(0.3)
    stop.set()
    t.join(2)
    assert not t.is_alive()
    assert src.closed
    _, tail = c.exposition(TEXT)
    assert metric_value(tail, 'kafka_jmx_sidecar_polls_total{result="success"}') >= 3


def test_a_poll_renders_only_the_formats_scraped_lately(monkeypatch):
    import kafka_jmx_sidecar.exporter.poll.collector as collector_module

    c, _ = make([[gauge(URP, 3)]])
    assert c.poll_once()
    assert c.snapshot.rendered(TEXT) and c.snapshot.rendered(OPENMETRICS)  # both until told otherwise
    c.exposition(OPENMETRICS)
    monkeypatch.setattr(collector_module, "FORMAT_IDLE_SECONDS", 0.0)
    assert c.formats() == []
    monkeypatch.setattr(collector_module, "FORMAT_IDLE_SECONDS", 3600.0)
    c._requested[TEXT] -= 7200  # no text scrape for two hours
    assert c.formats() == [OPENMETRICS]
    assert c.poll_once()
    assert c.snapshot.rendered(OPENMETRICS) and not c.snapshot.rendered(TEXT)
    # a text scrape still gets the poll's values, rendered on demand, and the next poll renders text
    snap, _ = c.exposition(TEXT)
    assert b'UnderReplicatedPartitions",} 3.0' in snap.bodies[TEXT]
    assert c.poll_once() and c.snapshot.rendered(TEXT)


def test_a_one_shot_prints_a_format_no_poll_rendered_as_a_rendered_one_reads():
    script = [[gauge(URP, 3), gauge(URP.replace("UnderReplicatedPartitions", "OfflineReplicaCount"), 1)]]
    src = ScriptedSource(script * 2)
    bare = Collector(lambda cfg: src, parse_config("{}"), SidecarSettings(poll_interval_seconds=10), formats=())
    full, _ = make(script)
    assert bare.poll_once() and full.poll_once()
    assert not bare.snapshot.rendered(TEXT) and not bare.snapshot.rendered(OPENMETRICS)
    for fmt, eof in ((TEXT, b""), (OPENMETRICS, b"# EOF\n")):
        body = b"".join(printed(bare.snapshot, fmt))
        assert b'{name="OfflineReplicaCount",} 1.0' in body or b'{name="OfflineReplicaCount"} 1.0' in body
        assert body == full.snapshot.bodies[fmt] + eof == b"".join(printed(full.snapshot, fmt))
    assert not bare.snapshot.rendered(TEXT)  # printed, neither compressed nor kept


def test_poll_phases_and_gc_freeze():
    import gc

    during = []

    def read():
        during.append(gc.get_threshold())
        if len(during) == 2:
            raise SourceError("broker gone")
        return ReadResult([gauge(URP, 3)], 1, {"names": 0.0, "queries": 0.25, "reads": 0.5})

    src = ScriptedSource([[gauge(URP, 3)]])
    src.read = read
    c = Collector(lambda cfg: src, parse_config("{}"), SidecarSettings(), clock=Clock(), freeze_gc=True)
    before = gc.get_threshold()
    try:
        assert c.poll_once()
        assert gc.get_freeze_count() > 0
        assert set(c.last_poll.phases) == {"names", "queries", "reads", "rules", "render"}
        assert (c.last_poll.round_trips, c.last_poll.mbeans, c.last_poll.series) == (1, 1, 1)
        _, tail = c.exposition(TEXT)
        assert metric_value(tail, 'kafka_jmx_sidecar_poll_phase_seconds{phase="reads"}') == 0.5
        assert metric_value(tail, "process_resident_memory_bytes") > 0
        # no full collection during a poll (young ones go on); the thresholds are back after it,
        # a failed one too
        assert gc.get_threshold() == before
        assert not c.poll_once() and gc.get_threshold() == before
        assert during == [before[:2] + (2**31 - 1,)] * 2
    finally:
        gc.unfreeze()


def test_a_gzip_response_is_built_once_per_second_and_state():
    import gzip

    clock = Clock()
    c, src = make([[gauge(URP, 3)], [gauge(URP, 4)]], clock)
    assert c.poll_once()
    length, chunks = c.response(TEXT, True)
    assert c.response(TEXT, True)[1] is chunks  # the same bytes while nothing changed
    body = gzip.decompress(b"".join(chunks))
    assert length == sum(map(len, chunks)) and b'UnderReplicatedPartitions",} 3.0' in body
    assert metric_value(body, "kafka_jmx_sidecar_snapshot_age_seconds") == 0
    clock.t += 1  # a second later: the self metrics are rendered again
    _, later = c.response(TEXT, True)
    assert later is not chunks and metric_value(gzip.decompress(b"".join(later)), "kafka_jmx_sidecar_snapshot_age_seconds") == 1
    assert c.poll_once()  # a new poll: a new response at once
    _, polled = c.response(TEXT, True)
    assert b'UnderReplicatedPartitions",} 4.0' in gzip.decompress(b"".join(polled))
    src.connected = False  # the connection state shows at once too
    assert c.response(TEXT, True)[1] is not polled
    # without gzip: the body decompressed piece by piece, never cached
    length, pieces = c.response(OPENMETRICS, False)
    data = b"".join(pieces)
    assert len(data) == length and data.endswith(b"# EOF\n")


def test_start_delay_seconds_holds_the_first_poll_back():
    """jmx_exporter's startDelaySeconds: nothing is read from the broker before the delay is over,
    and the sidecar is not ready until a poll after it."""
    import threading

    c, src = make([[gauge(URP, 3)]], config=parse_config("startDelaySeconds: 1\n"),
                  settings=SidecarSettings(poll_interval_seconds=0.1))
    reads = []
    real = src.read
    src.read = lambda: reads.append(time.monotonic()) or real()
    stop = threading.Event()
    started = time.monotonic()
    t = threading.Thread(target=c.run, args=(stop,))
    t.start()
    try:
        time.sleep(0.6)
        assert not reads and not c.ready
        deadline = time.monotonic() + 10
        while not c.ready and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.ready and reads[0] - started >= 1.0
    finally:
        stop.set()
        t.join(10)
    assert not t.is_alive()


def test_a_reload_without_a_target_keeps_the_last_good_config(tmp_path):
    path = tmp_path / "config.yml"
    path.write_text("hostPort: 127.0.0.1:1\nrules:\n- pattern: 'kafka.server<type=(.+), name=(.+)><>Value'\n  name: urp_$2\n")
    c, _ = make([[gauge(URP, 2)]], config=load_config(str(path)), path=str(path))
    c.poll_once()
    _rewrite(path, "rules:\n- pattern: 'kafka.server<type=(.+), name=(.+)><>Value'\n  name: other_$2\n")
    c.poll_once()
    assert b"urp_UnderReplicatedPartitions 2.0" in c.snapshot.bodies[TEXT]
    _, tail = c.exposition(TEXT)
    assert metric_value(tail, "jmx_config_reload_failure_total") == 1


def _body(c: Collector, fmt: str = TEXT) -> bytes:
    length, chunks = c.response(fmt, False)
    out = b"".join(chunks)
    assert len(out) == length
    return out


def test_the_broker_series_are_withdrawn_after_failing_polls_and_return_with_a_good_one():
    clock = Clock()
    c, _ = make([[gauge(URP, 3)], SourceError("down"), SourceError("down"), [gauge(URP, 0)]], clock,
                SidecarSettings(poll_interval_seconds=10))  # withdrawn after 4 intervals: 40 s
    c.poll_once()
    clock.t += 10
    c.poll_once()
    clock.t += 30  # 40 s since the last good poll: still served, marked stale
    body = _body(c)
    assert b'UnderReplicatedPartitions",} 3.0' in body
    assert metric_value(body, "kafka_jmx_sidecar_snapshot_withdrawn") == 0
    clock.t += 1
    for fmt in (TEXT, OPENMETRICS):
        body = _body(c, fmt)
        assert b"UnderReplicatedPartitions" not in body and b"kafka_server" not in body
        assert metric_value(body, "jmx_scrape_error") == 1
        assert metric_value(body, "kafka_jmx_sidecar_snapshot_withdrawn") == 1
        assert metric_value(body, "kafka_jmx_sidecar_snapshot_stale") == 1
        assert metric_value(body, "kafka_jmx_sidecar_snapshot_age_seconds") == 41
    assert c.ready  # a probe still sees a sidecar that has polled: the series return by themselves
    c.poll_once()  # fails again: still withdrawn
    assert b"kafka_server" not in _body(c)
    clock.t += 5
    assert c.poll_once()
    body = _body(c)
    assert b'UnderReplicatedPartitions",} 0.0' in body
    assert metric_value(body, "kafka_jmx_sidecar_snapshot_withdrawn") == 0


def test_a_withdrawal_limit_of_zero_withdraws_at_the_first_failed_poll():
    clock = Clock()
    c, _ = make([[gauge(URP, 3)], SourceError("down")], clock,
                SidecarSettings(poll_interval_seconds=10, withdraw_after_seconds=0))
    c.poll_once()
    assert b"kafka_server" in _body(c)
    clock.t += 10
    c.poll_once()
    assert b"kafka_server" not in _body(c)


def test_a_slow_but_good_broker_is_never_withdrawn():
    clock = Clock()
    c, _ = make([[gauge(URP, 3)]], clock, SidecarSettings(poll_interval_seconds=10))
    c.poll_once()
    clock.t += 100  # no poll for a long while (a slow poll in progress), but none failed
    assert b"kafka_server" in _body(c)


def test_the_health_mbeans_read_first_are_served_as_a_partial_snapshot_until_the_first_complete_poll():
    clock = Clock()
    c, src = make([[gauge(URP, 2), gauge("kafka.log:type=LogManager,name=OfflineLogDirectoryCount", 0)]], clock)
    src.read_health = lambda: ReadResult([gauge(URP, 2)], round_trips=1)
    assert c.poll_health_first()
    body = _body(c)
    assert b'UnderReplicatedPartitions",} 2.0' in body and b"OfflineLogDirectoryCount" not in body
    assert metric_value(body, "kafka_jmx_sidecar_snapshot_partial") == 1
    # not a complete poll: not ready, no last successful poll, nothing counted as a poll
    assert c.partial and not c.ready
    assert metric_value(body, "kafka_jmx_sidecar_last_successful_poll_timestamp_seconds") == 0
    assert metric_value(body, 'kafka_jmx_sidecar_polls_total{result="success"}') == 0
    clock.t += 30
    assert c.poll_once()
    body = _body(c)
    assert b'UnderReplicatedPartitions",} 2.0' in body and b"OfflineLogDirectoryCount" in body
    assert metric_value(body, "kafka_jmx_sidecar_snapshot_partial") == 0
    assert c.ready and not c.partial
    assert not c.poll_health_first()  # once a complete poll is served, never again
    assert b"OfflineLogDirectoryCount" in _body(c)


def test_no_partial_snapshot_when_the_health_read_fails_or_the_source_has_none():
    c, src = make([[gauge(URP, 1)]])
    assert not c.poll_health_first()  # ScriptedSource has no read_health

    def down():
        raise SourceError("connection refused")

    src.read_health = down
    assert not c.poll_health_first()
    assert c.snapshot.taken_at == 0 and c.last_error is None  # the complete poll reports failures


class FakeTime:
    """A monotonic clock that reads and waits advance, for the poll loop (patched in)."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def monotonic(self) -> float:
        return self.now

    @staticmethod
    def time() -> float:
        return time.time()


class FakeStop:
    """`stop` for Collector.run: each wait advances the fake clock; set after `limit` waits."""

    def __init__(self, clock: FakeTime, limit: int):
        self.clock, self.limit, self.waits = clock, limit, []

    def is_set(self) -> bool:
        return len(self.waits) >= self.limit

    def wait(self, seconds: float) -> bool:
        self.waits.append(round(seconds, 6))
        self.clock.now += seconds
        return self.is_set()


def test_overruns_are_counted_and_logged_once_and_polls_keep_to_the_ticks(monkeypatch, caplog):
    import logging

    import kafka_jmx_sidecar.exporter.poll.collector as collector_module
    import kafka_jmx_sidecar.exporter.poll.loop as loop_module

    fake = FakeTime()
    monkeypatch.setattr(collector_module, "time", fake)
    monkeypatch.setattr(loop_module, "time", fake)
    c, src = make([[gauge(URP, 1)]], settings=SidecarSettings(poll_interval_seconds=15))
    durations = iter([3, 40, 40, 5, 40])
    real = src.read

    def read():
        fake.now += next(durations)
        return real()

    src.read = read
    stop = FakeStop(fake, 5)
    with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.collector"):
        c.run(stop)
    # polls at 1000 (3 s), 1015 (40 s: the ticks 1030 and 1045 pass), 1060 (40 s), 1105 (5 s), 1120 (40 s):
    # after an overrun the next poll waits for the next tick, never polls the missed ones back to back
    assert stop.waits == [12, 5, 5, 10, 5]
    _, tail = c.exposition(TEXT)
    assert metric_value(tail, "kafka_jmx_sidecar_poll_overruns_total") == 3
    assert metric_value(tail, 'kafka_jmx_sidecar_polls_total{result="success"}') == 5
    # the first overrun is logged, and when polls fit again; the run of overruns after that is not
    # (the first poll of a big broker, and those listing its names again, overrun now and then)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "took 40.0 s, longer than sidecar.pollIntervalSeconds (15 s)" in warnings[0]
    # and the first complete poll, once, with what it read and took (it makes the sidecar ready)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO] == [
        "first complete poll of 127.0.0.1:9999: 1 MBeans, 1 series in 3.0 s; ready",
        "polls of 127.0.0.1:9999 fit in sidecar.pollIntervalSeconds again (the last took 5.0 s)"]


def test_stop_gives_up_the_poll_in_progress_and_publishes_nothing_of_it(caplog):
    import logging

    c, src = make([[gauge(URP, 1)], [gauge(URP, 7)]])
    assert c.poll_once()
    aborted = []
    src.abort = lambda: aborted.append(True)
    real = src.read

    def read():  # the signal arrives while the broker is being read, which ends normally
        c.stop()
        return real()

    src.read = read
    with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.collector"):
        assert not c.poll_once()
    assert aborted == [True]
    assert b'UnderReplicatedPartitions",} 1.0' in c.snapshot.bodies[TEXT]  # the read's 7 is not published

    def given_up():  # what an aborted source raises
        raise SourceError("JMX calls to 127.0.0.1:9999 given up: the sidecar is stopping")

    src.read = given_up
    with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.collector"):
        assert not c.poll_once()
    # not a failure of the broker: not counted, not logged as an error, nothing marked stale
    _, tail = c.exposition(TEXT)
    assert metric_value(tail, 'kafka_jmx_sidecar_polls_total{result="failure"}') == 0
    assert c.last_error is None and not c.stale()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_poll_that_hangs_counts_as_failed_from_the_clock_and_withdraws_at_withdraw_after(caplog):
    """A broker that accepts connections but never answers: the read waits for its timeout
    (readTimeoutSeconds, far later); the serving side does not wait for it."""
    import logging
    import threading

    clock = Clock()
    c, src = make([[gauge(URP, 3)]], clock, SidecarSettings(poll_interval_seconds=10, withdraw_after_seconds=40,
                                                           read_timeout_seconds=300))
    assert c.poll_once()
    entered, release = threading.Event(), threading.Event()
    real = src.read
    src.read = lambda: (entered.set(), release.wait(30), real())[2]
    t0 = clock.t
    with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.collector"):
        poll = threading.Thread(target=c.poll_once)
        poll.start()
        assert entered.wait(10)
        clock.t = t0 + 10  # as long as the interval: a slow poll, nothing said yet
        body = _body(c)
        assert b'UnderReplicatedPartitions",} 3.0' in body and metric_value(body, "jmx_scrape_error") == 0
        assert metric_value(body, "kafka_jmx_sidecar_snapshot_stale") == 0
        clock.t = t0 + 39.5  # past staleAfterSeconds (3 intervals), within withdrawAfterSeconds: stale, not failed
        body = _body(c)
        assert b'UnderReplicatedPartitions",} 3.0' in body
        assert metric_value(body, "jmx_scrape_error") == 0 and metric_value(body, "kafka_jmx_sidecar_snapshot_stale") == 1
        clock.t = t0 + 40.5  # withdrawAfterSeconds after the last good poll, the read still waiting: failed
        assert c.watch()  # the watchdog's look
        body = _body(c)
        assert b"kafka_server" not in body and metric_value(body, "kafka_jmx_sidecar_snapshot_withdrawn") == 1
        assert metric_value(body, "jmx_scrape_error") == 1
        assert metric_value(body, 'kafka_jmx_sidecar_polls_total{result="failure"}') == 0  # nothing failed yet
        release.set()  # the broker answers after all
        poll.join(10)
    body = _body(c)
    assert b'UnderReplicatedPartitions",} 3.0' in body and metric_value(body, "jmx_scrape_error") == 0
    assert metric_value(body, "kafka_jmx_sidecar_snapshot_withdrawn") == 0
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "without ending" in m]) == 1
    assert len([m for m in messages if "its series are withdrawn from /metrics" in m]) == 1
    assert messages[-1] == "poll of 127.0.0.1:9999 succeeded again"


def test_a_long_first_complete_poll_after_the_partial_snapshot_is_not_a_hang():
    import threading

    clock = Clock()
    c, src = make([[gauge(URP, 3)]], clock, SidecarSettings(poll_interval_seconds=10, withdraw_after_seconds=0))
    src.read_health = lambda: ReadResult([gauge(URP, 3)], round_trips=1)
    assert c.poll_health_first() and c.partial
    entered, release = threading.Event(), threading.Event()
    real = src.read
    src.read = lambda: (entered.set(), release.wait(30), real())[2]
    poll = threading.Thread(target=c.poll_once)
    poll.start()
    assert entered.wait(10)
    clock.t += 300  # listing a big broker's names
    body = _body(c)
    release.set()
    poll.join(10)
    assert b"kafka_server" in body and metric_value(body, "jmx_scrape_error") == 0


def test_a_poll_takes_what_did_not_change_from_the_last_snapshot():
    """The collector hands each new snapshot the last one (output/reuse.py): a poll that reads the
    same values renders nothing again, one that reads another value renders its chunk."""
    many = [gauge(f"kafka.server:type=T{i},name=G", i % 3) for i in range(5000)]
    c, src = make([many, many, many[:-1] + [gauge("kafka.server:type=T4999,name=G", 7)]])
    assert c.poll_once() and c.snapshot.kept[TEXT].rendered >= 1
    first = c.snapshot
    assert c.poll_once()
    kept = c.snapshot.kept[TEXT]
    assert kept.rendered == 0 and kept.reused >= 1 and c.snapshot.bodies[TEXT] == first.bodies[TEXT]
    assert c.poll_once()
    assert c.snapshot.kept[TEXT].rendered == 1
    assert b'kafka_server_T4999_Value{name="G",} 7.0' in c.snapshot.bodies[TEXT]
