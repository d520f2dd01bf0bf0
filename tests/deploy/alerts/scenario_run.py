"""One run of scenario-alerts.yml for the module's tests: the simulator (real JMX/RMI), the sidecar
(in this process, as `serve` runs it) and a real Prometheus of each version (2 and 3, VERSIONS)
scraping it and evaluating a copy of the shipped alert rules whose `for:` durations, and only those,
are cut to seconds.

Each phase of the scenario is applied once the previous phase's firing alerts are the expected ones
(read from /api/v1/alerts of both); what each saw is recorded for the tests to assert on, and both
are kept for the dashboard's queries over the whole run."""
from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

from kafka_jmx_sidecar.mbeans.simulator import Simulator, scenario
from tests.e2e.prometheus_server import VERSIONS, Prometheus
from tests.e2e.sidecar_harness import Sidecar

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
RULES = REPO / "helm" / "kafka-jmx-sidecar" / "files" / "prometheus-rules.yaml"
PER_PARTITION = RULES.with_name("prometheus-rules-per-partition.yaml")
SCENARIO = HERE / "scenario-alerts.yml"
FOR_IN_TEST = "3s"  # every `for:` longer than 0s becomes this in the test copy
# the sidecar next to broker 1: polls every 0.5 s, stale after 2 s, withdrawn after 15 s of failures
# (or of a poll without an answer: the stale phase's hang, up to 20 s, stays stale for its first 15 s)
SIDECAR = ("sidecar:\n  staleAfterSeconds: 2\n  withdrawAfterSeconds: 15\n  readTimeoutSeconds: 60\n"
           "  reassignment: {}\n")

# What fires once each phase settled, worked out by hand from Kafka's definitions (the KIPs).
URP, UNDER, AT = "KafkaUnderReplicatedPartitions", "KafkaUnderMinIsrPartitions", "KafkaAtMinIsrPartitions"
TOPIC_UNDER = "KafkaTopicUnderMinIsr"
OFFLINE, STALLED = "KafkaOfflinePartitions", "KafkaReassignmentStalled"
UNREACHABLE, STALE = "KafkaJmxSidecarBrokerUnreachable", "KafkaJmxSidecarSnapshotStale"
POLL_ERRORS, BAD_CONFIG = "KafkaJmxSidecarPollErrors", "KafkaJmxSidecarConfigReloadFailed"
DOWN = "KafkaJmxSidecarDown"


def alerts(name: str, *where: str) -> set[tuple[str, str]]:
    return {(name, w) for w in where} if where else {(name, "")}


EXPECTED = {
    # (kafka-3.7 profile; the sidecar is next to broker 1, which leads orders-0..2, payments-0,
    # moving-0 and single-0 and is the only (active) controller; audit-0 is led by broker 2). The
    # broker alerts come once for broker 1 whatever the number of its partitions, the topic alert
    # once per topic. single-0 (RF 1, min ISR 1) is at min ISR by design the whole time and never
    # counts; the active controller count is 1 throughout, no log directory goes offline and no
    # election is unclean.
    "at=0": frozenset(),
    # orders ISR [1,2] of 3: under-replicated, at min ISR 2. moving-0 [1,2] -> [1,3], broker 3 down:
    # replicas [1,3,2], adding [3], ISR [1,2]: not URP (KIP-352: RF 2, ISR 2), not at min ISR
    # (min(1, 3) = 1); it leads no byte to broker 3: stalled.
    "at=10": frozenset(alerts(URP) | alerts(AT) | alerts(STALLED)),
    "at=20": frozenset(),
    # orders-0 ISR [1]: under min ISR 2 (not at it); orders-1,2 ISR [1,2]: at min ISR
    "at=30": frozenset(alerts(URP) | alerts(UNDER) | alerts(AT) | alerts(TOPIC_UNDER, "orders")),
    # brokers 2 and 3 down: orders ISR [1] (under min 2); payments-0 and moving-0 ISR [1] of 2
    # (URP, at min ISR 1 with a replica missing); audit-0 has no live replica: the controller's
    # offline count is 1
    "at=40": frozenset(alerts(URP) | alerts(UNDER) | alerts(AT) | alerts(TOPIC_UNDER, "orders") | alerts(OFFLINE)),
    "at=50": frozenset(),
    # payments-0 moves to broker 3 and completes: nothing fires (checked at every second of it too)
    "at=60": frozenset(),
    # polls hang but do not fail: stale, not unreachable
    "stale": frozenset(alerts(STALE)),
    "recovered": frozenset(),
    # every poll fails: unreachable and poll errors; stale stays silent (BrokerUnreachable says it);
    # the broker's series are withdrawn, so no broker alert holds a last value (nor the controller
    # count: the sum over no series is no series)
    "unreachable": frozenset(alerts(UNREACHABLE) | alerts(POLL_ERRORS)),
    "bad_config": frozenset(alerts(UNREACHABLE) | alerts(POLL_ERRORS) | alerts(BAD_CONFIG)),
    # the sidecar itself stops: Prometheus reads `up` 0 for a target that served its build info;
    # its instant series go stale (so BrokerUnreachable ends), while the windowed ones keep their
    # last samples: PollErrors (10m) and ConfigReloadFailed (5m) hold
    "sidecar_down": frozenset(alerts(DOWN) | alerts(POLL_ERRORS) | alerts(BAD_CONFIG)),
}


