import math
import re
import struct

import pytest
from hypothesis import given, strategies as st

from kafka_jmx_sidecar.exporter.base.java_text import java_double, java_float
from kafka_jmx_sidecar.exporter.output.exposition import (
    OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE, choose_content_type, go_double, iter_openmetrics_families,
    iter_text_families, render, render_openmetrics, render_text)
from kafka_jmx_sidecar.exporter.base.families import of_samples
from kafka_jmx_sidecar.exporter.base.model import Sample


@pytest.mark.parametrize("value, text", [
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (1.0, "1.0"),
    (-1.0, "-1.0"),
    (1.5, "1.5"),
    (100.0, "100.0"),
    (256.0, "256.0"),
    (9999999.0, "9999999.0"),
    (1.0e7, "1.0E7"),
    (1.0e9, "1.0E9"),
    (6.9766383444e10, "6.9766383444E10"),
    (1.795298702888e12, "1.795298702888E12"),
    (0.001, "0.001"),
    (0.0001, "1.0E-4"),
    (1.7906570373451305e-4, "1.7906570373451305E-4"),
    (1.7933744052763458, "1.7933744052763458"),
    (0.987146529562982, "0.987146529562982"),
    (123456789.0, "1.23456789E8"),
    (1.2345678901234568e17, "1.2345678901234568E17"),
    (5e-324, "4.9E-324"),  # Java takes the closest two-digit decimal when one digit would do
    (1e23, "1.0E23"),
    (2e-3, "0.002"),
    (1.7976931348623157e308, "1.7976931348623157E308"),
    (math.nan, "NaN"),
    (math.inf, "Infinity"),
    (-math.inf, "-Infinity"),
])
def test_java_double(value, text):
    assert java_double(value) == text


