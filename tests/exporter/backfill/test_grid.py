"""The backfill's time grid, hand-worked."""
from __future__ import annotations

import pytest

from kafka_jmx_sidecar.exporter.backfill.grid import Grid, intervals, parse_duration_ms, parse_time_ms

T0 = 1795298400_000  # 2026-11-21T22:00:00Z


def test_durations():
    assert parse_duration_ms("15s") == 15_000
    assert parse_duration_ms("1m30s") == 90_000
    assert parse_duration_ms("500ms") == 500
    assert parse_duration_ms("2h") == 7_200_000
    for bad in ("", "15", "0s", "1d", "s"):
        with pytest.raises(ValueError):
            parse_duration_ms(bad)


def test_times():
    assert parse_time_ms("2026-11-21T22:00:00Z") == T0
    assert parse_time_ms("2026-11-21T22-00-00Z") == T0
    assert parse_time_ms("2026-11-21T23:00:00+01:00") == T0
    assert parse_time_ms("2026-11-21T22:00:00.250Z") == T0 + 250
    assert parse_time_ms("1795298400") == T0
    with pytest.raises(ValueError, match="ISO-8601"):
        parse_time_ms("yesterday")


def test_a_state_holds_until_the_next_observation():
    grid = Grid.between(T0, T0 + 120_000, 30_000)  # steps at :00 :30 1:00 1:30 2:00
    assert grid.count == 5
    # observed at 0:10 and at 1:00: the first holds for 0:30 (the :00 step came before it)
    held = intervals([T0 + 10_000, T0 + 60_000], grid)
    assert held == {T0 + 10_000: (1, 1), T0 + 60_000: (2, 4)}
    # two observations between the same steps: the earlier one holds for none
    assert intervals([T0 + 1_000, T0 + 2_000], grid) == {T0 + 2_000: (1, 4)}
    # an observation before the start holds from the first step
    assert intervals([T0 - 60_000], grid) == {T0 - 60_000: (0, 4)}
