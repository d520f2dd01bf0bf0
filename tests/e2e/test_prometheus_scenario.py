"""A real Prometheus scrapes the sidecar while the simulator plays a scenario; its query API must
return the health values Kafka's rules give at each step (derived by hand from Kafka's definitions).
Three watch the one sidecar (WATCHERS): Debian's Prometheus 2 and Prometheus 3, each as it
negotiates by default (OpenMetrics), and Prometheus 3 asking for the text format only.

What differs between Prometheus 2 and 3 for the sidecar's series is kept here as named tests: a
scrape answer's Content-Type (3 refuses none or an unknown one unless told a fallback), OpenMetrics
`_created` and `# UNIT` (and `_created` read as created timestamps, an opt-in of Prometheus 3),
UTF-8 names (3 accepts them and asks with `escaping=allow-utf-8`; the
sidecar's names stay legacy ones), and the `le` values 3 rewrites in its own float form. A second
sidecar with `naming: "1.x"` (OpenMetrics names, a UNIT, no `_created`) is scraped beside."""
from __future__ import annotations

import http.server
import re
import subprocess
import threading
import time
import urllib.request

import bcrypt
import pytest

from kafka_jmx_sidecar.exporter.http.web_config import load_web_config
from kafka_jmx_sidecar.mbeans.simulator import Simulator
from tests.e2e.prometheus_server import VERSIONS, Prometheus
from tests.e2e.sidecar_harness import Sidecar

