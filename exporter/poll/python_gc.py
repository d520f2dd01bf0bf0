"""Python's cyclic garbage collector in `serve`, where a big broker's names, plans and cached
samples are millions of long-lived objects. Without this, a full collection walks them all every
few polls, holding the GIL for seconds (about 3 s at 40,000 partitions with Strimzi's rules)
while scrapes wait.

- `freeze()` ends each successful poll: what the poll keeps moves out of the collector's reach
  (`gc.freeze()`). A poll leaves no cyclic garbage behind (tests/exporter/test_poll_garbage.py),
  so nothing is frozen that should have been collected; frozen objects are still freed when
  their last reference goes. The first freeze collects once before it.
- `young_only()` holds off full collections during a poll. After a freeze, CPython starts a full
  collection once the objects that reached the old generation since its last one outnumber a
  quarter of what that one kept, which is almost nothing: so during a poll it ran every few seconds
  over all of the poll's objects so far (4 in 40 s of steady polls at 40,000 partitions with
  Strimzi's rules, 7 to 73 ms each, every scrape waiting). Young collections go on, and they find
  the cycles that scrapes and the poll make and drop. The old generation's threshold comes back
  when the poll ends, whether it succeeded or failed: after a failed poll nothing was frozen, and
  the next full collection takes what the poll left.
"""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator

NO_FULL_COLLECTIONS = 2**31 - 1  # young collections between full ones: never, in practice


@contextlib.contextmanager
def young_only() -> Iterator[None]:
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, NO_FULL_COLLECTIONS)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, old)


def freeze(first: bool) -> None:
    if first:
        gc.collect()
    gc.freeze()
