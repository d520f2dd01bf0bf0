"""Named examples of what the sidecar got wrong against the real jmx_exporter (0.20.0 for 0.x
naming, 1.6.0 for 1.x), each kept small: the fixed `example:*` MBeans of RandomBeans.java, a few
rules, both sides compared byte for byte (tests/real/side_by_side.py), and the line that shows the
behaviour asserted on jmx_exporter's own output, so each test says what the real program does.
"""
from __future__ import annotations

import pytest

from tests.real.side_by_side import side_by_side

EXCLUDE_PLATFORM = ["java.lang:*", "java.nio:*", "java.util.logging:*", "jdk.management.jfr:*",
                    "com.sun.management:*", "JMImplementation:*"]
FORMATS = [False, True]


def compare(exporters, beans, config: dict, namings=("0.x", "1.x")) -> dict:
    """Both formats of each naming mode side by side; {(naming, openmetrics): Outcome}."""
    outcomes = {}
    for naming in namings:
        for openmetrics in FORMATS:
            outcomes[naming, openmetrics] = side_by_side(current := exporters[naming], beans.host_port, config,
                                                         naming, openmetrics, serve=not openmetrics)
            assert current.release
    failures = [o.explain() for o in outcomes.values() if not o.same]
    assert not failures, "\n".join(failures)
    return outcomes


def lines(outcomes: dict, naming: str, openmetrics: bool) -> list[str]:
    return outcomes[naming, openmetrics].theirs.splitlines()


def only_examples(**rules) -> dict:
    return {"includeObjectNames": ["example:*"], **rules}


def test_0x_openmetrics_types_a_counter_without_total_as_counter(random_beans, current_jmx_exporters):
    config = only_examples(rules=[{"pattern": "example<type=Numbers><>Positive", "name": "ex_positive_count",
                                   "type": "COUNTER"}])
    out = compare(current_jmx_exporters, random_beans, config)
    assert lines(out, "0.x", True)[:3] == ["# TYPE ex_positive_count counter",
                                           "# HELP ex_positive_count above zero example:name=null,type=Numbers,attribute=Positive",
                                           "ex_positive_count 7.0"]
    assert "# TYPE ex_positive_count_total counter" in lines(out, "0.x", False)
    assert "ex_positive_count_total 7.0" in lines(out, "1.x", False)


def test_1x_text_writes_labels_without_a_trailing_comma(random_beans, current_jmx_exporters):
    config = only_examples(rules=[{"pattern": "example<type=Numbers><>(Positive)", "name": "ex_value",
                                   "labels": {"b": "2", "a": "$1"}}])
    out = compare(current_jmx_exporters, random_beans, config)
    assert 'ex_value{a="Positive",b="2",} 7.0' in lines(out, "0.x", False)
    assert 'ex_value{a="Positive",b="2"} 7.0' in lines(out, "1.x", False)


def test_1x_sorts_families_by_name_and_series_by_their_labels(random_beans, current_jmx_exporters):
    config = only_examples(rules=[
        {"pattern": "example<type=Order, v=(.+)><>Value", "name": "ex_order", "labels": {"v": "$1"}},
        {"pattern": "example<type=Numbers><>Positive", "name": "ex_order", "labels": {"a": "x"}},
        {"pattern": "example<type=Numbers><>Negative", "name": "ex_close_rate"},
        {"pattern": "example<type=Numbers><>LongAdder", "name": "ex_close_total", "type": "COUNTER"},
    ])
    out = compare(current_jmx_exporters, random_beans, config)
    samples = [line for line in lines(out, "1.x", False) if not line.startswith("#")]
    # a counter sorts by its family name (ex_close < ex_close_rate); labels by name, then value,
    # values in Java's UTF-16 order (the emoji's surrogates before U+FF21)
    assert samples == ["ex_close_total 5.0", "ex_close_rate -7.0", 'ex_order{a="x"} 7.0', 'ex_order{v="\\"B\\""} 1.0',
                       'ex_order{v="\\"a\\""} 1.0', 'ex_order{v="\\"😀\\""} 2.0', 'ex_order{v="\\"Ａ\\""} 1.0']


def test_samples_of_mixed_types_under_one_name(random_beans, current_jmx_exporters):
    config = only_examples(rules=[
        {"pattern": "example<type=Numbers><>Positive", "name": "ex_mixed", "type": "COUNTER", "help": "counter"},
        {"pattern": "example<type=Numbers><>Negative", "name": "ex_mixed", "type": "GAUGE", "help": "gauge"},
    ])
    out = compare(current_jmx_exporters, random_beans, config)
    zero_x = "\n".join(lines(out, "0.x", False))
    one_x = "\n".join(lines(out, "1.x", False))
    # 0.x: the family is what its first sample made it; 1.x: untyped, both told apart by _objectname
    assert ("# TYPE ex_mixed_total counter" in zero_x) != ("# TYPE ex_mixed gauge" in zero_x)
    assert "# TYPE ex_mixed untyped" in one_x and '_objectname="example<type=Numbers><>Negative"' in one_x


