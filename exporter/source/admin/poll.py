"""One Admin API read per poll, shared by the stages that use it (the recompute and the
reassignment series): the first stage to ask reads, the others get the same view, or the same
AdminError, until the collector starts the next poll (`next_poll`).
"""
from __future__ import annotations

from kafka_jmx_sidecar.exporter.source.admin.source import AdminSource
from kafka_jmx_sidecar.exporter.source.admin.view import AdminView


class AdminPoll:
    def __init__(self, source: AdminSource):
        self.source = source
        self._view: AdminView | None = None
        self._error: Exception | None = None
        self._read = False

    def next_poll(self) -> None:
        self._view, self._error, self._read = None, None, False

    def read(self) -> AdminView:
        if not self._read:
            self._read = True
            try:
                self._view = self.source.read()
            except Exception as e:
                self._error = e
        if self._error is not None:
            raise self._error
        return self._view

    @property
    def connected(self) -> bool:
        return self.source.connected

    def close(self) -> None:
        """Closes the client; the next read (next poll) connects anew."""
        self.source.close()
