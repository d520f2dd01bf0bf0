"""What JmxClient.start_reads() and start_queries() began, for finish_reads() and query_answer()
to collect: the work asked and the engine's handle on it."""
from __future__ import annotations

from typing import Any

from kafka_jmx_sidecar.exporter.source.jmx.read_plan import ReadPlan


class StartedReads:
    """Reads JmxClient.start_reads() began: the families, the attribute, the plan of the MBeans
    read whole, and the engine's handle on them (None: read at finish_reads())."""

    __slots__ = ("members", "attribute", "plan", "deadline", "handle")

    def __init__(self, members: list, attribute: str, plan: ReadPlan | None, deadline: float | None):
        self.members, self.attribute, self.plan, self.deadline = members, attribute, plan, deadline
        self.handle: Any = None


class StartedQueries:
    """Queries JmxClient.start_queries() began: what each asks, the permits they share (one per
    connection), the engine's handle; `broken` once a connection broke under them."""

    __slots__ = ("specs", "lanes", "handle", "broken")

    def __init__(self, specs: list, lanes: Any, handle: Any):
        self.specs, self.lanes, self.handle, self.broken = specs, lanes, handle, False
