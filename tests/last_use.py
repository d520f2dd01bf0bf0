"""Session fixtures that hold processes, stopped once the last test that uses them has ended.

A session fixture otherwise lives until the session ends: a Kafka cluster, a Spark session or two
Prometheus servers first used early in the run then idle for the rest of it, each costing a few
percent of a core and its memory while the tests after it run. The fixture registers its stop
(`stop_after_last_use`); the teardown hook below, which tests/conftest.py imports, calls it after
the teardown of the last collected test whose fixtures resolve to that very fixture (a fixture
imported into another module is a fixture of its own, with its own last user).
"""
from __future__ import annotations

from typing import Callable

import pytest

_pending: list[tuple[int, Callable[[], None]]] = []  # (index of the last user in session.items, stop)
_positions: dict[int, int] = {}  # id(item) -> its index in session.items


def stop_after_last_use(request: pytest.FixtureRequest, stop: Callable[[], None]) -> Callable[[], None]:
    """Registers `stop` to run after the last test using the requesting fixture; returns it made
    idempotent, for the fixture's own teardown (which still runs at the session's end)."""
    done: list[bool] = []

    def once() -> None:
        if not done:
            done.append(True)
            stop()

    fixturedef = request._fixturedef  # pytest's own record of the requesting fixture
    items = request.session.items
    last = max((i for i, item in enumerate(items) if _resolves_to(item, fixturedef)), default=None)
    if last is not None:
        if not _positions:
            _positions.update((id(item), i) for i, item in enumerate(items))
        _pending.append((last, once))
    return once


def _resolves_to(item: pytest.Item, fixturedef) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.get(fixturedef.argname) if info is not None else None
    # the closest definition is the one the item gets (a test file's own overrides the conftest's)
    return bool(defs) and defs[-1] is fixturedef and fixturedef.argname in item.fixturenames


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    try:
        return (yield)
    finally:
        _after_teardown(item)


def _after_teardown(item: pytest.Item) -> None:
    """Stops what `item` was the last user of."""
    at = _positions.get(id(item))
    if at is None:
        return
    due = [stop for last, stop in _pending if last == at]
    _pending[:] = [(last, stop) for last, stop in _pending if last != at]
    for stop in due:
        stop()
