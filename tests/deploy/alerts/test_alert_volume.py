"""How many alerts a failure raises: the shipped alerts name brokers, topics and clusters, so a
failure touching hundreds or tens of thousands of partitions raises a handful of them.

(a) A broker leads 600 partitions and one follower falls out of all their ISRs: the real promtool
    evaluates the shipped rules over the three sidecars' series, and counts what the opt-in
    per-partition alerts' expressions select (each selected partition would be one alert).
(b) One broker of three is lost in a cluster of 30,000 partitions (RF 3, min ISR 2): a real
    Prometheus scrapes the three sidecars' series (the leaders' per-partition gauges, every
    ReplicaManager count, the lost broker's sidecar failing its polls, then down) and evaluates the
    shipped rules with `for:` cut to seconds. promtool cannot hold this one: its test loader grows
    with the square of the input series (20,000 series take 4 s of CPU, 60,000 take 70 s), and the
    per-partition gauges of 30,000 partitions are 150,000 series.

The series come from fleet.py; which alerts fire is written out by hand below."""
from __future__ import annotations

import http.server
import threading
import time

import yaml

from tests.deploy.alerts.fleet import Partition, exposition, promtool_series, served, sidecar_self
from tests.deploy.alerts.scenario_run import (AT, DOWN, PER_PARTITION, POLL_ERRORS, RULES, TOPIC_UNDER, UNDER,
                                              UNREACHABLE, URP, rules_with_short_for)
from tests.deploy.alerts.test_rules_promtool import alerts as rules_of, promtool
from tests.e2e.prometheus_server import Prometheus

TARGET = {"job": "kafka", "namespace": "kafka"}
# (b)'s scrape and evaluation interval, and so its scrape timeout: each scrape parses 50,000 series
# per target, three at once, and one that outlasts the timeout makes `up` 0, which fires the sidecar
# down alert in a healthy phase. 3 s was outlasted at a load average of 19 on 2 cores.
INTERVAL = 10.0


def alert_sample(name: str, severity: str, **labels: str) -> dict:
    """An ALERTS series of a firing alert, for promtool's promql_expr_test."""
    inner = ",".join(f'{k}="{v}"' for k, v in sorted({"alertname": name, "alertstate": "firing",
                                                      **TARGET, **labels, "severity": severity}.items()))
    return {"labels": f"ALERTS{{{inner}}}", "value": 1}


def test_a_follower_lost_for_600_led_partitions_raises_one_alert_per_broker_and_topic(tmp_path, record_property):
    parts = ([Partition("orders", p, (1, 2, 3), 2) for p in range(300)]
             + [Partition("clicks", p, (1, 2, 3), 2) for p in range(200)]
             + [Partition("payments", p, (1, 2), 2) for p in range(100)])
    healthy, lagging = served(parts, live={1, 2, 3}), served(parts, live={1, 2, 3}, lagging={2})

    def snapshot(kafka: dict[int, dict], first_poll: int) -> dict[str, dict]:
        return {f"kafka-{b}:9404": {**series, "up": 1, **sidecar_self((first_poll, 2), 0, failing=False)}
                for b, series in kafka.items()}

    # healthy for 2 minutes, then broker 2 out of every ISR; each sidecar polls every 30 s
    timeline = [(snapshot(healthy, 0), 2), (snapshot(lagging, 4), 19)]
    series = promtool_series(timeline, lambda target: {"instance": target, **TARGET})
    # what fires, by hand: broker 1 leads 600 under-replicated partitions, the 100 of payments (RF 2,
    # min ISR 2, ISR [1]) under min ISR, the 500 of orders and clicks (ISR [1,3]) at min ISR 2
    shipped = [alert_sample(URP, "warning", instance="kafka-1:9404"),
               alert_sample(UNDER, "critical", instance="kafka-1:9404"),
               alert_sample(AT, "warning", instance="kafka-1:9404"),
               alert_sample(TOPIC_UNDER, "warning", topic="payments")]
    # the opt-in per-partition alerts would fire once per partition their expression selects
    per_partition = {"KafkaUnderReplicatedPartition": 600, "KafkaUnderMinIsrPartition": 100,
                     "KafkaAtMinIsrPartition": 500, "KafkaPartitionUnavailable": 0}
    at = "19m"  # every `for:` (15m at most) elapsed since the follower fell behind at minute 2
    checks = [('ALERTS{alertstate="firing"}', shipped)]
    checks += [(f"count({r['expr']})", [{"labels": "{}", "value": per_partition[r["alert"]]}]
                if per_partition[r["alert"]] else []) for r in rules_of(PER_PARTITION)]
    # the scenario has its 600 flagged partitions, in both the per-partition flags and the counts
    checks += [("count(kafka_cluster_partition_underreplicated == 1)", [{"labels": "{}", "value": 600}]),
               ("sum(kafka_server_replicamanager_underreplicatedpartitions)", [{"labels": "{}", "value": 600}])]
    test = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": e, "eval_time": at, "exp_samples": s} for e, s in checks]}]}
    path = tmp_path / "lead-600-test.yml"
    path.write_text(yaml.safe_dump(test, width=1000))
    started = time.monotonic()
    run = promtool("test", "rules", str(path))
    assert run.returncode == 0, run.stdout + run.stderr[-5000:]
    counts = {"shipped": len(shipped), "per-partition": sum(per_partition.values()), "series": len(series),
              "promtool seconds": round(time.monotonic() - started, 1)}
    print(f"\n600 led partitions lose a follower: {counts}")
    record_property("alert_counts", counts)