# Broker 1 (also the KRaft controller) leads orders-0..2 (RF 3, min ISR 2) and payments-0
# (RF 2, min ISR 1); audit-0 (RF 2 on brokers 2 and 3) is led elsewhere.
CLUSTER = {
    "brokers": [1, 2, 3], "controllers": [1],
    "topics": [
        {"name": "orders", "config": {"min.insync.replicas": 2},
         "partitions": [{"replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1} for _ in range(3)]},
        {"name": "payments", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [1, 2], "isr": [1, 2], "leader": 1}]},
        {"name": "audit", "config": {"min.insync.replicas": 1},
         "partitions": [{"replicas": [2, 3], "isr": [2, 3], "leader": 2}]},
    ],
}
URP = "kafka_server_replicamanager_underreplicatedpartitions"
UNDER = "kafka_server_replicamanager_underminisrpartitioncount"
AT = "kafka_server_replicamanager_atminisrpartitioncount"
REASSIGNING = "kafka_server_replicamanager_reassigningpartitions"
OFFLINE = "kafka_controller_kafkacontroller_offlinepartitionscount"

# (event, {metric: value}) - each expectation worked out by hand under Kafka 4.1 (kafka-3.7 rules)
STEPS = [
    (None, {URP: 0, UNDER: 0, AT: 0, REASSIGNING: 0, OFFLINE: 0}),
    # orders ISR [1,2]: 3 - 2 > 0 is URP; 2 == min(2, 3) is AtMinIsr. payments untouched.
    ({"op": "fail_broker", "broker": 3}, {URP: 3, UNDER: 0, AT: 3}),
    # orders-0 ISR [1]: below min ISR 2, no longer at it.
    ({"op": "shrink_isr", "topic": "orders", "partition": 0, "broker": 2}, {URP: 3, UNDER: 1, AT: 2}),
    # broker 3 catches up: orders-1,2 full; orders-0 ISR [1,3] is URP and at min ISR.
    ({"op": "restore_broker", "broker": 3}, {URP: 1, UNDER: 0, AT: 1}),
    ({"op": "expand_isr", "topic": "orders", "partition": 0, "broker": 2}, {URP: 0, UNDER: 0, AT: 0}),
    ({"op": "produce", "topic": "payments", "bytes": 40_000_000, "messages": 40_000}, {URP: 0}),
    # payments-0 [1,2] -> [1,3]: replicas [1,2,3], adding [3]; KIP-352: RF 2, ISR 2, not URP.
    ({"op": "start_reassignment", "topic": "payments", "partition": 0, "replicas": [1, 3], "auto_complete": False},
     {URP: 0, REASSIGNING: 1, AT: 0}),
    ({"op": "complete_reassignment", "topic": "payments", "partition": 0}, {URP: 0, REASSIGNING: 0}),
    # brokers 2 and 3 down: orders ISR [1] (URP, under min 2), payments [1,3] ISR [1] (URP, at
    # min 1); audit-0 has no live replica: offline, seen only by the controller.
    ({"op": "fail_broker", "broker": 2}, {URP: 3, AT: 3, UNDER: 0}),
    ({"op": "fail_broker", "broker": 3}, {URP: 4, UNDER: 3, AT: 1, OFFLINE: 1}),
    # broker 2 rejoins orders and payments' ISRs... but audit-0 stays offline: only broker 3, its
    # last in-sync replica, may lead it without an unclean election.
    ({"op": "restore_broker", "broker": 2}, {URP: 4, UNDER: 0, AT: 4, OFFLINE: 1}),
    ({"op": "restore_broker", "broker": 3}, {URP: 0, UNDER: 0, AT: 0, OFFLINE: 0}),
]


# name -> (Prometheus version, the formats its jobs ask for: None for the version's default)
TEXT_ONLY = ["PrometheusText0.0.4"]
WATCHERS = {"2": ("2", None), "3": ("3", None), "3-text": ("3", TEXT_ONLY)}
CREATED_TIMESTAMPS = ("--enable-feature=created-timestamp-zero-ingestion",)  # an opt-in of Prometheus 3
LEGACY_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")  # what Prometheus 2 accepts (3 takes any UTF-8)


@pytest.fixture(scope="module")
def sim():
    with Simulator.start(CLUSTER, kafka_version="4.1", broker=1) as s:
        yield s


class _NoContentType(http.server.BaseHTTPRequestHandler):
    """A target answering the text format without a Content-Type header."""

    def do_GET(self):
        body = b"# TYPE probe gauge\nprobe 1\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def watched(sim, tmp_path_factory):
    """The sidecar (job kafka), one with naming 1.x (job kafka-1x) and a target without a
    Content-Type (job blank), each scraped by every WATCHERS Prometheus; `since`..`ready` a time
    range before any step, with polls complete before it and a scrape of both sidecars by each
    Prometheus in it. `created`: a Prometheus 3 with CREATED_TIMESTAMPS scraping the sidecar."""
    blank = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NoContentType)
    threading.Thread(target=blank.serve_forever, daemon=True).start()
    with Sidecar(sim.url, tmp_path_factory.mktemp("sidecar")) as sidecar, \
            Sidecar(sim.url, tmp_path_factory.mktemp("sidecar-1x"), extra='sidecar:\n  naming: "1.x"\n') as one_x:
        sidecar.wait_for_poll_after(time.time())
        one_x.wait_for_poll_after(time.time())
        since = time.time()
        proms: dict[str, Prometheus] = {}
        try:
            for name, (version, protocols) in WATCHERS.items():
                jobs = [{"job_name": job, "scrape_interval": "1s", "static_configs": [{"targets": [target]}],
                         **({"scrape_protocols": protocols} if protocols else {})}
                        for job, target in (("kafka-1x", one_x.target), ("blank", f"127.0.0.1:{blank.server_port}"))]
                proms[name] = Prometheus.of(version, sidecar.target, scrape_protocols=protocols, scrape_configs=jobs)
            created = proms["created"] = Prometheus.v3(sidecar.target, flags=CREATED_TIMESTAMPS)
            for prom in proms.values():
                prom.wait_for('sum(up{job=~"kafka|kafka-1x"})', 1 if prom is created else 2, timeout=30)
            yield {"sidecar": sidecar, "1.x": one_x, "proms": {n: proms[n] for n in WATCHERS}, "created": created,
                   "since": since, "ready": time.time()}
        finally:
            for prom in proms.values():
                prom.stop()
            blank.shutdown()