def rules_with_short_for(tmp: Path, rules: Path = RULES) -> Path:
    """A shipped rules file with each `for:` but `0s` rewritten to FOR_IN_TEST; nothing else changes."""
    text = rules.read_text()
    short, count = re.subn(r"^(\s+for: )(?!0s\b)\S+$", rf"\g<1>{FOR_IN_TEST}", text, flags=re.M)
    assert count == text.count("\n        for: ") - text.count("\n        for: 0s"), "a for: left unchanged"
    path = tmp / rules.name
    path.write_text(short)
    return path


def firing(prom: Prometheus) -> frozenset[tuple[str, str]]:
    """The firing alerts as (alertname, "topic-partition", "topic" or "")."""
    out = set()
    for a in prom.alerts():
        if a["state"] == "firing":
            labels = a["labels"]
            where = f"{labels['topic']}-{labels['partition']}" if "partition" in labels else labels.get("topic", "")
            out.add((labels["alertname"], where))
    return frozenset(out)


@dataclass
class Run:
    proms: dict[str, Prometheus]  # version -> the Prometheus of that version
    started: float = 0.0
    ended: float = 0.0
    # version -> phase -> firing alerts once settled
    seen: dict[str, dict[str, frozenset]] = field(default_factory=lambda: {v: {} for v in VERSIONS})
    # version -> the firing alerts, and the reassigning count, at each second while payments-0 moved
    progress_checks: dict[str, list[frozenset]] = field(default_factory=lambda: {v: [] for v in VERSIONS})
    progress_reassigning: dict[str, list[float | None]] = field(default_factory=lambda: {v: [] for v in VERSIONS})

    def stop(self) -> None:
        for prom in self.proms.values():
            prom.stop()


def settle_all(proms: dict[str, Prometheus], expected: frozenset, timeout: float = 45) -> dict[str, frozenset]:
    """Wait until exactly `expected` fires in each Prometheus (watched together: the phase's
    window is the same for all); what fires last in each is returned either way."""
    deadline = time.monotonic() + timeout
    seen = {v: firing(p) for v, p in proms.items()}
    while any(s != expected for s in seen.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
        seen = {v: firing(p) if seen[v] != expected else seen[v] for v, p in proms.items()}
    return seen


def settle(prom: Prometheus, expected: frozenset, timeout: float = 45) -> frozenset:
    """Wait until exactly `expected` fires; what fires last is returned either way."""
    return settle_all({"": prom}, expected, timeout)[""]


def play(tmp: Path, expected: dict[str, frozenset]) -> Run:
    """Play the scenario's phases (keyed "at=N") and the sidecar's own failures ("stale",
    "recovered", "unreachable", "bad_config", "sidecar_down"), settling each on `expected`."""
    play_ = scenario.load(SCENARIO)
    rules = rules_with_short_for(tmp)
    sim = Simulator.start(play_.cluster, kafka_version="4.1", broker=1, clock="realtime")
    try:
        with Sidecar(sim.url, tmp, extra=SIDECAR) as sidecar:
            run = Run({})
            try:
                for version in VERSIONS:
                    run.proms[version] = Prometheus.of(version, sidecar.target, scrape_interval="1s",
                                                       rule_files=[str(rules)])
                run.started = time.time()
                for at, steps in groupby(play_.steps, key=lambda s: s.at):
                    phase = f"at={at:g}"
                    for step in steps:
                        sim.apply(step.event())
                    if phase == "at=60":  # a reassignment that moves bytes, watched to its end
                        _watch_progress(run)
                    _settle(run, phase, expected[phase])
                # the broker stops answering (SIGSTOP) until the stale alert fires (at most 20 s, well inside
                # readTimeoutSeconds): the poll hangs, then succeeds; stale, not unreachable
                os.kill(sim.proc.pid, signal.SIGSTOP)
                try:
                    _settle(run, "stale", expected["stale"], timeout=20)
                finally:
                    os.kill(sim.proc.pid, signal.SIGCONT)
                _settle(run, "recovered", expected["recovered"])
                sim.stop()  # the broker is gone: polls fail
                _settle(run, "unreachable", expected["unreachable"], timeout=60)
                good = sidecar.config_path.read_text()
                sidecar.config_path.write_text(good + "rules: [\n")  # not YAML
                _settle(run, "bad_config", expected["bad_config"])
                sidecar.config_path.write_text(good)
                sidecar.stop()
                _settle(run, "sidecar_down", expected["sidecar_down"], timeout=60)
                run.ended = time.time()
                return run
            except BaseException:
                run.stop()
                raise
    finally:
        sim.stop()


def _settle(run: Run, phase: str, expected: frozenset, timeout: float = 45) -> None:
    for version, seen in settle_all(run.proms, expected, timeout).items():
        run.seen[version][phase] = seen


def _watch_progress(run: Run, timeout: float = 60) -> None:
    """Until each Prometheus saw payments-0 moving and then done, the firing alerts at every second."""
    metric = "kafka_server_replicamanager_reassigningpartitions"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for version, prom in run.proms.items():
            run.progress_reassigning[version].append(prom.value(metric))
            run.progress_checks[version].append(firing(prom))
        if all(1.0 in seen and seen[-1] == 0 for seen in run.progress_reassigning.values()):
            return
        time.sleep(1)