# --- (b) -----------------------------------------------------------------------------------------

class Sidecars:
    """One HTTP server per broker answering Prometheus as that broker's sidecar would: its Kafka
    series (set per phase), its own series, polls counted per scrape (2 each, failed while
    `failing`); a broker in `down` answers 503, as a sidecar that is not there."""

    def __init__(self, brokers: list[int]):
        self.kafka: dict[int, bytes] = {b: b"" for b in brokers}
        self.failing: set[int] = set()
        self.down: set[int] = set()
        self.polls = {b: [0, 0] for b in brokers}
        self.servers = {b: http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler(b)) for b in brokers}
        for s in self.servers.values():
            threading.Thread(target=s.serve_forever, daemon=True).start()
        self.instance = {b: f"127.0.0.1:{s.server_address[1]}" for b, s in self.servers.items()}

    def _handler(self, broker: int):
        sidecars = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if broker in sidecars.down:
                    self.send_error(503)
                    return
                failing = broker in sidecars.failing
                sidecars.polls[broker][failing] += 2
                own = sidecar_self(*sidecars.polls[broker], failing=failing)
                body = (b"" if failing else sidecars.kafka[broker]) + exposition(own)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        return Handler

    def serve(self, kafka: dict[int, dict[str, float]]) -> None:
        self.kafka.update({b: exposition(series) for b, series in kafka.items()})

    def stop(self) -> None:
        for s in self.servers.values():
            s.shutdown()
            s.server_close()


def alerts_now(prom: Prometheus, broker_of: dict[str, int]) -> dict[tuple[str, str], str]:
    """Every alert, pending or firing: (alertname, "broker N", "topic T" or "") -> state."""
    out = {}
    for a in prom.alerts():
        labels = a["labels"]
        where = (f"broker {broker_of[labels['instance']]}" if "instance" in labels
                 else f"topic {labels['topic']}" if "topic" in labels else "")
        out[(labels["alertname"], where)] = a["state"]
    return out


def settle_on(prom: Prometheus, broker_of: dict[str, int], expected: set, timeout: float = 90) -> dict:
    """Wait until exactly `expected` fires, then one more evaluation: what is there then (any state)."""
    deadline = time.monotonic() + timeout
    seen = alerts_now(prom, broker_of)
    while {k for k, s in seen.items() if s == "firing"} != expected and time.monotonic() < deadline:
        time.sleep(0.5)
        seen = alerts_now(prom, broker_of)
    time.sleep(INTERVAL + 0.5)  # an alert that a later evaluation would add shows as pending by then
    return alerts_now(prom, broker_of)


def test_a_broker_lost_at_30000_partitions_raises_fewer_than_20_alerts(tmp_path, record_property):
    parts = [Partition(f"topic-{t:03d}", p, tuple((t * 300 + p + k) % 3 + 1 for k in range(3)), 2)
             for t in range(100) for p in range(300)]
    sidecars = Sidecars([1, 2, 3])
    sidecars.serve(served(parts, live={1, 2, 3}, followers=False))
    broker_of = {i: b for b, i in sidecars.instance.items()}
    started = time.monotonic()
    prom = Prometheus(list(sidecars.instance.values()), scrape_interval=f"{INTERVAL:.0f}s",
                      rule_files=[str(rules_with_short_for(tmp_path))])
    try:
        prom.wait_for("sum(kafka_server_replicamanager_leadercount)", 30000, timeout=120)
        time.sleep(INTERVAL + 0.5)  # one more evaluation
        assert alerts_now(prom, broker_of) == {}, prom.query("up")
        # broker 3 is lost: its sidecar fails every poll and withdraws its series; brokers 1 and 2
        # lead every partition now, ISR 2 of 3 (20,000 led by 1: those of broker 3 move to the
        # next replica, 1), every one under-replicated and at min ISR 2
        sidecars.serve(served(parts, live={1, 2}, followers=False))
        sidecars.failing.add(3)
        per_broker = {(URP, "broker 1"), (URP, "broker 2"), (AT, "broker 1"), (AT, "broker 2")}
        counts = {}
        for phase, expected in (("broker 3 unreachable", per_broker | {(UNREACHABLE, "broker 3"),
                                                                        (POLL_ERRORS, "broker 3")}),
                                ("its sidecar down too", per_broker | {(DOWN, "broker 3"), (POLL_ERRORS, "broker 3")})):
            if phase == "its sidecar down too":
                sidecars.down.add(3)
            seen = settle_on(prom, broker_of, expected)
            counts[phase] = len(seen)
            assert seen == dict.fromkeys(expected, "firing") and len(seen) < 20, phase
        # the scenario has its 30,000 flagged partitions, in the leaders' flags and in the counts
        # the broker alerts carry; the opt-in per-partition alerts would be two for each
        values = {(a["labels"]["alertname"], broker_of[a["labels"]["instance"]]): float(a["value"])
                  for a in prom.alerts() if a["labels"]["alertname"] in (URP, AT)}
        assert values == {(URP, 1): 20000, (URP, 2): 10000, (AT, 1): 20000, (AT, 2): 10000}
        assert prom.value("count(kafka_cluster_partition_underreplicated == 1)") == 30000
        counts["seconds"] = round(time.monotonic() - started, 1)
        print(f"\n30,000 partitions, broker 3 of 3 lost: {counts}")
        record_property("alert_counts", counts)
    finally:
        prom.stop()
        sidecars.stop()
