"""exporter/source/handoff.py: items taken in order as they are handed over, in the caller's
thread; errors raised in the caller only once the producer has stopped."""
from __future__ import annotations

import threading
import time

import pytest

from kafka_jmx_sidecar.exporter.source.handoff import handed_over


def test_items_are_taken_in_the_callers_thread_while_the_producer_goes_on():
    caller = threading.get_ident()
    produced, taken = [], []
    second_asked = threading.Event()

    def produce(hand):
        for i in range(3):
            produced.append((i, threading.get_ident()))
            hand(i)
            if i == 0:  # the caller takes item 0 before the producer hands item 1
                assert second_asked.wait(5)

    def take(item):
        taken.append((item, threading.get_ident(), len(produced)))
        second_asked.set()

    handed_over(produce, take, "test-producer")
    assert [i for i, _, _ in taken] == [0, 1, 2] and all(t == caller for _, t, _ in taken)
    assert taken[0][2] == 1  # item 0 was taken while the producer had handed over no other
    assert all(t != caller for _, t in produced)


def test_the_producers_error_is_raised_in_the_caller_after_the_items_it_handed_over():
    taken = []

    def produce(hand):
        hand(1)
        raise ConnectionError("broker gone")

    with pytest.raises(ConnectionError, match="broker gone"):
        handed_over(produce, taken.append, "test-producer")
    assert taken == [1]


def test_the_callers_error_is_raised_once_the_producer_has_stopped():
    stopped = []

    def produce(hand):
        for i in range(3):
            hand(i)
            time.sleep(0.05)
        stopped.append(True)

    def fail(*_):
        raise ValueError("rules broke")

    with pytest.raises(ValueError, match="rules broke"):
        handed_over(produce, fail, "test-producer")
    assert stopped == [True]
    assert not any(t.name == "test-producer" for t in threading.enumerate())


def test_first_runs_in_the_callers_thread_while_the_producer_begins_and_before_any_item_is_taken():
    caller = threading.get_ident()
    began, events = threading.Event(), []

    def produce(hand):
        began.set()
        hand(1)

    def first():
        assert began.wait(5)  # the producer runs meanwhile
        events.append(("first", threading.get_ident()))

    handed_over(produce, lambda item: events.append((item, threading.get_ident())), "test-producer", first=first)
    assert events == [("first", caller), (1, caller)]


def test_an_error_of_first_is_raised_once_the_producer_has_stopped_and_nothing_is_taken():
    stopped, taken = [], []

    def produce(hand):
        hand(1)
        time.sleep(0.05)
        stopped.append(True)

    def first():
        raise ValueError("ranks broke")

    with pytest.raises(ValueError, match="ranks broke"):
        handed_over(produce, taken.append, "test-producer", first=first)
    assert stopped == [True] and taken == []
