"""JmxStats: what the client cost the broker since the last take: round trips, MBeans, connections.

The collector reports `round_trips` and `queries` per poll; the other counters are how the tests
see the client's caching and reconnecting (MBeanInfo once per family, vanished MBeans, backoff).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, fields, replace

log = logging.getLogger(__name__)


@dataclass
class JmxStats:
    """Counters since the last take() (or since the client was made)."""

    round_trips: int = 0      # RMI calls: queryNames, getMBeanInfo, getAttributes (not connects)
    mbeans_read: int = 0      # MBeans whose attributes came back
    mbeans_gone: int = 0      # listed, but unregistered before we read them
    infos_read: int = 0       # getMBeanInfo calls (part of round_trips)
    queries: int = 0          # queryNames calls (part of round_trips)
    connects: int = 0         # connections (re-)established
    connect_failures: int = 0

    def take(self) -> "JmxStats":
        """The counts so far; counting starts again from zero."""
        out = replace(self)
        for f in fields(self):
            setattr(self, f.name, 0)
        return out

    def note_failure(self, name: str, status: str, doing: str) -> None:
        """An MBean the batch could not serve: status "g" (gone) is counted, "e<message>" logged."""
        if status == "g":
            self.mbeans_gone += 1
            return
        log.debug("%s %s failed: %s", name, doing, status[1:])