@pytest.mark.parametrize("value, text", [(math.nan, "NaN"), (math.inf, "+Inf"), (-math.inf, "-Inf"), (3.0, "3.0")])
def test_go_double(value, text):
    assert go_double(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_round_trips_and_has_java_shape(x):
    text = java_double(x)
    assert float(text) == x
    mantissa = text.split("E")[0]
    assert "." in mantissa and mantissa.split(".")[1] != ""
    if "E" in text:
        assert not (1e-3 <= abs(x) < 1e7)
        assert 1 <= abs(float(mantissa)) < 10
    else:
        assert x == 0 or 1e-3 <= abs(x) < 1e7


def test_text_format_quirks_of_simpleclient_0_16():
    samples = [
        Sample("kafka_cluster_Partition_Value", (("name", "UnderReplicated"), ("topic", "orders"), ("partition", "3")),
               0.0, "untyped", "Attribute exposed for management kafka.cluster:name=UnderReplicated,type=Partition,attribute=Value"),
        Sample("kafka_server_ReplicaManager_Value", (("name", "LeaderCount"),), 5.0, "gauge", "help one"),
        Sample("kafka_cluster_Partition_Value", (("name", "UnderReplicated"), ("topic", "orders"), ("partition", "4")),
               1.0e9, "untyped", "a different help is ignored"),
        Sample("jmx_scrape_duration_seconds", (), 0.25, "gauge", "Time this JMX scrape took, in seconds."),
    ]
    assert render_text(samples).decode() == (
        "# HELP kafka_cluster_Partition_Value Attribute exposed for management kafka.cluster:name=UnderReplicated,type=Partition,attribute=Value\n"
        "# TYPE kafka_cluster_Partition_Value untyped\n"
        'kafka_cluster_Partition_Value{name="UnderReplicated",topic="orders",partition="3",} 0.0\n'
        'kafka_cluster_Partition_Value{name="UnderReplicated",topic="orders",partition="4",} 1.0E9\n'
        "# HELP kafka_server_ReplicaManager_Value help one\n"
        "# TYPE kafka_server_ReplicaManager_Value gauge\n"
        'kafka_server_ReplicaManager_Value{name="LeaderCount",} 5.0\n'
        "# HELP jmx_scrape_duration_seconds Time this JMX scrape took, in seconds.\n"
        "# TYPE jmx_scrape_duration_seconds gauge\n"
        "jmx_scrape_duration_seconds 0.25\n"
    )


def test_counters_in_text_format():
    samples = [
        Sample("kafka_server_brokertopicmetrics_bytesin_total", (("topic", "a"),), 989.0, "counter", "h"),
        Sample("kafka_network_requestmetrics_totaltimems_count", (), 12.0, "counter", "c"),
    ]
    assert render_text(samples).decode() == (
        "# HELP kafka_server_brokertopicmetrics_bytesin_total h\n"
        "# TYPE kafka_server_brokertopicmetrics_bytesin_total counter\n"
        'kafka_server_brokertopicmetrics_bytesin_total{topic="a",} 989.0\n'
        # simpleclient names the family's HELP/TYPE <name>_total; the sample keeps its name.
        "# HELP kafka_network_requestmetrics_totaltimems_count_total c\n"
        "# TYPE kafka_network_requestmetrics_totaltimems_count_total counter\n"
        "kafka_network_requestmetrics_totaltimems_count 12.0\n"
    )


def test_a_family_of_mixed_types_takes_the_first_samples_in_0x_and_is_untyped_in_1x():
    # as jmx_exporter 0.20.0 and 1.6.0 print it (tests/real/test_examples_vs_jmx_exporter.py,
    # test_samples_of_mixed_types_under_one_name)
    samples = [
        Sample("m", (("request", "Produce"),), 3.0, "untyped", "first"),
        Sample("m", (("request", "Produce"), ("quantile", "0.99")), 7.0, "gauge", "second"),
        Sample("g", (), 1.0, "counter", "g1"),
        Sample("g", (("a", "b"),), 2.0, "gauge", "g2"),
    ]
    text = render_text(samples).decode()
    assert "# HELP m first\n# TYPE m untyped\n" in text
    assert "# HELP g_total g1\n# TYPE g_total counter\ng 1.0\ng{a=\"b\",} 2.0\n" in text
    one_x = "".join(iter_text_families(of_samples(samples, one_x=True), "1.x"))
    assert "# HELP g g1\n# TYPE g untyped\ng 1.0\ng{a=\"b\"} 2.0\n" in one_x


def test_escaping_of_label_values_and_help():
    samples = [Sample("m", (("dir", '"/var/lib/kafka\\data"\nx'),), 1.0, "gauge", 'back\\slash "quoted"\nnewline')]
    assert render_text(samples).decode() == (
        '# HELP m back\\\\slash "quoted"\\nnewline\n'
        "# TYPE m gauge\n"
        'm{dir="\\"/var/lib/kafka\\\\data\\"\\nx",} 1.0\n'
    )
    assert render_openmetrics(samples).decode() == (
        "# TYPE m gauge\n"
        '# HELP m back\\\\slash \\"quoted\\"\\nnewline\n'
        'm{dir="\\"/var/lib/kafka\\\\data\\"\\nx"} 1.0\n'
        "# EOF\n"
    )


def test_special_values_and_timestamps_in_text_format():
    samples = [
        Sample("v", (("k", "nan"),), math.nan, "gauge", "h"),
        Sample("v", (("k", "inf"),), math.inf, "gauge", "h"),
        Sample("v", (("k", "-inf"),), -math.inf, "gauge", "h"),
        Sample("v", (("k", "negzero"),), -0.0, "gauge", "h"),
        Sample("v", (("k", "zero"),), 0.0, "gauge", "h", timestamp_ms=1700000000123),
    ]
    assert render_text(samples).decode() == (
        "# HELP v h\n# TYPE v gauge\n"
        'v{k="nan",} NaN\n'
        'v{k="inf",} +Inf\n'
        'v{k="-inf",} -Inf\n'
        'v{k="negzero",} -0.0\n'
        'v{k="zero",} 0.0 1700000000123\n'
    )


def test_openmetrics():
    samples = [
        Sample("kafka_server_brokertopicmetrics_bytesin_total", (("topic", "a"),), 989.0, "counter", "bytes in",
               timestamp_ms=1700000000123),
        Sample("kafka_server_replicamanager_underreplicatedpartitions", (), 0.0, "gauge", "urp",
               timestamp_ms=1700000000005),
        Sample("kafka_cluster_Partition_Value", (("name", "AtMinIsr"), ("topic", "t"), ("partition", "0")), 1.0,
               "untyped", "at min isr"),
        Sample("x_count", (), 4.0, "counter", "a counter without _total"),
    ]
    assert render_openmetrics(samples).decode() == (
        "# TYPE kafka_server_brokertopicmetrics_bytesin counter\n"
        "# HELP kafka_server_brokertopicmetrics_bytesin bytes in\n"
        'kafka_server_brokertopicmetrics_bytesin_total{topic="a"} 989.0 1700000000.123\n'
        "# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge\n"
        "# HELP kafka_server_replicamanager_underreplicatedpartitions urp\n"
        "kafka_server_replicamanager_underreplicatedpartitions 0.0 1700000000.005\n"
        "# TYPE kafka_cluster_Partition_Value unknown\n"
        "# HELP kafka_cluster_Partition_Value at min isr\n"
        'kafka_cluster_Partition_Value{name="AtMinIsr",topic="t",partition="0"} 1.0\n'
        # simpleclient 0.16 types it counter and writes the sample as it is named
        "# TYPE x_count counter\n"
        "# HELP x_count a counter without _total\n"
        "x_count 4.0\n"
        "# EOF\n"
    )


def test_openmetrics_counter_whose_family_name_is_taken():
    # jmx_exporter 0.20.0 writes both families under the one name
    samples = [Sample("x_total", (), 1.0, "counter", "c"), Sample("x", (), 2.0, "gauge", "g")]
    assert render_openmetrics(samples).decode() == (
        "# TYPE x counter\n# HELP x c\nx_total 1.0\n"
        "# TYPE x gauge\n# HELP x g\nx 2.0\n"
        "# EOF\n"
    )


def test_openmetrics_negative_timestamp():
    assert render_openmetrics([Sample("m", (), 1.0, "gauge", "h", timestamp_ms=-1500)]).decode().splitlines()[2] == "m 1.0 -1.500"


def test_empty_inputs():
    assert render_text([]) == b""
    assert render_openmetrics([]) == b"# EOF\n"


@pytest.mark.parametrize("accept, content_type", [
    (None, TEXT_CONTENT_TYPE),
    ("", TEXT_CONTENT_TYPE),
    ("text/plain", TEXT_CONTENT_TYPE),
    ("application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", OPENMETRICS_CONTENT_TYPE),
    ("text/plain;version=0.0.4;q=0.5, application/openmetrics-text;version=0.0.1;q=0.75", OPENMETRICS_CONTENT_TYPE),
    ("application/json", TEXT_CONTENT_TYPE),
])
def test_choose_content_type(accept, content_type):
    assert choose_content_type(accept) == content_type


def test_render_dispatches_on_content_type():
    samples = [Sample("m", (), 1.0, "gauge", "h")]
    assert render(samples, TEXT_CONTENT_TYPE) == render_text(samples)
    assert render(samples, OPENMETRICS_CONTENT_TYPE) == render_openmetrics(samples)


def test_values_that_compare_equal_keep_their_own_text():
    # 0.0 and -0.0 share a dict slot; the memo must not print one as the other.
    text = render_text([Sample("a", (), 0.0, "gauge", "h"), Sample("b", (), -0.0, "gauge", "h"),
                        Sample("c", (), 0.0, "gauge", "h")]).decode()
    assert "a 0.0\n" in text and "b -0.0\n" in text and "c 0.0\n" in text


def test_the_memos_keep_no_more_than_their_bounds_and_change_no_line(monkeypatch):
    """More distinct label sets and values than the memos keep (the bounds made small here): the
    memos start over and stay within them, and every line is what a fresh formatting gives."""
    from kafka_jmx_sidecar.exporter.output import exposition

    monkeypatch.setattr(exposition, "_LABELS_MEMO_LIMIT", 7)
    monkeypatch.setattr(exposition, "_VALUES_MEMO_LIMIT", 5)
    samples = [Sample("m", (("topic", f"t{i % 30}"), ("partition", str(i))), float(i % 11) / 4, "gauge", "h")
               for i in range(60)]
    want = "# HELP m h\n# TYPE m gauge\n" + "".join(
        f'm{{topic="t{i % 30}",partition="{i}",}} {java_double(float(i % 11) / 4)}\n' for i in range(60))
    for _ in range(2):
        assert render_text(samples).decode() == want
        assert render_openmetrics(samples).decode() == want.replace(",}", "}").replace(
            "# HELP m h\n# TYPE m gauge\n", "# TYPE m gauge\n# HELP m h\n") + "# EOF\n"
        assert len(exposition._labels_004_memo) <= 7 and len(exposition._labels_om_memo) <= 7
        assert len(exposition._value_memo) <= 5


def test_integer_values_print_as_doubles():
    assert render_text([Sample("a", (), 5, "gauge", "h"), Sample("b", (), True, "gauge", "h")]).decode() == (
        "# HELP a h\n# TYPE a gauge\na 5.0\n# HELP b h\n# TYPE b gauge\nb 1.0\n")


def test_float_bits_survive():
    x = struct.unpack(">d", bytes.fromhex("3fb999999999999a"))[0]  # 0.1
    assert render_text([Sample("a", (), x, "gauge", "h")]).decode().endswith("a 0.1\n")


_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', re.DOTALL)
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


@given(st.lists(st.tuples(st.sampled_from(["a", "b_c", "d:e"]),
                          st.lists(st.tuples(st.sampled_from(["k", "topic", "x_1"]), st.text()), max_size=3,
                                   unique_by=lambda kv: kv[0]),
                          st.floats(allow_nan=False)), max_size=20))
def test_label_values_and_values_round_trip(rows):
    samples = [Sample(name, tuple(labels), value, "gauge", "h\\elp\nx") for name, labels, value in rows]
    for render_, trailing in ((render_text, True), (render_openmetrics, False)):
        parsed = []
        for line in render_(samples).decode().split("\n"):  # only \n ends a line (\r is content)
            if not line or line.startswith("#"):
                continue
            m = _LINE.match(line)
            assert m, line
            labels = tuple((k, _unescape(v)) for k, v in _PAIR.findall(m.group(2) or ""))
            if m.group(2):
                assert m.group(2).endswith(",") is trailing
            parsed.append((m.group(1), labels, float(m.group(3))))
        expected = sorted((n, tuple(l), v) for n, l, v in rows)
        assert sorted(parsed) == expected


@pytest.mark.parametrize("value, text", [
    # Float.toString of JDK 25 (jmx_exporter matches rules against it)
    (0.1, "0.1"), (3.3e-5, "3.3E-5"), (1.0e10, "1.0E10"), (16777217.0, "1.6777216E7"), (1.5, "1.5"),
    (1.401298464324817e-45, "1.4E-45"), (3.4028234663852886e38, "3.4028235E38"), (100.0, "100.0"),
    (1.0e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"), (-2.25, "-2.25"),
])
def test_java_float(value, text):
    f32 = struct.unpack("<f", struct.pack("<f", value))[0]
    assert java_float(f32) == text


def test_1x_writers():
    # as client_java 1.x prints them for jmx_exporter 1.6.0 (tests/real/test_examples_vs_jmx_exporter.py)
    samples = [Sample("c", (("a:b", "1"), ("z", 'q"')), 2.0, "counter", ""),
               Sample("g", (), 1.0, "gauge", "help\\ me")]
    families = of_samples(samples, one_x=True)
    assert "".join(iter_text_families(families, "1.x")) == (
        '# TYPE c_total counter\nc_total{"a:b"="1",z="q\\""} 2.0\n'
        "# HELP g help\\\\ me\n# TYPE g gauge\ng 1.0\n")
    assert "".join(iter_openmetrics_families(families, naming="1.x")) == (
        '# TYPE c counter\nc_total{"a:b"="1",z="q\\""} 2.0\n'
        "# TYPE g gauge\n# HELP g help\\\\ me\ng 1.0\n# EOF\n")


def test_a_big_table_and_a_long_sample_list_are_written_a_piece_at_a_time(monkeypatch):
    """A family's lines come in pieces of at most `_PIECE_LINES` lines (so a render never holds a
    40,000-partition family's text at once), absent members leave no line and no empty piece,
    and the pieces put together are the lines written out by hand here."""
    from array import array

    from kafka_jmx_sidecar.exporter.output import exposition
    from kafka_jmx_sidecar.exporter.base.families import PARTITION, TOPIC, Family, MemberOutcome, TableSeries
    from kafka_jmx_sidecar.exporter.base.model import BeanTable

    monkeypatch.setattr(exposition, "_PIECE_LINES", 4)
    n = 10
    table = BeanTable("kafka.log", (("type", "Log"), ("name", "Size")), "G", "Value", "", "", True, ["a", "b"],
                      array("i", [i % 2 for i in range(n)]), array("i", range(n)), array("i", range(n)),
                      array("q", [100 * i for i in range(n)]), bytearray([0 if i == 5 else 1 for i in range(n)]))
    outcome = MemberOutcome("kafka_log_size", (("topic", TOPIC), ("partition", PARTITION)), "gauge", "h", None,
                            1.0, "Value")
    samples = [Sample("kafka_log_size", (("topic", "c"), ("partition", str(i))), float(i), "gauge", "h")
               for i in range(9)]
    family = Family("kafka_log_size", "gauge", "h",
                    [TableSeries(table, outcome, array("i", range(n))), samples])
    pieces = list(iter_openmetrics_families([family], eof=False))
    assert pieces[0] == "# TYPE kafka_log_size gauge\n# HELP kafka_log_size h\n"
    # the table: members 0-3, 4-7 (5 absent), 8-9; the samples: 0-3, 4-7, 8
    assert [p.count("\n") for p in pieces[1:]] == [4, 3, 2, 4, 4, 1]
    want = "".join(f'kafka_log_size{{topic="{"ab"[i % 2]}",partition="{i}"}} {100 * i}.0\n'
                   for i in range(n) if i != 5)
    want += "".join(f'kafka_log_size{{topic="c",partition="{i}"}} {i}.0\n' for i in range(9))
    assert "".join(pieces[1:]) == want
    text = "".join(iter_text_families([family]))
    assert text == "# HELP kafka_log_size h\n# TYPE kafka_log_size gauge\n" + want.replace('"}', '",}')
