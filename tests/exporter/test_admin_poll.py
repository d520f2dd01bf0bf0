"""exporter/source/admin/poll.py: one Admin API read per poll, shared by the stages that use it."""
from __future__ import annotations

import pytest

from kafka_jmx_sidecar.exporter.source.admin.poll import AdminPoll
from kafka_jmx_sidecar.exporter.source.protocol import SourceError


class CountingSource:
    def __init__(self, answers):
        self.answers = list(answers)
        self.reads = 0
        self.closed = 0
        self.connected = True

    def read(self):
        self.reads += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self):
        self.closed += 1


def test_one_read_per_poll_whoever_asks():
    source = CountingSource(["view 1", "view 2"])
    poll = AdminPoll(source)
    poll.next_poll()
    assert poll.read() == "view 1" and poll.read() == "view 1"
    assert source.reads == 1
    poll.next_poll()
    assert poll.read() == "view 2" and source.reads == 2


def test_a_failed_read_fails_every_asker_of_the_poll_and_is_tried_again_next_poll():
    source = CountingSource([SourceError("no broker answered"), "view"])
    poll = AdminPoll(source)
    poll.next_poll()
    for _ in range(2):
        with pytest.raises(SourceError, match="no broker answered"):
            poll.read()
    assert source.reads == 1
    poll.next_poll()
    assert poll.read() == "view"
    poll.close()
    assert source.closed == 1 and poll.connected
