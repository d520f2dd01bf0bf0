"""The live sidecar's rule engine applied to backfilled MBean values: the rule search runs once per
distinct (ObjectName, attribute) on the executors, and its outcome (name, labels, type, `value:`,
`valueFactor`) is joined back onto every value of that leaf. A leaf that value-dependent rules may
claim (a `Volatile` outcome) is searched once per distinct value instead.

The config's includeObjectNames / excludeObjectNames and attribute filters apply as they do to a
live read: a leaf the sidecar would not read produces nothing.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_jmx_sidecar.exporter.output.exposition import openmetrics_names, openmetrics_series
from kafka_jmx_sidecar.exporter.base.model import ObjectName
from kafka_jmx_sidecar.exporter.base.config_file import ConfigFile
from kafka_jmx_sidecar.exporter.rule_engine.config import Config, Store
from kafka_jmx_sidecar.exporter.rule_engine.leaves import Leaf
from kafka_jmx_sidecar.exporter.rule_engine.outcomes import Outcome, Volatile
from kafka_jmx_sidecar.exporter.rule_engine.rule_search import RuleSearch
from kafka_jmx_sidecar.mbeans.catalog import ATTRIBUTE_DESCRIPTION

OUTCOME_SCHEMA = ("objectname string, attribute string, volatile boolean, family string, type string, "
                  "series string, fixed double, factor double")
VALUED_SCHEMA = ("objectname string, attribute string, value double, family string, type string, "
                 "series string, fixed double, factor double")


def _family_and_series(outcome: Outcome) -> tuple[str, str, str]:
    """(family name, OpenMetrics type, the series' text `name{labels}`) as the sidecar's OpenMetrics
    output writes them in 0.x naming."""
    family, kind, name = openmetrics_names(outcome.name, outcome.type)
    return family, kind, openmetrics_series(name, outcome.labels)


class Naming:
    """A loaded config's rules, sent to the executors without what the rules do not need: the JMX
    credentials, key stores and the environment never leave the driver."""

    def __init__(self, config: Config):
        self.config = dataclasses.replace(config, password="", ssl_options={}, trust_store=Store(),
                                          key_store=Store(), file=ConfigFile(config.file.source, env={}))

    def _search(self):
        return self.config, RuleSearch(self.config, "0.x")

    def outcomes(self, leaves: Iterable) -> Iterator[tuple]:
        config, search = self._search()
        for row in leaves:
            name = ObjectName.parse(row.objectname)
            if not config.wants_mbean(name) or not config.wants_attribute(name, row.attribute):
                continue
            leaf = Leaf(name.domain, name.keys, (), row.attribute, ATTRIBUTE_DESCRIPTION, 0)
            found = search.plan_numeric(leaf)
            if found.__class__ is Volatile:
                yield (row.objectname, row.attribute, True, None, None, None, None, None)
            elif found.__class__ is Outcome:
                yield (row.objectname, row.attribute, False, *_family_and_series(found), found.fixed, found.factor)

    def valued(self, leaves: Iterable) -> Iterator[tuple]:
        """Volatile leaves, one row per distinct value: the search for that value."""
        config, search = self._search()
        for row in leaves:
            name = ObjectName.parse(row.objectname)
            value = int(row.value) if float(row.value).is_integer() else row.value
            leaf = Leaf(name.domain, name.keys, (), row.attribute, ATTRIBUTE_DESCRIPTION, value)
            found = search.plan_numeric(leaf)
            if found.__class__ is Volatile:
                found = search.run_volatile(found, value)
            if found.__class__ is Outcome:
                yield (row.objectname, row.attribute, row.value, *_family_and_series(found), found.fixed, found.factor)


def named_series(rows: DataFrame, naming: Naming, carry: tuple[str, ...] = ()) -> DataFrame:
    """MBean rows (objectname, attribute, value, k0, k1) -> (family, type, series, objectname, value,
    k0, k1): the rules' names and values (`value:` and `valueFactor` applied). Columns named in
    `carry` (the broker of an archive's rows) come along."""
    spark = rows.sparkSession
    rows = rows.persist()  # read for its distinct leaves, then joined
    leaves = rows.select("objectname", "attribute").distinct()
    outcomes = spark.createDataFrame(leaves.rdd.mapPartitions(naming.outcomes), OUTCOME_SCHEMA,
                                    verifySchema=False).persist()
    columns = ["family", "type", "series", "objectname", "value", "fixed", "factor", "k0", "k1", *carry]
    # a shuffle join, not a broadcast: the distinct leaves of a big cluster are many, and a
    # broadcast would gather them on the driver
    named = rows.join(outcomes.where(~F.col("volatile")), ["objectname", "attribute"]).select(*columns)
    if not outcomes.where(F.col("volatile")).isEmpty():
        volatile_rows = rows.join(outcomes.where(F.col("volatile")).select("objectname", "attribute"),
                                  ["objectname", "attribute"])
        per_value = spark.createDataFrame(
            volatile_rows.select("objectname", "attribute", "value").distinct().rdd.mapPartitions(naming.valued),
            VALUED_SCHEMA, verifySchema=False)
        named = named.unionByName(volatile_rows.join(per_value, ["objectname", "attribute", "value"]).select(*columns))
    exposed = F.coalesce(F.col("fixed"), F.col("value")) * F.col("factor")
    return named.select("family", "type", "series", "objectname", exposed.alias("value"), "k0", "k1", *carry)