def test_help_of_missing_empty_and_composite_descriptions(random_beans, current_jmx_exporters):
    config = {"includeObjectNames": ["example:type=Descriptions"]}
    out = compare(current_jmx_exporters, random_beans, config)
    helps = [line for line in lines(out, "0.x", False) if line.startswith("# HELP")]
    assert "# HELP example_Descriptions_NullDescription example:name=null,type=Descriptions,attribute=NullDescription" in helps
    assert "# HELP example_Descriptions_EmptyDescription  example:name=null,type=Descriptions,attribute=EmptyDescription" in helps
    assert "# HELP example_Descriptions_Usage_used a composite type example:name=null,type=Descriptions,attribute=used" in helps
    assert "# HELP example_Descriptions_Table a row type example:name=null,type=Descriptions,attribute=Table" in helps


def test_numbers_are_matched_as_java_prints_them(random_beans, current_jmx_exporters):
    config = only_examples(rules=[{"pattern": r"example<type=Numbers><>(Float\w*|BigDecimal\w*|LongAdder|BigLong): (.*)",
                                   "name": "ex_number", "labels": {"attr": "$1", "text": "$2"}}])
    out = compare(current_jmx_exporters, random_beans, config)
    text = lines(out, "0.x", False)
    for line in ['ex_number{attr="Float",text="0.1",} 0.10000000149011612', 'ex_number{attr="FloatBig",text="3.3E-5",} 3.300000025774352E-5',
                 'ex_number{attr="BigDecimal",text="1.10",} 1.1', 'ex_number{attr="BigDecimalExp",text="1E+3",} 1000.0',
                 'ex_number{attr="LongAdder",text="5",} 5.0',
                 # what jmx_exporter prints on a JDK 19+ (JDK 17: -3.3388287912947169E18)
                 'ex_number{attr="BigLong",text="-3338828791294716928",} -3.338828791294717E18']:
        assert line in text


def test_an_enum_constant_with_a_body_is_not_exported(random_beans, current_jmx_exporters):
    config = only_examples(rules=[{"pattern": r"example<type=Enums><>(\w+): (.*)", "name": "ex_enum",
                                   "value": "1", "labels": {"attr": "$1", "text": "$2"}}])
    out = compare(current_jmx_exporters, random_beans, config)
    assert [line for line in lines(out, "0.x", False) if not line.startswith("#")] == [
        'ex_enum{attr="Plain",text="SECONDS",} 1.0']


def test_1x_fails_a_scrape_with_a_negative_counter(random_beans, current_jmx_exporters):
    config = only_examples(rules=[{"pattern": "example<type=Numbers><>Negative", "name": "ex_negative",
                                   "type": "COUNTER"}])
    out = compare(current_jmx_exporters, random_beans, config)
    assert "ex_negative -7.0" in lines(out, "0.x", False)
    assert out["1.x", False].theirs.startswith("HTTP 500")
    assert "counter ex_negative has a negative value" in out["1.x", False].ours


def test_1x_refuses_a_value_factor_that_is_not_a_number(random_beans, current_jmx_exporters):
    config = only_examples(rules=[{"pattern": "example<type=Numbers><>Positive", "name": "ex_factor",
                                   "valueFactor": "abc"}])
    out = compare(current_jmx_exporters, random_beans, config)
    assert "ex_factor 7.0" in lines(out, "0.x", False)
    assert "Invalid number provided for valueFactor" in out["1.x", False].theirs
    assert "valueFactor: 'abc' is not a number" in out["1.x", False].ours


def test_1x_fails_a_scrape_with_two_series_alike_once_snake_cased(random_beans, current_jmx_exporters):
    config = only_examples(rules=[{"pattern": "example<type=Snake><>.*", "attrNameSnakeCase": True}])
    out = compare(current_jmx_exporters, random_beans, config)
    assert "example_Snake_foo_bar 1.0" in lines(out, "0.x", False)  # the first visited wins in 0.x
    assert "DuplicateLabelsException" in out["1.x", False].theirs


def test_1x_names_of_nothing_but_a_reserved_suffix(random_beans, current_jmx_exporters):
    config = only_examples(rules=[{"pattern": "example<type=Numbers><>Positive", "name": "_total"},
                                  {"pattern": "example<type=Numbers><>Negative", "name": "ex_info_total"}])
    out = compare(current_jmx_exporters, random_beans, config)
    assert [line for line in lines(out, "1.x", False) if not line.startswith("#")] == ["ex -7.0", "total 7.0"]


def test_1x_quotes_a_label_name_with_a_colon(random_beans, current_jmx_exporters):
    config = only_examples(rules=[{"pattern": "example<type=Numbers><>Positive", "name": "ex_colon",
                                   "labels": {"a:b": "1"}}])
    out = compare(current_jmx_exporters, random_beans, config)
    assert 'ex_colon{a:b="1",} 7.0' in lines(out, "0.x", False)
    assert 'ex_colon{"a:b"="1"} 7.0' in lines(out, "1.x", False)


@pytest.mark.parametrize("includes", [None, ["rnd.mx:*", "rnd*:*", "example:type=Order,*"]],
                         ids=["excludes-only", "three-include-patterns"])
