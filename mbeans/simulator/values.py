"""Realistic per-partition log values for the simulator (LogValues.java serves them).

Without them every partition's log is empty (sizes and offsets 0, one segment) until the model's
own traffic writes to it, so every member of a per-partition `kafka.log` family holds the same
value: a reader that asks the broker for a family's common value looks far better on such a
broker than on a real one. With them, the partitions fall into the classes a production broker
shows (a real broker's values in each class are checked in tests/real/test_simulator_vs_broker.py):

- `empty`: never written: Size 0, LogStartOffset and LogEndOffset 0, one segment;
- `expired`: idle past retention, every record deleted: Size 0, LogStartOffset = LogEndOffset > 0;
- idle (the rest): data kept, nothing written: a size, offsets and segments of its own, unchanged;
- `busy`: written to: Size and LogEndOffset grow between any two polls (the wall clock, whatever the
  simulator's clock); of those, `transactional` have an open transaction (LastStableOffsetLag > 0);
- `lagging` (of every class): a follower behind its leader; its fetcher's lag grows.

Record sizes, offsets and rates are drawn per partition, log-uniformly; the same `seed` gives the
same partitions the same values.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


# Kafka's record format (magic 2): a batch's header, and a record's own header when it has no key
# and no headers (length, attributes, timestamp delta, offset delta, key length, value length,
# header count: varints of about one byte each for a small record); what a log stores per record is
# its value, that header and its share of its batch's header.
BATCH_HEADER = 61
RECORD_OVERHEAD = 8


# What a never-written partition's log serves (the `empty` class), as a real broker serves it.
EMPTY_LOG = {"Size": 0, "LogStartOffset": 0, "LogEndOffset": 0, "NumLogSegments": 1}
# The range of a record's value that LogValues draws from, bytes (log-uniform), and of records per batch.
VALUE_BYTES = (50, 4000)
RECORDS_PER_BATCH = (1, 200)


def stored_bytes(value_bytes: int, records_per_batch: float) -> float:
    """What the log stores per record of `value_bytes`, in batches of `records_per_batch`."""
    return value_bytes + RECORD_OVERHEAD + BATCH_HEADER / records_per_batch


@dataclass(frozen=True)
class LogValues:
    seed: int = 1
    empty: float = 0.15
    expired: float = 0.25
    busy: float = 0.06
    transactional: float = 0.2   # of the busy ones
    lagging: float = 0.02

    def __post_init__(self) -> None:
        for key, share in asdict(self).items():
            if key != "seed" and not 0 <= share <= 1:
                raise ValueError(f"log values: {key} is a share between 0 and 1, not {share}")
        if self.empty + self.expired + self.busy > 1:
            raise ValueError("log values: empty + expired + busy is more than 1")

    def spec(self) -> dict:
        """What the simulator JVM reads (the spec's `log_values`)."""
        return {**asdict(self), "batch_header": BATCH_HEADER, "record_overhead": RECORD_OVERHEAD,
                "value_bytes": list(VALUE_BYTES), "records_per_batch": list(RECORDS_PER_BATCH)}
