"""What one broker's archive says of the partitions that broker leads, poll after poll: the numbers
the health formulas read (mbeans/broker_recompute.led_counts, as the live recompute builds them:
the broker's own ReplicasCount and InSyncReplicasCount, the min ISR the poll resolved and, where
the poll read the Admin API, the replica lists), as runs of equal numbers. The cluster-wide view
of several brokers' archives (archive_cluster.py) is made of them: a partition is reported by its
leader's archive only (a follower's ReplicasCount is 0), so no partition counts twice.

Runs on the executors, beside the replay of the broker's own series (archive_input.py); pure.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from kafka_jmx_sidecar.exporter.archive.reader import ArchiveState
from kafka_jmx_sidecar.exporter.recompute.settings import RecomputeSettings
from kafka_jmx_sidecar.mbeans.broker_recompute import led_counts
from kafka_jmx_sidecar.mbeans.health import DEFAULT_PROFILE, Counts, profile_for_version

# A led partition's state: its Counts' fields, then its placeholder replicas (Admin API lists only).
LED_FIELDS = (*Counts._fields, "placeholders")


def _broker_profile(version: str | None):
    """The profile of the broker's release (what its ReplicasCount counts); without a release the
    default's, which reads a ReplicasCount without adding replicas the same way."""
    try:
        return profile_for_version(version) if version else DEFAULT_PROFILE
    except ValueError:
        return DEFAULT_PROFILE


class Leaders:
    """The led partitions' states of one archive file, as runs: `current` (topic, partition) ->
    (state, the first poll of its run)."""

    def __init__(self, settings: RecomputeSettings | None):
        self.settings = settings
        self.current: dict[tuple[str, int], tuple[tuple, float]] = {}

    def _min_isr(self, state: ArchiveState, topic: str) -> int:
        m = state.min_isr.get(topic)
        if m is not None:
            return m[0]
        return self.settings.configured_min_isr(topic)[0] if self.settings is not None else 1

    def states(self, state: ArchiveState, keys: Iterable[tuple[str, int]]) -> Iterator[tuple[tuple, tuple | None]]:
        """(key, the led state now, or None where the broker does not lead it) for `keys`."""
        profile = _broker_profile(state.version)
        assignments = state.assignments() if state.admin and state.states else {}
        for key in keys:
            counts = state.counts.get(key)
            if counts is None or not counts[1]:  # not hosted, or a follower (ReplicasCount 0)
                yield key, None
                continue
            a = assignments.get(key)
            c = led_counts(counts[1], counts[0], self._min_isr(state, key[0]), a, profile)
            holes = sum(1 for r in a.replicas if r < 0) if a is not None else 0
            yield key, (*c, holes)

    def poll(self, state: ArchiveState, t: float, last_t: float | None, keys: Iterable | None) -> Iterator[tuple]:
        """Runs that ended at the poll before (`last_t`) as (key, state, first, last): those whose
        state changed at this poll `t`, for the partitions `keys` (None: every hosted partition and
        every run still open)."""
        if keys is None:
            keys = set(state.counts) | set(self.current)
        current = self.current
        for key, now in self.states(state, keys):
            run = current.get(key)
            if run is not None:
                if run[0] == now:
                    continue
                yield key, run[0], run[1], last_t
                del current[key]
            if now is not None:
                current[key] = (now, t)

    def end(self, last_t: float | None) -> Iterator[tuple]:
        """Every open run, ended at the last poll."""
        for key, (now, first) in self.current.items():
            yield key, now, first, last_t
        self.current = {}

