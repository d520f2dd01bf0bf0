import pytest

from tests.deploy.alerts.scenario_run import EXPECTED, play
from tests.last_use import stop_after_last_use


@pytest.fixture(scope="session")
def alerts_run(request, tmp_path_factory):
    """One play of scenario-alerts.yml for the alert and the dashboard tests (about a minute), watched
    by a Prometheus 2 and a Prometheus 3 together."""
    run = play(tmp_path_factory.mktemp("alerts"), EXPECTED)
    stop = stop_after_last_use(request, run.stop)
    yield run
    stop()
