"""What a backfill input is: a format of files (describe dumps, a sidecar's archive) read on Spark
into rows, added up into a small `Tally` on the driver, and turned into the rules' series on the
run's time grid. The job only ever sees this protocol: a new format is one new `Input`.

Every format's rows share the reject and file columns (kind "r": file, line, reason, detail,
text; kind "f": file, lines read in `line`), so the job writes the rejects of all inputs alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Protocol

from kafka_jmx_sidecar.mbeans.health import Counts

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafka_jmx_sidecar.exporter.backfill.grid import Grid

REJECT_COLUMNS = ("file", "line", "reason", "detail", "text")
# Spark types of the Counts fields, in their order (the schema of every source of states).
COUNT_TYPES = {
    "has_leader": "boolean", "leader_live": "boolean", "replicas": "int", "adding": "int",
    "reassigning": "boolean", "isr": "int", "min_isr": "int", "elr": "int",  # elr null: not known
}
assert tuple(COUNT_TYPES) == Counts._fields, "COUNT_TYPES must follow mbeans.health.Counts"


@dataclass
class Tally:
    """What an input's rows add up to (small: gathered on the driver)."""

    files: int = 0
    archive_files: int = 0
    lines: int = 0
    partition_states: int = 0
    archived_polls: int = 0
    rejected: dict[tuple[str, str], int] = field(default_factory=dict)  # (file, reason) -> how many

    def count(self, row) -> None:
        """A tally row of kind "f" (`lines`: lines read) or "r" (`n`: rejects of a file and reason)."""
        if row.kind == "f":
            self.lines += row.lines or 0
        else:
            key = (row.file, row.reason)
            self.rejected[key] = self.rejected.get(key, 0) + row.n

    @staticmethod
    def total(tallies: Iterable[Tally]) -> Tally:
        out = Tally()
        for t in tallies:
            out.files += t.files
            out.archive_files += t.archive_files
            out.lines += t.lines
            out.partition_states += t.partition_states
            out.archived_polls += t.archived_polls
            for key, n in t.rejected.items():
                out.rejected[key] = out.rejected.get(key, 0) + n
        return out


@dataclass
class Reading:
    """An input as read: its rows (persisted until the run ends), their tally, the times of its
    observations (ms) per source (a dump's time, each poll of a broker's archive) and, for
    archives, each source's broker."""

    rows: DataFrame
    tally: Tally
    times: dict[str, list[int]]
    brokers: dict[str, str] = field(default_factory=dict)


class Input(Protocol):
    """One format of input files."""

    def read(self, spark: SparkSession) -> Reading:
        """Read every file (on the executors) and tally the rows."""

    def listed_range(self) -> tuple[int, int] | None:
        """(first, last) time the files tell without being read (a dump's name), for a run whose
        rows hold no time; None when the format has none."""

    def series(self, reading: Reading, grid: Grid) -> DataFrame:
        """The rules' series: rows (family, type, series, objectname, value, k0, k1), steps k0..k1
        of `grid`."""

    def manifest(self) -> dict:
        """What the manifest says of this input besides its tally (the archives' recompute)."""


def rejects_of(rows: DataFrame) -> DataFrame:
    """The rejected lines of an input's rows."""
    return rows.where("kind = 'r'").select(*REJECT_COLUMNS)
