import pytest
from hypothesis import example, given, strategies as st

from kafka_jmx_sidecar.exporter.base.model import Sample
from kafka_jmx_sidecar.exporter.rule_engine.naming import (add_objectname_on_collisions, keep_first, openmetrics_name, safe_name,
                                   series_key, snake_case)


@pytest.mark.parametrize("raw, safe", [
    ("test-_-test", "test_test"),
    ("__test", "_test"),
    ("001", "_001"),
    ("kafka.server_ReplicaManager_Value", "kafka_server_ReplicaManager_Value"),
    ("a:b", "a:b"),  # ':' is legal in metric names
    ("a  b", "a_b"),
    ("ünïcode", "_n_code"),
    ("trailing-", "trailing_"),
    ("", ""),
    ("9lives", "_9lives"),
    ("_9", "_9"),
    ("kafka_server_socket-server-metrics_io-ratio", "kafka_server_socket_server_metrics_io_ratio"),
])
def test_safe_name(raw, safe):
    assert safe_name(raw) == safe


@pytest.mark.parametrize("raw, snake", [
    ("testTCPTest", "test_tcptest"),
    ("UnderReplicatedPartitions", "under_replicated_partitions"),
    ("OneMinuteRate", "one_minute_rate"),
    ("99thPercentile", "99th_percentile"),
    ("already_snake", "already_snake"),
    ("_Leading", "_leading"),  # no '_' after an '_'
    ("a_B", "a_b"),
    ("HTTPServer", "httpserver"),
    ("", ""),
])
def test_snake_case(raw, snake):
    assert snake_case(raw) == snake


@pytest.mark.parametrize("name, kind, expected", [
    ("x_count", "counter", "x_count_total"),
    ("x_total", "gauge", "x"),
    ("x_total", "counter", "x_total"),
    ("x_info", "untyped", "x"),
    ("x_created", "gauge", "x"),
    ("x_bucket", "gauge", "x"),
    ("x_total_total", "counter", "x_total"),
    ("x", "counter", "x_total"),
    # client_java 1.7's sanitizeMetricName: a name that is only a suffix loses its '_' (real
    # jmx_exporter 1.6.0: tests/real/test_examples_vs_jmx_exporter.py)
    ("_total", "gauge", "total"),
    ("_total_total", "gauge", "total"),
    ("_info", "counter", "info_total"),
])
def test_openmetrics_name(name, kind, expected):
    assert openmetrics_name(name, kind) == expected


@given(st.text())
@example("\u1040")  # MYANMAR DIGIT ZERO: a digit to Java, not a legal character
def test_safe_name_only_produces_legal_names(text):
    out = safe_name(text)
    assert all(c.isascii() and (c.isalnum() or c in ":_") for c in out)
    first = text[:1]
    if first and first <= "\uffff" and first.isdecimal() and not first.isascii():
        # jmx_exporter's safeName prefixes '_' for Character.isDigit, then the digit itself is
        # not a legal character and becomes a second '_' (its underscore merging starts after the prefix)
        assert out.startswith("__") and "__" not in out[1:]
        assert safe_name(out) == out[1:]
    else:
        assert "__" not in out
        assert safe_name(out) == out or out[:1].isdigit()


def test_series_key_distinguishes_label_order_and_values():
    a = series_key("m", (("a", "1"), ("b", "2")))
    assert a == series_key("m", (("a", "1"), ("b", "2")))
    assert a != series_key("m", (("b", "2"), ("a", "1")))
    assert series_key("m", (("a", "1,b"),)) != series_key("m", (("a", "1"), ("b", "")))
    assert series_key("m", ()) != series_key("m_", ())


def test_keep_first_keeps_the_first_of_each_series():
    s1 = Sample("m", (("a", "1"),), 1.0)
    s2 = Sample("m", (("a", "1"),), 2.0)
    s3 = Sample("m", (("a", "2"),), 3.0)
    s4 = Sample("n", (("a", "1"),), 4.0)
    assert keep_first([s1, s2, s3, s4]) == [s1, s3, s4]


def test_objectname_added_to_every_sample_of_a_colliding_name_only():
    entries = [
        (Sample("m", (("b", "1"),), 1.0, "gauge"), "d<type=X, name=A><>Value"),
        (Sample("m", (("b", "1"),), 2.0, "gauge"), "d<type=X, name=B><>Value"),
        (Sample("m", (("b", "2"),), 3.0, "gauge"), "d<type=X, name=C><>Value"),
        (Sample("n", (("b", "1"),), 4.0, "gauge"), "d<type=Y><>Value"),
    ]
    out = add_objectname_on_collisions(entries)
    assert out == [
        Sample("m", (("_objectname", "d<type=X, name=A><>Value"), ("b", "1")), 1.0, "gauge"),
        Sample("m", (("_objectname", "d<type=X, name=B><>Value"), ("b", "1")), 2.0, "gauge"),
        Sample("m", (("_objectname", "d<type=X, name=C><>Value"), ("b", "2")), 3.0, "gauge"),
        Sample("n", (("b", "1"),), 4.0, "gauge"),
    ]
