"""What a query and a read cost, as measured poll after poll: what family_reads and named_reads
weigh when they choose between asking the broker by query and reading members one by one.

A query costs a scan of the MBean domain inside the broker whatever it returns, plus a little
per name it returns; a read costs one round trip. Each is a moving average of what was timed.
"""
from __future__ import annotations

# Before anything was measured: one query ~ this many single reads (0.2 s / 0.2 ms), and what
# each name a query returns costs (sent, received, looked up among the members).
READS_PER_QUERY = 1000
_HIT_SECONDS = 15e-6
# A query returning fewer names than this measures the scan alone; more, the names' cost too.
_FEW_HITS = 50


class QueryCosts:
    def __init__(self) -> None:
        self._query_seconds = 0.0  # moving averages of one query and one read (0: not measured yet)
        self._read_seconds = 0.0
        self._hit_seconds = _HIT_SECONDS  # of each name a query returns

    def note_reads(self, seconds: float, count: int) -> None:
        per = seconds / count
        self._read_seconds = per if not self._read_seconds else 0.7 * self._read_seconds + 0.3 * per

    def note_query(self, took: float, hits: int) -> None:
        """A query's seconds: the scan's cost when it returned few names, else each name's."""
        if hits < _FEW_HITS:
            self._query_seconds = took if not self._query_seconds else 0.7 * self._query_seconds + 0.3 * took
        elif self._query_seconds:
            per = max(1e-7, (took - self._query_seconds) / hits)
            self._hit_seconds = 0.7 * self._hit_seconds + 0.3 * per

    @property
    def read_seconds(self) -> float:
        """One member's read, its wait overlapped over the connections (measured, or guessed)."""
        return self._read_seconds or (self._query_seconds or 0.2) / READS_PER_QUERY

    @property
    def query_seconds(self) -> float:
        """One query's scan of a domain, the names it returns aside (measured, or guessed)."""
        return self._query_seconds or self.read_seconds * READS_PER_QUERY

    @property
    def hit_seconds(self) -> float:
        return self._hit_seconds

    def reads_per_query(self) -> float:
        """How many reads one query's scan costs as much as."""
        if self._query_seconds and self._read_seconds:
            return self._query_seconds / self._read_seconds
        return READS_PER_QUERY
