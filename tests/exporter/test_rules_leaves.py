"""Leaves: what a rule sees of an MBean (exporter/rule_engine/leaves.py)."""
import datetime as dt
import math

import pytest

from kafka_jmx_sidecar.exporter.base.model import Composite, Tabular
from kafka_jmx_sidecar.exporter.rule_engine import leaves
from kafka_jmx_sidecar.exporter.base.java_text import java_str
from kafka_jmx_sidecar.exporter.rule_engine.leaves import epoch_seconds

from .rule_runs import PARTITION, URP, bean, one, run, series


# --- the match string ------------------------------------------------------------------------

@pytest.mark.parametrize("mbean, expected", [
    (URP, ["kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value: 0"]),
    (PARTITION, ["kafka.cluster<type=Partition, name=AtMinIsr, topic=orders, partition=3><>Value: 1"]),
    (bean('kafka.log:type=LogManager,name=LogDirectoryOffline,logDirectory="/var/lib/kafka/data"', ("Value", 0)),
     ['kafka.log<type=LogManager, name=LogDirectoryOffline, logDirectory="/var/lib/kafka/data"><>Value: 0']),
    (bean("java.lang:type=Memory", ("HeapMemoryUsage", Composite(used=123456, max=2 ** 31, committed=7.5e9))),
     ["java.lang<type=Memory><HeapMemoryUsage>committed: 7.5E9", "java.lang<type=Memory><HeapMemoryUsage>max: 2147483648",
      "java.lang<type=Memory><HeapMemoryUsage>used: 123456"]),
    (bean("d:type=T", ("A", 1.0e9), ("B", math.nan), ("C", True), ("D", "text"), ("E", -0.001)),
     ["d<type=T><>A: 1.0E9", "d<type=T><>B: NaN", "d<type=T><>C: true", "d<type=T><>D: text", "d<type=T><>E: -0.001"]),
])
def test_match_strings(mbean, expected):
    assert [leaf.match_string() for leaf in leaves(mbean)] == expected


def test_match_string_variants():
    (leaf,) = leaves(bean("d:type=T", ("UnderReplicatedPartitions", 3)))
    assert leaf.match_string(snake=True) == "d<type=T><>under_replicated_partitions: 3"
    assert leaf.match_string(cache=True) == "d<type=T><>UnderReplicatedPartitions: <cache>"


# --- flattening ------------------------------------------------------------------------------

def test_none_arrays_and_unknown_objects_are_skipped():
    mbean = bean("d:type=T", ("N", None), ("L", [1, 2]), ("T", (1,)), ("B", b"x"), ("O", object()), ("V", 2))
    assert [leaf.attr for leaf in leaves(mbean)] == ["V"]


def test_dates_become_epoch_seconds():
    when = dt.datetime(2026, 11, 21, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)
    assert epoch_seconds(when) == 1795262400.123
    assert epoch_seconds(dt.datetime(1970, 1, 1, 0, 0, 1)) == 1.0  # naive is UTC
    s = one("", bean("d:type=T", ("Started", when)))
    assert (s.name, s.value) == ("d_T_Started", 1795262400.123)
    (leaf,) = leaves(bean("d:type=T", ("Started", when)))
    assert leaf.match_string() == "d<type=T><>Started: 1.795262400123E9"


def test_composite_items_in_sorted_key_order_with_the_type_description():
    usage = Composite(used=1, init=2, committed=3, max=4)
    usage.description = "java.lang.management.MemoryUsage"
    out = run("", bean("java.lang:type=Memory", ("HeapMemoryUsage", usage)))
    assert [(s.name, s.value) for s in out] == [
        ("java_lang_Memory_HeapMemoryUsage_committed", 3.0), ("java_lang_Memory_HeapMemoryUsage_init", 2.0),
        ("java_lang_Memory_HeapMemoryUsage_max", 4.0), ("java_lang_Memory_HeapMemoryUsage_used", 1.0)]
    assert out[0].help == "java.lang.management.MemoryUsage java.lang:name=null,type=Memory,attribute=committed"


def test_nested_composites_push_every_level():
    (leaf,) = leaves(bean("d:type=T", ("Outer", Composite(inner=Composite(x=1)))))
    assert leaf.match_string() == "d<type=T><Outer, inner>x: 1"
    assert one("", bean("d:type=T", ("Outer", Composite(inner=Composite(x=1))))).name == "d_T_Outer_inner_x"


def test_tabular_index_columns_become_keys_and_value_column_takes_the_table_place():
    table = Tabular(index=("key",), rows=({"key": "a", "value": 1}, {"key": "b", "value": 2}))
    out = run("", bean("d:type=T,name=N", ("Map", table)))
    assert series(out) == [("d_T_Map", (("name", "N"), ("key", "a")), 1.0),
                           ("d_T_Map", (("name", "N"), ("key", "b")), 2.0)]
    assert [leaf.match_string() for leaf in leaves(bean("d:type=T,name=N", ("Map", table)))] == [
        "d<type=T, name=N, key=a><>Map: 1", "d<type=T, name=N, key=b><>Map: 2"]


def test_tabular_other_columns_and_colliding_index_names():
    row = Composite({"name": "x", "id": 7, "count": 3, "Avg": 1.5})
    row.description = "row type"
    table = Tabular(index=("name", "id"), rows=(row,))
    assert [leaf.match_string() for leaf in leaves(bean("d:type=T,name=N", ("Stats", table)))] == [
        "d<type=T, name=N, name_=x, id=7><Stats>Avg: 1.5",
        "d<type=T, name=N, name_=x, id=7><Stats>count: 3",
    ]
    s = run("", bean("d:type=T,name=N", ("Stats", table)))[0]
    assert s.labels == (("name", "N"), ("name_", "x"), ("id", "7"))
    # HELP: the row type's description, and the ObjectName's own name key
    assert s.help == "row type d:name=N,type=T,attribute=Avg"


def test_nested_tables_repeat_the_underscore():
    inner = Tabular(index=("key",), rows=({"key": "i", "value": 5},))
    outer = Tabular(index=("key",), rows=({"key": "o", "value": inner},))
    (leaf,) = leaves(bean("d:type=T", ("M", outer)))
    assert leaf.keys == (("type", "T"), ("key", "o"), ("key_", "i"))


def test_java_str():
    assert [java_str(v) for v in (0, 123, 1.5, 1e9, math.nan, True, False, "x")] == [
        "0", "123", "1.5", "1.0E9", "NaN", "true", "false", "x"]
