"""The shipped alerts evaluated by a real Prometheus scraping the sidecar while the simulator plays
scenario-alerts.yml (scenario_run.py: `for:` cut to seconds in a test copy, nothing else changed).
Which alerts fire at each phase (scenario_run.EXPECTED) was worked out by hand from Kafka's definitions.
The run, watched by Prometheus 2 and 3 together, is shared with test_dashboard.py (conftest.py)."""
from __future__ import annotations

import pytest

from tests.deploy.alerts.scenario_run import EXPECTED
from tests.e2e.prometheus_server import VERSIONS


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("phase", list(EXPECTED))
def test_alerts_firing_at_each_phase(alerts_run, phase, version):
    assert alerts_run.seen[version][phase] == EXPECTED[phase]


@pytest.mark.parametrize("version", VERSIONS)
def test_reassignment_alert_silent_while_bytes_move(alerts_run, version):
    """Prometheus saw payments-0 moving for several evaluations and no alert fired meanwhile."""
    run = alerts_run
    reassigning, checks = run.progress_reassigning[version], run.progress_checks[version]
    assert reassigning.count(1.0) >= 3, reassigning
    assert reassigning[-1] == 0.0
    assert all(not f for f in checks), checks
    assert run.proms[version].query(
        "max_over_time(rate(kafka_server_brokertopicmetrics_reassignmentbytesout_total[1m])[10m:1s]) > 0")
