import math
import re

import pytest

from kafka_jmx_sidecar.exporter.base.model import ObjectName
from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.rule_engine import ObjectNamePattern, Template, load_config, parse_config
from kafka_jmx_sidecar.exporter.rule_engine.java_regex import compile_java_regex, java_regex_to_python
from kafka_jmx_sidecar.exporter.base.java_text import parse_java_double

from .refdump import RULES


def error_of(text: str, source: str = "rules.yml", env=None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(text, source=source, env=env or {})
    return info.value


# --- the shipped rule files ----------------------------------------------------------------------

def test_strimzi_rules_load_unchanged():
    config = load_config(RULES / "strimzi-kafka-metrics.yml")
    assert config.warnings == ()
    assert config.lowercase_output_name is True
    assert len(config.rules) == 29
    first = config.rules[0]
    assert first.pattern == "kafka.server<type=(.+), name=(.+), clientId=(.+), topic=(.+), partition=(.*)><>Value"
    assert first.name.text == "kafka_server_$1_$2"
    assert first.type == "gauge"
    # labels sorted by their key as written, as jmx_exporter's TreeMap does
    assert [(k.text, v.text) for k, v in first.labels] == [("clientId", "$3"), ("partition", "$5"), ("topic", "$4")]
    raft_state = config.rules[24]
    assert raft_state.value.text == "1" and raft_state.type == "untyped"
    assert config.rules[0].line == 5


def test_confluent_rules_load_unchanged():
    config = load_config(RULES / "confluent-kafka-broker.yml")
    assert config.warnings == ()
    assert config.start_delay_seconds == 120
    assert config.lowercase_output_name and config.lowercase_output_label_names
    assert len(config.rules) == 46
    assert [p.text for p in config.exclude_object_names][:2] == ["kafka.consumer:type=*,id=*", "kafka.consumer:type=*,client-id=*"]
    assert config.rules[0].cache is True
    assert config.rules[41].value.text == "$4"
    # '$10' with 11 groups is group 10; label keys sort as text, so "$10" comes before "$4"
    ten = config.rules[6]
    assert [(k.parts, v.parts) for k, v in ten.labels] == [((10,), (11,)), ((4,), (5,)), ((6,), (7,)), ((8,), (9,))]
    assert not config.wants_mbean(ObjectName.parse("kafka.admin.client:type=app-info,client-id=x"))
    assert config.wants_mbean(ObjectName.parse("kafka.server:type=ReplicaManager,name=LeaderCount"))


# --- top-level keys ------------------------------------------------------------------------

def test_empty_file_means_one_default_rule():
    config = parse_config("")
    assert len(config.rules) == 1 and config.rules[0].pattern is None and config.rules[0].name is None
    assert config.jmx_url == "" and config.warnings == () and config.file.data is None
    assert config.auto_exclude_object_name_attributes is True


def test_host_port_builds_the_url():
    assert parse_config("hostPort: broker-0:9999").jmx_url == "service:jmx:rmi:///jndi/rmi://broker-0:9999/jmxrmi"
    assert parse_config("hostPort: broker-0").jmx_url == "service:jmx:rmi:///jndi/rmi://broker-0/jmxrmi"
    assert parse_config("jmxUrl: service:jmx:rmi:///jndi/rmi://h:1/jmxrmi").jmx_url == "service:jmx:rmi:///jndi/rmi://h:1/jmxrmi"


def test_host_port_and_jmx_url_exclude_each_other():
    e = error_of("hostPort: a:1\njmxUrl: service:jmx:rmi:///jndi/rmi://a:1/jmxrmi\n")
    assert (e.source, e.line, e.key) == ("rules.yml", 2, "jmxUrl")
    assert "keep only one" in str(e)


def test_credentials_from_the_environment():
    config = parse_config("username: ${JMX_USER}\npassword: ${JMX_PASS}\n", env={"JMX_USER": "u", "JMX_PASS": "p w"})
    assert (config.username, config.password) == ("u", "p w")
    # only a value that is exactly ${NAME} is looked up
    assert parse_config("password: x${JMX_PASS}", env={"JMX_PASS": "p"}).password == "x${JMX_PASS}"
    e = error_of("username: admin\npassword: ${MISSING}\n")
    assert (e.line, e.key) == (2, "password") and "MISSING is not set" in str(e)
    assert "p w" not in repr(config)


def test_store_passwords_from_the_environment():
    config = parse_config("ssl:\n  trustStore:\n    filename: /t.jks\n    password: ${TRUST_PASS}\n    type: JKS\n"
                          "  keyStore: /k.p12\n  keyStorePassword: ${KEY_PASS}\n",
                          env={"TRUST_PASS": "t s", "KEY_PASS": "k"})
    assert (config.trust_store.filename, config.trust_store.password, config.trust_store.type) == ("/t.jks", "t s", "JKS")
    assert (config.key_store.filename, config.key_store.password, config.key_store.type) == ("/k.p12", "k", "")
    assert "t s" not in repr(config)
    assert parse_config("ssl:\n  trustStore: {filename: /t.jks}\n").trust_store.password == ""  # none given
    assert parse_config("ssl:\n  trustStore: {filename: /t.jks, password: 'x${P}'}\n").trust_store.password == "x${P}"


@pytest.mark.parametrize("text, line, key", [
    ("ssl:\n  trustStore:\n    filename: /t.jks\n    password: ${UNSET_STORE_PASS}\n", 4, "ssl.trustStore.password"),
    ("ssl:\n  keyStore: {filename: /k.p12, password: '${UNSET_STORE_PASS}'}\n", 2, "ssl.keyStore.password"),
    ("ssl:\n  trustStore: /t.jks\n  trustStorePassword: ${UNSET_STORE_PASS}\n", 3, "ssl.trustStorePassword"),
])
def test_an_unset_store_password_variable_is_refused_at_load(text, line, key):
    e = error_of("hostPort: h:1\n" + text)
    assert (e.source, e.line, e.key) == ("rules.yml", line + 1, key)
    assert str(e) == (f"rules.yml:{line + 1}: {key}: environment variable UNSET_STORE_PASS is not set; "
                      "export UNSET_STORE_PASS in the sidecar's environment or write the value itself")


def test_check_config_names_the_unset_store_password_variable(tmp_path, monkeypatch):
    from io import StringIO

    from kafka_jmx_sidecar.exporter.commands.serve import check_config

    monkeypatch.delenv("UNSET_STORE_PASS", raising=False)
    path = tmp_path / "exporter.yml"
    path.write_text("hostPort: h:1\nssl:\n  trustStore:\n    filename: /t.jks\n    password: ${UNSET_STORE_PASS}\n")
    out, err = StringIO(), StringIO()
    assert check_config(str(path), out, err) == 2
    assert err.getvalue().startswith(f"{path}:5: ssl.trustStore.password: environment variable UNSET_STORE_PASS "
                                     "is not set")
    assert out.getvalue() == ""


def test_ssl_bool_or_map():
    assert parse_config("ssl: true").ssl is True
    config = parse_config("ssl:\n  trustStore:\n    filename: /t.jks\n  protocols: TLSv1.3\n")
    assert config.ssl is True and config.ssl_options["trustStore"] == {"filename": "/t.jks"}
    assert error_of("ssl: maybe").key == "ssl"


def test_flags_and_delay():
    config = parse_config("lowercaseOutputName: true\nlowercaseOutputLabelNames: yes\nstartDelaySeconds: 5\n"
                          "inferCounterTypeFromName: true\nautoExcludeObjectNameAttributes: false\n")
    assert config.lowercase_output_name and config.lowercase_output_label_names  # YAML 1.1: yes is true
    assert config.start_delay_seconds == 5 and config.infer_counter_type_from_name
    assert config.auto_exclude_object_name_attributes is False
    assert error_of("startDelaySeconds: soon").key == "startDelaySeconds"
    assert parse_config("startDelaySeconds: -5").start_delay_seconds == 0
    assert error_of("lowercaseOutputName: 1").key == "lowercaseOutputName"


def test_include_exclude_and_legacy_spellings():
    config = parse_config('whitelistObjectNames: ["kafka.server:*"]\nblacklistObjectNames: ["kafka.server:type=app-info,*"]\n')
    assert config.wants_mbean(ObjectName.parse("kafka.server:type=ReplicaManager,name=X"))
    assert not config.wants_mbean(ObjectName.parse("kafka.server:type=app-info,id=1"))  # exclusion wins
    assert not config.wants_mbean(ObjectName.parse("kafka.log:type=Log,name=Size"))
    # the new key wins when both are present, with a warning about the legacy one
    config = parse_config('includeObjectNames: ["kafka.log:*"]\nwhitelistObjectNames: ["kafka.server:*"]\n')
    assert [p.text for p in config.include_object_names] == ["kafka.log:*"]
    assert config.warnings == ("<string>:2: whitelistObjectNames: ignored because includeObjectNames is set (the new key wins)",)
    e = error_of('excludeObjectNames:\n  - "kafka.server"\n')
    assert (e.line, e.key) == (2, "excludeObjectNames[0]") and "invalid ObjectName pattern" in str(e)


def test_object_name_attribute_filters():
    config = parse_config('excludeObjectNameAttributes:\n  "java.lang:type=OperatingSystem": [ProcessCpuTime]\n')
    os_bean = ObjectName.parse("java.lang:type=OperatingSystem")
    assert not config.wants_attribute(os_bean, "ProcessCpuTime")
    assert config.wants_attribute(os_bean, "CpuLoad")
    config = parse_config('includeObjectNameAttributes:\n  "kafka.server:type=ReplicaManager,name=X": [Value]\n')
    # key order does not matter for ObjectName equality
    assert config.wants_attribute(ObjectName.parse("kafka.server:name=X,type=ReplicaManager"), "Value")
    assert not config.wants_attribute(ObjectName.parse("kafka.server:name=X,type=ReplicaManager"), "Count")
    # with an include list, MBeans not listed give nothing
    assert not config.wants_attribute(os_bean, "CpuLoad")


def test_sidecar_section_is_left_to_its_parser_and_unknown_keys_warn():
    config = parse_config("sidecar:\n  listen: 0.0.0.0:9404\n  archive: {dir: /data}\nlowercaseOutputNam: true\nhttpServer: {}\n",
                          source="cfg.yml")
    assert config.file.data["sidecar"] == {"listen": "0.0.0.0:9404", "archive": {"dir": "/data"}}
    assert config.warnings == (  # sidecar and httpServer are read by exporter/config and exporter/http
        "cfg.yml:4: lowercaseOutputNam: unknown key, ignored (check its spelling)",
    )


def test_unknown_rule_key_warns():
    config = parse_config("rules:\n- pattern: a\n  nmae: x\n")
    assert config.warnings == ("<string>:3: rules[0].nmae: unknown rule key, ignored (check its spelling)",)


# --- rules ---------------------------------------------------------------------------------

def test_rule_fields():
    config = parse_config("""
rules:
  - pattern: 'kafka.server<type=(.+), name=(.+)><>Value'
    name: kafka_server_$1_$2
    help: "Value of $2"
    type: COUNTER
    valueFactor: 0.001
    attrNameSnakeCase: true
    cache: true
    labels:
      b: "$2"
      a: "x"
  - pattern: x
    value: 1
""")
    rule, second = config.rules
    assert (rule.index, rule.line, rule.type, rule.value_factor, rule.attr_name_snake_case, rule.cache) == (0, 3, "counter", 0.001, True, True)
    assert rule.help.text == "Value of $2"
    assert [k.text for k, _ in rule.labels] == ["a", "b"]
    assert second.value.text == "1" and second.type == "untyped" and second.value_factor == 1.0


def test_invalid_yaml_names_the_line():
    e = error_of("rules:\n  - pattern: [unclosed\n    name: x\n")
    assert e.source == "rules.yml" and e.line == 3
    assert str(e).startswith("rules.yml:3: invalid YAML:")


def test_invalid_regex():
    e = error_of("lowercaseOutputName: true\nrules:\n  - pattern: 'kafka.(\\w+)<type=(.+))><>Value'\n    name: x\n")
    assert (e.line, e.key) == (3, "rules[0].pattern")
    assert str(e) == "rules.yml:3: rules[0].pattern: invalid regex: unbalanced parenthesis at position 21; fix the pattern"


def test_template_referring_to_a_missing_group():
    e = error_of("rules:\n  - pattern: 'a(b)(c)'\n    name: x_$3\n")
    assert (e.line, e.key) == (3, "rules[0].name")
    assert "'x_$3' refers to group 3 but the pattern has 2 groups" in str(e)
    e = error_of("rules:\n  - pattern: 'a(b)'\n    name: x\n    labels:\n      l: '${nope}'\n")
    assert (e.line, e.key) == (5, "rules[0].labels.l") and "no such named group" in str(e)
    e = error_of("rules:\n  - pattern: 'a(b)'\n    name: x\n    help: 'costs 5$'\n")
    assert e.key == "rules[0].help" and "ends with '$'" in str(e)


def test_help_or_labels_without_name():
    e = error_of("rules:\n  - pattern: a\n    help: something\n")
    assert (e.line, e.key) == (3, "rules[0].help")
    assert str(e) == "rules.yml:3: rules[0].help: help is set but name is not; add a name to the rule or remove help"
    e = error_of("rules:\n  - pattern: a\n  - pattern: b\n    labels: {x: y}\n")
    assert (e.line, e.key) == (4, "rules[1].labels")


def test_name_without_pattern():
    e = error_of("rules:\n  - name: foo\n")
    assert (e.line, e.key) == (2, "rules[0].name") and "add a pattern" in str(e)


def test_bad_type():
    e = error_of("rules:\n  - pattern: a\n    name: b\n    type: gauge\n")
    assert (e.line, e.key) == (4, "rules[0].type") and "(write GAUGE)" in str(e)
    assert "use GAUGE, COUNTER or UNTYPED" in str(error_of("rules:\n  - pattern: a\n    name: b\n    type: SUMMARY\n"))


def test_non_numeric_value_factor_warns_and_defaults():
    config = parse_config("rules:\n  - pattern: a\n    valueFactor: lots\n")
    assert config.rules[0].value_factor == 1.0
    assert "valueFactor" in config.warnings[0]


def test_rules_must_be_a_list_of_mappings():
    assert error_of("rules: x").key == "rules"
    assert error_of("rules:\n  - just text\n").key == "rules[0]"


def test_unreadable_file(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "missing.yml")
    assert "cannot read the file" in str(info.value)
    path = tmp_path / "r.yml"
    path.write_text("rules:\n  - pattern: '('\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}:2: rules[0].pattern: invalid regex")


def test_yaml_anchors_and_merge_keys_work():
    config = parse_config("""
base: &base
  type: GAUGE
  name: x_$1
rules:
  - <<: *base
    pattern: 'a(b)'
""")
    assert config.rules[0].type == "gauge" and config.rules[0].name.text == "x_$1"


# --- Java regex and replacement dialects ---------------------------------------------------

@pytest.mark.parametrize("java, python", [
    (r"(?<name>\w+)", r"(?P<name>\w+)"),
    (r"(?<=a)b(?<!c)", r"(?<=a)b(?<!c)"),
    (r"\Qa.b\E+", r"a\.b+"),
    (r"x\z", r"x\Z"),
    (r"\p{Alpha}+[\p{Digit}_]", r"[a-zA-Z]+[0-9_]"),
    (r"\P{Digit}", r"[^0-9]"),
    (r"[(?<x>]", r"[(?<x>]"),  # inside a class nothing is a group
    (r"[]a]", r"[]a]"),
    # Java's inline flags last to the end of the enclosing group, across '|'
    (r"(?i)VALUE", r"(?i:VALUE)"),
    (r"a(?i)b|c", r"a(?i:b)|(?i:c)"),
    (r"(x(?i)y|z)w", r"(x(?i:y)|(?i:z))w"),
    (r"(?iu)x(?-i)y", r"(?i:x(?-i:y))"),
])
def test_java_regex_translation(java, python):
    assert java_regex_to_python(java) == python


def test_inline_flags_mean_what_they_mean_in_java():
    rx = compile_java_regex(r"a(?i)b|c")
    assert rx.fullmatch("aB") and rx.fullmatch("C") and not rx.fullmatch("Ab")


def test_java_regex_is_ascii_and_full_match():
    rx = compile_java_regex(r"(\w+)Rate")
    m = rx.fullmatch("kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec><>OneMinuteRate: 1.5")
    assert m.group(1) == "e"  # the right-most possible match, as `^.*(?:...).*$` does in Java
    assert compile_java_regex(r"\w").fullmatch("é") is None


@pytest.mark.parametrize("template, groups, expected", [
    ("$1_$2", 2, "A_B"),
    ("$10", 2, "A0"),  # group 1 then a literal 0: there is no group 10
    ("$10", 10, "J"),
    ("$0", 2, "whole"),
    ("${first}", 2, "A"),
    ("\\$1", 2, "$1"),
    ("a\\\\b", 2, "a\\b"),
    ("plain", 2, "plain"),
])
def test_template_follows_java_replacement_rules(template, groups, expected):
    names = ["first"] + [f"g{i}" for i in range(2, groups + 1)]
    pattern = "".join(f"(?P<{n}>{chr(ord('A') + i)})" for i, n in enumerate(names))
    rx = re.compile(pattern)
    match = rx.fullmatch("".join(chr(ord("A") + i) for i in range(groups)))
    t = Template(template, rx)
    value = t.expand(match)
    if template == "$0":
        assert value == match.group(0)
    else:
        assert value == expected


@pytest.mark.parametrize("template", ["$", "$x", "${}", "${1a}", "${a", "\\", "$3"])
def test_template_errors(template):
    with pytest.raises(ValueError):
        Template(template, re.compile("(a)(b)"))


def test_unmatched_optional_group_expands_to_nothing():
    rx = re.compile("(a)?(b)")
    assert Template("[$1|$2]", rx).expand(rx.fullmatch("b")) == "[|b]"


@pytest.mark.parametrize("text, value", [
    ("1", 1.0), ("-1.5", -1.5), ("1e3", 1000.0), ("1.0E9", 1e9), (" 2 ", 2.0), ("3f", 3.0), ("4D", 4.0),
    (".5", 0.5), ("5.", 5.0), ("0x1p3", 8.0), ("-Infinity", -math.inf), ("+Infinity", math.inf),
])
def test_parse_java_double(text, value):
    assert parse_java_double(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1_000", "inf", "nan", "1e", "true", "1.2.3", "<cache>"])
def test_parse_java_double_rejects(text):
    assert parse_java_double(text) is None


def test_parse_java_double_nan():
    assert math.isnan(parse_java_double("NaN"))


# --- ObjectName patterns -------------------------------------------------------------------

@pytest.mark.parametrize("pattern, name, matches", [
    ("*:*", "kafka.server:type=X", True),
    ("kafka.*:*", "kafka.server:type=X", True),
    ("kafka.*:*", "java.lang:type=Memory", False),
    ("kafka.server:type=ReplicaManager,*", "kafka.server:type=ReplicaManager,name=X", True),
    ("kafka.server:type=ReplicaManager", "kafka.server:type=ReplicaManager,name=X", False),
    ("kafka.server:name=X,type=ReplicaManager", "kafka.server:type=ReplicaManager,name=X", True),
    ("kafka.consumer:type=*,client-id=*", "kafka.consumer:type=a,client-id=b", True),
    ("kafka.consumer:type=*,client-id=*", "kafka.consumer:type=a,client-id=b,node-id=c", False),
    ("kafka.*:type=kafka-metrics-count,*", "kafka.server:type=kafka-metrics-count", True),
    ("kafka.serve?:*", "kafka.server:type=x", True),
    ('kafka.log:logDirectory="/var/*",*', 'kafka.log:type=L,logDirectory="/var/lib"', True),
])
def test_object_name_patterns(pattern, name, matches):
    assert ObjectNamePattern.parse(pattern).matches(ObjectName.parse(name)) is matches


@pytest.mark.parametrize("pattern", ["kafka.server", "kafka.server:", "d:type", "d:=x", "d:a=1,a=2", "d:*,*", 'd:a="x'])
def test_invalid_object_name_patterns(pattern):
    with pytest.raises(ValueError):
        ObjectNamePattern.parse(pattern)


def test_the_file_lines_point_into_the_sidecar_section():
    config = parse_config("rules:\n- pattern: a\nsidecar:\n  listenAddress: 0.0.0.0:9404\n  naming: 1.x\n")
    assert config.file.line(("sidecar",)) == 3
    assert config.file.line(("sidecar", "naming")) == 5
    assert config.file.line(("sidecar", "unknown")) == 3  # the nearest parent
    assert config.file.line(("rules", 0, "pattern")) == 2


# --- metricCustomizers (jmx_exporter 1.x) -------------------------------------------------------

def test_metric_customizers_load():
    config = parse_config("metricCustomizers:\n"
                          "  - mbeanFilter: {domain: kafka.server, properties: {type: app-info}}\n"
                          "    attributesAsLabels: [Version]\n"
                          "    extraMetrics:\n"
                          "      - {name: up, value: true, description: answers}\n")
    (c,) = config.metric_customizers
    assert (c.domain, c.properties, c.attributes_as_labels) == ("kafka.server", (("type", "app-info"),), ("Version",))
    assert [(m.name, m.value, m.description) for m in c.extra_metrics] == [("up", True, "answers")]
    assert config.warnings == ()
    assert c.applies_to(ObjectName.parse("kafka.server:type=app-info,id=1"))
    assert not c.applies_to(ObjectName.parse("kafka.server:type=ReplicaManager,name=x"))


@pytest.mark.parametrize("body, line, what", [
    ("  - attributesAsLabels: [A]\n", 2, "no mbeanFilter"),
    ("  - mbeanFilter: {properties: {type: x}}\n    attributesAsLabels: [A]\n", 2, "no domain"),
    ("  - mbeanFilter: {domain: d}\n", 2, "neither attributesAsLabels nor extraMetrics"),
    ("  - mbeanFilter: {domain: d}\n    extraMetrics:\n      - {value: 1}\n", 4, "no name"),
    ("  - mbeanFilter: {domain: d}\n    extraMetrics:\n      - {name: x}\n", 4, "no value"),
])
def test_metric_customizers_are_refused_where_jmx_exporter_refuses_them(body, line, what):
    e = error_of("metricCustomizers:\n" + body)
    assert str(e).startswith(f"rules.yml:{line}: metricCustomizers[0]")
    assert what in str(e)
