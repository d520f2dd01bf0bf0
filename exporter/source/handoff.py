"""Work handed over as it is done: a producer on a thread of its own, the caller taking each item
as it comes, so that the caller's work on one item overlaps the producer's wait on the next
(a query's or a read's round trips: JPype lets go of the GIL while Java waits)."""
from __future__ import annotations

import queue
import threading
from typing import Callable, TypeVar

T = TypeVar("T")
_DONE = object()


def handed_over(produce: Callable[[Callable[[T], None]], None], take: Callable[[T], None], name: str,
                first: Callable[[], None] | None = None) -> None:
    """produce(hand) on a thread named `name`; take(item) here for each item it hands over, in
    order, after first() (work the items need, done here while the producer begins). The
    producer's exception is raised here once it has stopped; so is first()'s or take()'s, once
    the producer has stopped (it is not left running on what the caller goes on to use)."""
    items: queue.SimpleQueue = queue.SimpleQueue()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            produce(items.put)
        except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(e)
        finally:
            items.put(_DONE)

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    taking: BaseException | None = None
    if first is not None:
        try:
            first()
        except BaseException as e:  # noqa: BLE001 - the producer is waited for first
            taking = e
    while (item := items.get()) is not _DONE:
        if taking is None:
            try:
                take(item)
            except BaseException as e:  # noqa: BLE001 - the producer is waited for first
                taking = e
    worker.join()
    if failed:
        raise failed[0]
    if taking is not None:
        raise taking
