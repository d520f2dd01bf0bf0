"""mbeans/health.py's formulas on Spark Columns: the same definitions, given Spark's `least` and
`~` as their `Ops`, over Columns holding the `Counts` fields. Nothing here restates a formula."""
from __future__ import annotations

import operator

from pyspark.sql import Column
from pyspark.sql import functions as F

from kafka_jmx_sidecar.mbeans.health import Counts, Formula, Ops, Profile

SPARK_OPS = Ops(least=F.least, not_=operator.invert)


def counts_columns(prefix: str = "") -> Counts:
    """The Counts fields as Columns of a table that has them (optionally prefixed)."""
    return Counts(*(F.col(prefix + name) for name in Counts._fields))


def evaluate(formula: Formula, counts: Counts | None = None) -> Column:
    """One formula as a Column: an int for counts, 0/1 for flags (as the gauges read)."""
    value = formula(counts or counts_columns(), SPARK_OPS)
    return value.cast("int")


def profile_values(profile: Profile, values: tuple[str, ...], counts: Counts | None = None) -> dict[str, Column]:
    """Each named health value (Profile.formula names) as a Column, for those the profile has."""
    out = {}
    for value in values:
        formula = profile.formula(value)
        if formula is not None:
            out[value] = evaluate(formula, counts)
    return out