def test_prometheus_sees_every_step(sim, watched):
    """Each of Prometheus 2, 3 and 3 reading the text format sees every step."""
    proms = watched["proms"]
    for event, expected in STEPS:
        if event:
            sim.apply(event)
            sim.advance(5)
        for metric, value in expected.items():
            for prom in proms.values():
                prom.wait_for(f'{metric}{{job="kafka"}}', value, timeout=30)
    for name, prom in proms.items():
        # reassignment bytes flowed out of the leader while payments-0 moved, and stayed counted
        assert prom.value('kafka_server_brokertopicmetrics_reassignmentbytesout_total{job="kafka"}') > 0, name
        assert prom.value('up{job="kafka"}') == 1, name


@pytest.mark.parametrize("name", [n for n, (version, _) in WATCHERS.items() if version == "3"])
def test_prometheus_3_scrapes_the_sidecar_without_a_fallback_protocol(watched, name):
    """Prometheus 3 refuses an answer whose Content-Type is missing or unknown unless the job sets
    fallback_scrape_protocol; the sidecar names its format, so no job sets one. The format each
    asked for is the one it got: in OpenMetrics the config-reload counter's `_created` belongs to
    its family, in the text format it is a gauge family of its own."""
    prom = watched["proms"][name]
    assert "fallback_scrape_protocol" not in open(prom.config_path).read()
    sidecars = [t for t in prom.target_health() if t["labels"]["job"] != "blank"]
    assert [(t["health"], t["lastError"]) for t in sidecars] == [("up", "")] * 2
    families = prom.metadata()
    if WATCHERS[name][1] == TEXT_ONLY:
        assert families["jmx_config_reload_failure_created"][0]["type"] == "gauge"
        assert "jmx_config_reload_failure" not in families
    else:
        assert families["jmx_config_reload_failure"][0]["type"] == "counter"
        assert "jmx_config_reload_failure_created" not in families


def test_prometheus_3_refuses_a_target_without_a_content_type(watched):
    """What the test above guards against, shown on a target that sends no Content-Type: Prometheus
    2 takes it as the text format, Prometheus 3 marks it down and says why."""
    for name, (version, _) in WATCHERS.items():
        (blank,) = [t for t in watched["proms"][name].target_health() if t["labels"]["job"] == "blank"]
        if version == "2":
            assert (blank["health"], blank["lastError"]) == ("up", ""), name
        else:
            assert blank["health"] == "down" and "blank Content-Type" in blank["lastError"], (name, blank)


def _series(prom: Prometheus, job: str, since: float, ready: float) -> set[tuple]:
    return {tuple(sorted((k, v) for k, v in s.items() if k != "instance"))
            for s in prom.series(f'{{job="{job}"}}', since, ready)}


@pytest.mark.parametrize("job", ["kafka", "kafka-1x"])
def test_the_same_series_in_prometheus_2_and_3(watched, job):
    """Every series name and label, `_created` and `le` included, is the same in Prometheus 2 and
    3 and in either format. OpenMetrics `_created` lines are kept by Prometheus 3 as series, as by
    2 (0.x naming writes them, 1.x does not); the histogram's `le` values, which Prometheus 3
    rewrites in its own float form (`1` becomes `1.0`), are written in that form already; the
    names are legacy ones, which Prometheus 3's UTF-8 names leave as they are."""
    found = {name: _series(prom, job, watched["since"], watched["ready"]) for name, prom in watched["proms"].items()}
    assert found["2"] and all(series == found["2"] for series in found.values()), \
        {name: sorted(series ^ found["2"]) for name, series in found.items()}
    names = {dict(s)["__name__"] for s in found["2"]}
    assert ("jmx_config_reload_failure_created" in names) == (job == "kafka")
    assert all(LEGACY_NAME.fullmatch(n) for s in found["2"] for n in (dict(s)["__name__"], *dict(s))), names
    sidecar = watched["sidecar" if job == "kafka" else "1.x"]
    for accept in ("application/openmetrics-text;version=1.0.0", "text/plain;version=0.0.4"):
        with urllib.request.urlopen(urllib.request.Request(f"http://{sidecar.target}/metrics",
                                                           headers={"Accept": accept})) as answer:
            served = set(re.findall(r'_bucket\{le="([^"]+)"\}', answer.read().decode()))
        assert served == {dict(s)["le"] for s in found["3"] if "le" in dict(s)}, accept


