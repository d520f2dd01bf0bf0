"""The shipped alerts evaluated by a real Prometheus scraping the sidecar while the simulator plays
scenario-alerts.yml (scenario_run.py: `for:` cut to seconds in a test copy, nothing else changed).
Which alerts fire at each phase was worked out by hand from semantics.md (kafka-3.7 profile, the
sidecar next to broker 1, which leads orders-0..2, payments-0, moving-0 and single-0 and is the
controller; audit-0 is led by broker 2)."""
from __future__ import annotations

import pytest

from tests.deploy.alerts.scenario_run import play

URP, UNDER, AT = "KafkaUnderReplicatedPartition", "KafkaUnderMinIsrPartition", "KafkaAtMinIsrPartition"
OFFLINE, STALLED = "KafkaOfflinePartitions", "KafkaReassignmentStalled"
UNREACHABLE, STALE = "KafkaJmxSidecarBrokerUnreachable", "KafkaJmxSidecarSnapshotStale"
POLL_ERRORS, BAD_CONFIG = "KafkaJmxSidecarPollErrors", "KafkaJmxSidecarConfigReloadFailed"
ORDERS = ("orders-0", "orders-1", "orders-2")


def alerts(name: str, *where: str) -> set[tuple[str, str]]:
    return {(name, w) for w in where} if where else {(name, "")}


EXPECTED = {
    # single-0 (RF 1, min ISR 1) is at min ISR by design the whole time and never fires
    "at=0": frozenset(),
    # orders ISR [1,2] of 3: under-replicated, at min ISR 2. moving-0 [1,2] -> [1,3], broker 3 down:
    # replicas [1,3,2], adding [3], ISR [1,2]: not URP (KIP-352: RF 2, ISR 2), not at min ISR
    # (min(1, 3) = 1); it leads no byte to broker 3: stalled.
    "at=10": frozenset(alerts(URP, *ORDERS) | alerts(AT, *ORDERS) | alerts(STALLED)),
    "at=20": frozenset(),
    # orders-0 ISR [1]: under min ISR 2 (not at it); orders-1,2 ISR [1,2]
    "at=30": frozenset(alerts(URP, *ORDERS) | alerts(UNDER, "orders-0") | alerts(AT, "orders-1", "orders-2")),
    # brokers 2 and 3 down: orders ISR [1] (under min 2); payments-0 and moving-0 ISR [1] of 2
    # (URP, at min ISR 1 with a replica missing); audit-0 has no live replica: the controller's
    # offline count is 1
    "at=40": frozenset(alerts(URP, *ORDERS, "payments-0", "moving-0") | alerts(UNDER, *ORDERS)
                       | alerts(AT, "payments-0", "moving-0") | alerts(OFFLINE)),
    "at=50": frozenset(),
    # payments-0 moves to broker 3 and completes: nothing fires (checked at every second of it too)
    "at=60": frozenset(),
    # polls hang but do not fail: stale, not unreachable
    "stale": frozenset(alerts(STALE)),
    "recovered": frozenset(),
    # every poll fails: unreachable and poll errors; stale stays silent (BrokerUnreachable says it);
    # the broker's series are withdrawn, so no partition alert holds a last value
    "unreachable": frozenset(alerts(UNREACHABLE) | alerts(POLL_ERRORS)),
    "bad_config": frozenset(alerts(UNREACHABLE) | alerts(POLL_ERRORS) | alerts(BAD_CONFIG)),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    r = play(tmp_path_factory.mktemp("alerts"), EXPECTED)
    yield r
    r.prom.stop()


@pytest.mark.parametrize("phase", list(EXPECTED))
def test_alerts_firing_at_each_phase(run, phase):
    assert run.seen[phase] == EXPECTED[phase]


def test_reassignment_alert_silent_while_bytes_move(run):
    """Prometheus saw payments-0 moving for several evaluations and no alert fired meanwhile."""
    assert run.progress_reassigning.count(1.0) >= 3, run.progress_reassigning
    assert run.progress_reassigning[-1] == 0.0
    assert all(not f for f in run.progress_checks), run.progress_checks
    assert run.prom.query(
        "max_over_time(rate(kafka_server_brokertopicmetrics_reassignmentbytesout_total[1m])[10m:1s]) > 0")
