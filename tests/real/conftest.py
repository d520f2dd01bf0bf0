"""Fixtures that start the real programs: Kafka clusters of several releases and jmx_exporter.

`real_kafka(release, brokers=1, jmx="plain")` returns a running cluster shared by every test of the
session that asks for the same arguments, so its start-up (5 to 15 s) is paid once; at most two
shared clusters run at a time (the oldest is stopped when a third is asked for), and all are
stopped after the last test that uses the fixture (tests/last_use.py). A test that changes a
shared cluster (stops a broker, moves partitions) puts it back before it ends, or asks
`own_kafka(...)` for a cluster of its own, which is stopped when the test ends. Every process is
stopped by PID, and checked gone.
"""
from __future__ import annotations

from collections import OrderedDict

import pytest

from harness import processes
from harness.jmx_exporter import JmxExporter
from harness.kafka import KafkaCluster
from tests.last_use import stop_after_last_use

SHARED_AT_ONCE = 2


class _Clusters:
    def __init__(self) -> None:
        self.running: OrderedDict[tuple, KafkaCluster] = OrderedDict()

    def get(self, release: str, brokers: int = 1, jmx: str = "plain") -> KafkaCluster:
        key = (release, brokers, jmx)
        if key in self.running:
            self.running.move_to_end(key)
            cluster = self.running[key]
            for node_id, node in cluster.brokers.items():
                assert node.running, f"a test left broker {node_id} of the shared Kafka {release} cluster stopped"
            return cluster
        while len(self.running) >= SHARED_AT_ONCE:
            _, oldest = self.running.popitem(last=False)
            _remove(oldest)
        cluster = KafkaCluster(release, brokers=brokers, jmx=jmx).start()
        self.running[key] = cluster
        return cluster

    def stop_all(self) -> None:
        while self.running:
            _, cluster = self.running.popitem(last=False)
            _remove(cluster)


def _remove(cluster: KafkaCluster) -> None:
    pids = cluster.pids()
    cluster.remove()
    alive = [p for p in pids if processes.pid_alive(p)]
    assert not alive, f"Kafka processes still running after stop: {alive}"


@pytest.fixture(scope="session")
def real_kafka(request):
    clusters = _Clusters()
    stop = stop_after_last_use(request, clusters.stop_all)
    yield clusters.get
    stop()


@pytest.fixture
def own_kafka():
    started: list[KafkaCluster] = []

    def start(release: str, brokers: int = 1, jmx: str = "plain", **kwargs) -> KafkaCluster:
        cluster = KafkaCluster(release, brokers=brokers, jmx=jmx, **kwargs)
        started.append(cluster)
        return cluster.start()

    yield start
    for cluster in started:
        _remove(cluster)


@pytest.fixture
def jmx_exporter():
    """jmx_exporter(release, config_path) -> a started standalone JmxExporter, stopped after the test."""
    started: list[JmxExporter] = []

    def start(release: str, config, **kwargs) -> JmxExporter:
        exporter = JmxExporter(release, config, **kwargs)
        started.append(exporter)
        return exporter.start()

    yield start
    for exporter in started:
        _stop(exporter)


@pytest.fixture(scope="module")
def shared_jmx_exporter():
    """shared_jmx_exporter(release, config_path) -> a started standalone JmxExporter, kept for the
    next tests that ask for the same release and file (a test's text and OpenMetrics cases): one
    runs at a time, the previous stopped when another is asked for."""
    running: dict[tuple, JmxExporter] = {}

    def get(release: str, config) -> JmxExporter:
        key = (release, str(config))
        if key not in running:
            for exporter in running.values():
                _stop(exporter)
            running.clear()
            running[key] = JmxExporter(release, config).start()
        return running[key]

    yield get
    for exporter in running.values():
        _stop(exporter)


def _stop(exporter: JmxExporter) -> None:
    pid = exporter.process.pid if exporter.process else None
    exporter.stop()
    assert pid is None or not processes.pid_alive(pid)


@pytest.fixture(scope="session")
def scenes(request):
    """release -> the future of its scene (tests/real/scenes.py), for the releases the session's
    tests ask for, built PLAYED_AT_ONCE at a time in threads from the first test that needs one."""
    from concurrent.futures import ThreadPoolExecutor

    from kafka_jmx_sidecar.exporter.source.jmx.jvm import start_jvm
    from tests.real.scenes import PLAYED_AT_ONCE, SETUPS, build_scene

    start_jvm()  # JPype's JVM started by the main thread, not by a worker
    wanted = set()
    for item in request.session.items:
        if "scenes" in getattr(item, "fixturenames", ()):
            params = getattr(getattr(item, "callspec", None), "params", {})
            wanted |= {params["scene"]} if "scene" in params else set()
            wanted |= {f[len("scene_"):].replace("_", ".") for f in item.fixturenames if f.startswith("scene_")}
    pool = ThreadPoolExecutor(max_workers=PLAYED_AT_ONCE, thread_name_prefix="kafka-scene")
    yield {r: pool.submit(build_scene, SETUPS[r]) for r in SETUPS if r in wanted}
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def scene_4_4(scenes):
    return scenes["4.4"].result()


@pytest.fixture(scope="session")
def scene_4_1(scenes):
    return scenes["4.1"].result()


@pytest.fixture(scope="session")
def random_beans(request):
    """The MBeans of tests/real/RandomBeans.java for the seed the property test and the named
    examples share (tests/real/test_property_vs_jmx_exporter.py)."""
    from tests.real.random_beans import RandomBeans

    beans = RandomBeans(RANDOM_BEANS_SEED).start()
    stop = stop_after_last_use(request, beans.stop)
    yield beans
    stop()


@pytest.fixture(scope="session")
def current_jmx_exporters(request):
    """naming mode -> the real jmx_exporter release it reproduces, on a JDK 19+, one JVM each
    serving a fresh collector per configuration file (tests/real/per_config_exporter.py)."""
    from tests.real.per_config_exporter import PerConfigExporter, current_java

    java = current_java()
    started = {naming: PerConfigExporter(release, java).start() for naming, release in NAMING_ANCHORS.items()}

    def stop_all() -> None:
        for exporter in started.values():
            pid = exporter.process.pid if exporter.process else None
            exporter.stop()
            assert pid is None or not processes.pid_alive(pid)
    stop = stop_after_last_use(request, stop_all)
    yield started
    stop()


RANDOM_BEANS_SEED = 20251123
NAMING_ANCHORS = {"0.x": "0.20.0", "1.x": "1.6.0"}
