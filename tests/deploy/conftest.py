"""Fixtures shared by the deploy tests."""
from __future__ import annotations

import pytest

from tests.deploy.release import Release, build


@pytest.fixture(scope="session")
def release(tmp_path_factory) -> Release:
    """The sdist and the wheel `make dist` makes, built once per test run."""
    return build(tmp_path_factory.mktemp("release"))