def test_prometheus_3_created_timestamps_take_the_created_series(watched):
    """With created timestamps on (Prometheus 3, opt-in), an OpenMetrics `_created` line is no
    series: the 0.x naming's jmx_config_reload_*_created leave, and each counter starts with a 0
    at its created time instead; every other series stays."""
    found = _series(watched["created"], "kafka", watched["since"], watched["ready"])
    plain = _series(watched["proms"]["3"], "kafka", watched["since"], watched["ready"])
    created_series = {s for s in plain if dict(s)["__name__"].endswith("_created")}
    assert {dict(s)["__name__"] for s in created_series} == {"jmx_config_reload_failure_created",
                                                            "jmx_config_reload_success_created"}
    assert found == plain - created_series
    created_at = watched["proms"]["2"].value('jmx_config_reload_failure_created{job="kafka"}')
    (counter,) = watched["created"].query('jmx_config_reload_failure_total{job="kafka"}[10m]')
    assert counter["values"][0] == [round(created_at, 3), "0"]


def test_units_in_prometheus_2_and_3(watched):
    """OpenMetrics `# UNIT` (naming 1.x writes one, for the scrape duration in seconds): both
    versions keep it in the family's metadata (beside the 0.x sidecar's, which has none); the text
    format has none to give."""
    units = {name: {family: unit for family, entries in prom.metadata().items()
                    for unit in {e.get("unit") for e in entries} - {"", None}}
             for name, prom in watched["proms"].items()}
    assert units["2"] == units["3"] == {"jmx_scrape_duration_seconds": "seconds"}
    assert units["3-text"] == {}


def test_prometheus_scrapes_over_tls_with_basic_auth(sim, tmp_path):
    """Prometheus 2 and 3 with the right password scrape over TLS; a Prometheus with a wrong one gets a 401."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.crt",
            "-days", "1", "-subj", "/CN=sidecar", "-addext", "subjectAltName=IP:127.0.0.1")
    hashed = bcrypt.hashpw(b"scrape-me", bcrypt.gensalt(rounds=4)).decode()
    (tmp_path / "web.yml").write_text(
        f"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    web = load_web_config(str(tmp_path / "web.yml"))
    with Sidecar(sim.url, tmp_path, web=web) as sidecar:
        good, good_3 = (Prometheus.of(v, sidecar.target, scheme="https", basic_auth=("prometheus", "scrape-me"),
                                      ca_file=str(tmp_path / "server.crt")) for v in VERSIONS)
        bad = Prometheus(sidecar.target, scheme="https", basic_auth=("prometheus", "wrong"),
                         ca_file=str(tmp_path / "server.crt"))
        try:
            for prom in (good, good_3):
                prom.wait_for('up{job="kafka"}', 1, timeout=30)
                prom.wait_for(URP, 0, timeout=30)
            bad.wait_for('up{job="kafka"}', 0, timeout=30)
            # Both Prometheus scrape from 127.0.0.1, and the sidecar checks one password per client
            # address at a time: a scrape of one that meets the other's check gets a 429 (by design),
            # so a 429 may come first; the wrong password's own answer, a 401, must follow.
            deadline, error = time.monotonic() + 30, ""
            while "401" not in error and time.monotonic() < deadline:
                error = bad.target_health()[0].get("lastError") or ""
                time.sleep(0.2)
            assert "401" in error, error
        finally:
            for prom in (good, good_3, bad):
                prom.stop()