def test_the_visiting_order_counts_the_names_excludes_take_out(includes, random_beans, current_jmx_exporters):
    # jmx_exporter sizes its set for every name the include patterns match before removing the
    # excluded ones, adds one pattern's names after another's, each in the bucket order of the
    # ObjectInstances the broker returned: which MXBean's HELP a family takes, and the order of a
    # family's series, follow from that
    config = {**({"includeObjectNames": includes} if includes else {}),
              "excludeObjectNames": EXCLUDE_PLATFORM + ["kafka.cluster:*", "kafka.log:*", "rnd.alpha:*"],
              "rules": [{"pattern": "(.*)<(.*)><(.*)>(.*)", "name": "rnd_every", "labels": {"keys": "$2"}},
                        {"pattern": ".*"}]}
    compare(current_jmx_exporters, random_beans, config)


def test_keys_jmx_exporter_0x_does_not_know_are_ignored_in_0x(random_beans, current_jmx_exporters):
    config = {"includeObjectNames": ["example:type=Numbers"], "inferCounterTypeFromName": True,
              "includeObjectNameAttributes": {"example:type=Numbers": ["Positive", "Negative"]},
              "rules": [{"pattern": "example<type=Numbers><>Positive", "name": "ex_inferred_total"},
                        {"pattern": "example<type=Numbers><>(\\w+)", "name": "ex_$1"}]}
    out = compare(current_jmx_exporters, random_beans, config)
    zero_x, one_x = "\n".join(lines(out, "0.x", False)), "\n".join(lines(out, "1.x", False))
    assert "# TYPE ex_inferred_total untyped" in zero_x and "ex_LongAdder 5.0" in zero_x
    assert "# TYPE ex_inferred_total counter" in one_x and "ex_LongAdder" not in one_x


def test_an_include_pattern_narrower_than_a_family_lists_only_its_members(random_beans, current_jmx_exporters):
    # the sidecar lists Kafka's per-partition families whole when a pattern holds the whole family;
    # a pattern naming one topic or partition holds part of it, and jmx_exporter lists that part.
    # The same series are compared as sets: where two of a family's names share a bucket of
    # 0.20.0's set, their order can differ (also with one pattern holding a whole family)
    config = {"includeObjectNames": ["kafka.cluster:type=Partition,name=UnderReplicated,topic=orders,*",
                                     "kafka.cluster:type=Partition,name=ReplicasCount,partition=1,*",
                                     "kafka.cluster:type=Partition,name=InSyncReplicasCount,*"],
              "rules": [{"pattern": r"kafka.cluster<type=Partition, name=(\w+), topic=(.+), partition=(\d+)><>Value",
                         "name": "kafka_partition_$1", "labels": {"topic": "$2", "partition": "$3"}}]}
    for naming in ("0.x", "1.x"):
        for openmetrics in FORMATS:
            out = side_by_side(current_jmx_exporters[naming], random_beans.host_port, config, naming, openmetrics,
                               serve=not openmetrics)
            assert sorted(out.theirs.splitlines()) == sorted(out.ours.splitlines()), out.explain()
            assert out.same or naming == "0.x" and "another order" in out.problem, out.explain()
    theirs = [line for line in out.theirs.splitlines() if not line.startswith("#")]
    under = [line for line in theirs if line.startswith("kafka_partition_UnderReplicated{")]
    replicas = [line for line in theirs if line.startswith("kafka_partition_ReplicasCount{")]
    assert under and all('topic="orders"' in line for line in under)
    assert replicas and all('partition="1"' in line for line in replicas)
    assert sum(line.startswith("kafka_partition_InSyncReplicasCount{") for line in theirs) > len(replicas)


@pytest.mark.parametrize("release", ["0.20.0", "1.6.0"])
def test_a_fresh_collector_per_file_serves_what_the_standalone_serves(release, random_beans, tmp_path):
    # the property test and these examples run jmx_exporter through PerConfigExporter (one JVM,
    # a new collector per file): it must print what the standalone jmx_exporter prints
    from harness.jmx_exporter import JmxExporter
    from tests.real.per_config_exporter import PerConfigExporter
    from tests.real.side_by_side import dump, strip_self_metrics

    config = tmp_path / "config.yml"
    config.write_text(dump({"hostPort": random_beans.host_port, "excludeObjectNames": EXCLUDE_PLATFORM,
                            "rules": [{"pattern": r"kafka.cluster<type=Partition, name=(\w+), topic=(.+), partition=(\d+)><>Value",
                                       "name": "kafka_partition_$1", "labels": {"topic": "$2", "partition": "$3"}},
                                      {"pattern": ".*"}]}), encoding="utf-8")
    with JmxExporter(release, config) as standalone, PerConfigExporter(release) as fresh:
        assert fresh.serve(config) is None
        for openmetrics in FORMATS:
            theirs = strip_self_metrics(standalone.scrape(openmetrics))
            assert strip_self_metrics(fresh.scrape(openmetrics)) == theirs
            assert theirs.count("\n") > 500
