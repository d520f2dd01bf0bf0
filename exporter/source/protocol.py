"""What a poll source is: what its `read` returns and the error it raises when the broker cannot
be read. The poll loop (exporter/poll/collector.py) reads any `Source`; the JMX edge
(exporter/source/broker.py) is the production one, and imports this, not the poll loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from kafka_jmx_sidecar.exporter.base.model import BeanTable, MBean
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions


@dataclass
class BrokerReadings:
    """What the sidecar reads of the broker whether or not the configuration's filters let it
    reach the rules: which broker it is (its id, release and cluster id: every poll, for
    kafka_jmx_sidecar_broker_info; read again with the names), its per-partition counts (the
    recompute, exporter/recompute/stage.py) and its replication meters' counts (the reassignment
    series, exporter/reassignment/stage.py). None where it could not be read; `problems` says why
    the id or release is missing, for the log."""

    broker_id: str | None = None
    version: str | None = None
    hosted: HostedPartitions | None = None
    problems: list[str] = field(default_factory=list)
    # BrokerTopicMetrics meter name (ReplicationBytesInPerSec, ...) -> Count; a meter the broker
    # lacks is absent
    meters: dict[str, float] = field(default_factory=dict)
    cluster_id: str | None = None


class SourceError(Exception):
    """The broker could not be read; `str()` is a message a user can act on."""


@dataclass
class ReadResult:
    mbeans: Sequence[MBean]
    round_trips: int = 0
    phases: dict[str, float] = field(default_factory=dict)  # what the read's time went to (seconds)
    queries: int = 0  # of the round trips, server-side queries
    tables: Sequence[BeanTable] = ()  # MBeans read as columns (their members hold their ranks)
    ranks: Sequence[int] | None = None  # each of `mbeans`' place in the visiting order (with tables)
    broker: BrokerReadings | None = None  # from a broker (JmxSource); its counts and meters when asked for

    @property
    def count(self) -> int:
        """MBeans read, in tables or not."""
        return len(self.mbeans) + sum(sum(t.present) for t in self.tables)


class Source(Protocol):
    """Where MBeans come from (the JMX edge in production).

    Two methods are optional (the poll loop does without them): `read_health()`, the broker-wide
    health MBeans alone, read quickly, which the first complete poll of a big broker is preceded
    by; and `abort()`, called from another thread when the sidecar stops, which makes the read in
    progress raise SourceError soon instead of waiting on the broker."""

    target: str  # what is polled, for messages (host:port or URL)

    @property
    def connected(self) -> bool: ...

    def read(self) -> ReadResult: ...

    def close(self) -> None: ...
