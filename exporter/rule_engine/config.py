"""A jmx_exporter YAML file -> a validated `Config`, with errors a user can act on.

The file is read as jmx_exporter reads it (YAML 1.1, like SnakeYAML; exporter/base/config_file.py),
so Strimzi's and Confluent's files load unchanged. What jmx_exporter only finds out during a
scrape (a regex that does not compile, `$3` in a rule whose pattern has two groups) is reported
here, at load time, with the file, the YAML line and the key. Keys this project does not know
become warnings. `${NAME}` is read from the environment for the JMX user name and password and
the ssl stores' passwords; an unset variable is refused here too.

The sidecar's own `sidecar:` key and jmx_exporter 1.x's `httpServer:` and `openTelemetry:` blocks are
left in `Config.file` (the file's data and lines) for exporter/config/sidecar.py,
exporter/http/server_block.py and exporter/otlp/settings.py.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile, Problems, kind
from kafka_jmx_sidecar.exporter.base.model import ObjectName
from kafka_jmx_sidecar.exporter.base.definitions import FLAG
from kafka_jmx_sidecar.exporter.rule_engine import customizers
from kafka_jmx_sidecar.exporter.rule_engine.config_keys import JMX_EXPORTER, RULE, SSL
from kafka_jmx_sidecar.exporter.rule_engine.customizers import MetricCustomizer
from kafka_jmx_sidecar.exporter.rule_engine.java_regex import compile_java_regex
from kafka_jmx_sidecar.exporter.base.java_text import java_str, parse_java_double
from kafka_jmx_sidecar.exporter.rule_engine.object_name_pattern import ALL_OBJECT_NAMES, ObjectNamePattern, object_name_key
from kafka_jmx_sidecar.exporter.rule_engine.template import Template

TYPES = {"GAUGE": "gauge", "COUNTER": "counter", "UNTYPED": "untyped", "UNKNOWN": "untyped"}

_TOP_LEVEL = set(JMX_EXPORTER.names)  # `sidecar:`, `httpServer:`, `openTelemetry:`: read elsewhere (module docstring)
# jmx_exporter keys that mean something to jmx_exporter but not here: said so, not "unknown".
_NOT_SUPPORTED = JMX_EXPORTER.ignored
_RULE_KEYS = set(RULE.names)
_FLAGS = tuple(key for key in JMX_EXPORTER.keys if key.type is FLAG)
_RULE_FLAGS = tuple(key for key in RULE.keys if key.type is FLAG)


@dataclass(frozen=True)
class Rule:
    index: int  # position in `rules:` (0-based), or -1 for the implicit default rule
    line: int | None
    pattern: str | None
    regex: re.Pattern | None
    name: Template | None = None
    value: Template | None = None
    value_factor: float = 1.0
    help: Template | None = None
    labels: tuple[tuple[Template, Template], ...] = ()  # sorted by the key as written, as jmx_exporter
    type: str = "untyped"
    attr_name_snake_case: bool = False
    cache: bool = False
    bad_value_factor: str | None = None  # a `valueFactor:` that is not a number (0.x: 1.0; 1.x: an error)


DEFAULT_RULE = Rule(index=-1, line=None, pattern=None, regex=None)


@dataclass(frozen=True)
class Store:
    """A key or trust store of `ssl:`, for the JMX connection (the javax.net.ssl properties of
    the JVM that reads the broker)."""

    filename: str = ""
    password: str = field(default="", repr=False)
    type: str = ""


@dataclass(frozen=True)
class Config:
    jmx_url: str = ""
    username: str = ""
    password: str = field(default="", repr=False)
    ssl: bool = False
    ssl_options: Mapping[str, Any] = field(default_factory=dict, repr=False)  # as written, passwords too
    trust_store: Store = Store()
    key_store: Store = Store()
    start_delay_seconds: int = 0
    lowercase_output_name: bool = False
    lowercase_output_label_names: bool = False
    include_object_names: tuple[ObjectNamePattern, ...] = (ALL_OBJECT_NAMES,)
    exclude_object_names: tuple[ObjectNamePattern, ...] = ()
    include_object_name_attributes: Mapping[tuple, frozenset] = field(default_factory=dict)
    exclude_object_name_attributes: Mapping[tuple, frozenset] = field(default_factory=dict)
    auto_exclude_object_name_attributes: bool = True
    infer_counter_type_from_name: bool = False
    metric_customizers: tuple[MetricCustomizer, ...] = ()
    rules: tuple[Rule, ...] = (DEFAULT_RULE,)
    warnings: tuple[str, ...] = ()
    # The warnings that are most likely slips (an unknown key: a typo; a repeated key): `serve`
    # loads the file as jmx_exporter does, `check-config` refuses it.
    mistakes: tuple[str, ...] = ()
    # The file the settings came from: its name, the YAML line of each key path (e.g.
    # ("sidecar", "listenAddress") -> 12) and the data of the sections read elsewhere.
    file: ConfigFile = field(default_factory=lambda: ConfigFile("<string>"), repr=False, compare=False)

    def wants_mbean(self, name: ObjectName) -> bool:
        """Included by some include pattern and by no exclude pattern (exclusion wins)."""
        return (any(p.matches(name) for p in self.include_object_names)
                and not any(p.matches(name) for p in self.exclude_object_names))

    def wants_attribute(self, name: ObjectName, attribute: str) -> bool:
        """jmx_exporter's attribute filter: excluded attributes never; when any include list
        exists, only the attributes listed for that exact ObjectName."""
        key = object_name_key(name)
        if attribute in self.exclude_object_name_attributes.get(key, ()):
            return False
        if not self.include_object_name_attributes:
            return True
        return attribute in self.include_object_name_attributes.get(key, ())


def require_target(config: Config) -> Config:
    """The sidecar reads a broker; the rule engine alone (`health`, the backfill) needs none."""
    if not config.jmx_url:
        raise ConfigError(config.file.source, None, "hostPort", "no JMX target",  # no line: the key is missing
                          "set hostPort: HOST:PORT (the broker's remote JMX port) or "
                          "jmxUrl: service:jmx:rmi:///jndi/rmi://HOST:PORT/jmxrmi")
    return config


def load_config(path: str | os.PathLike, env: Mapping[str, str] | None = None) -> Config:
    return _Parser(ConfigFile.read(path, env)).parse()


def parse_config(text: str, source: str = "<string>", env: Mapping[str, str] | None = None) -> Config:
    return _Parser(ConfigFile.parse(text, source, env)).parse()


class _Parser:
    def __init__(self, file: ConfigFile):
        self.file = file
        self.error = file.error
        self.warnings: list[str] = []
        self.mistakes: list[str] = []

    def warn(self, path: tuple, message: str) -> None:
        self.warnings.append(self.file.warning(path, message))

    def mistake(self, path: tuple, message: str) -> None:
        self.warn(path, message)
        self.mistakes.append(self.warnings[-1])

    def parse(self) -> Config:
        data = {} if self.file.data is None else self.file.data
        if not isinstance(data, dict):
            raise self.error((), f"the file holds {kind(data)}, not a mapping of settings",
                             "write settings as `key: value` lines (for example `rules:`)")
        return self._config(data)

    def _config(self, d: dict) -> Config:
        for key in d:
            if key in _NOT_SUPPORTED:
                self.warn((key,), f"ignored: {_NOT_SUPPORTED[key]}")
            elif key not in _TOP_LEVEL:
                self.mistake((key,), "unknown key, ignored (check its spelling)")
        for text in self.file.duplicate_warnings():
            self.warnings.append(text)
            self.mistakes.append(text)
        kw: dict[str, Any] = {"file": self.file}
        problems = Problems()  # the parts below are independent: one run names every error
        for step in (self._target, self._credentials, self._ssl, self._start_delay):
            problems.check(step, d, kw)
        for flag in _FLAGS:
            if flag.name in d:
                kw[flag.attr] = problems.check(self._bool, d, flag.name)
        for new, legacy, attr in (("includeObjectNames", "whitelistObjectNames", "include_object_names"),
                                  ("excludeObjectNames", "blacklistObjectNames", "exclude_object_names")):
            key = new if new in d else legacy if legacy in d else None
            if new in d and legacy in d:
                self.warn((legacy,), f"ignored because {new} is set (the new key wins)")
            if key is not None:
                kw[attr] = problems.check(self._patterns, d, key)
        for key, attr in (("includeObjectNameAttributes", "include_object_name_attributes"),
                          ("excludeObjectNameAttributes", "exclude_object_name_attributes")):
            if key in d:
                kw[attr] = problems.check(self._attribute_map, d, key)
        if "metricCustomizers" in d:
            kw["metric_customizers"] = problems.check(customizers.parse, d["metricCustomizers"], self.error)
        if "rules" in d:
            kw["rules"] = problems.check(self._rules, d["rules"])
        problems.raise_any()
        kw["warnings"], kw["mistakes"] = tuple(self.warnings), tuple(self.mistakes)
        return Config(**kw)

    def _target(self, d: dict, kw: dict) -> None:
        if "hostPort" in d and "jmxUrl" in d:
            raise self.error(("jmxUrl",), "both hostPort and jmxUrl are set", "keep only one of them")
        if "hostPort" in d:
            host_port = self._string(d, "hostPort")  # a bare host means RMI's port 1099, as in Java
            kw["jmx_url"] = f"service:jmx:rmi:///jndi/rmi://{host_port}/jmxrmi"
        elif "jmxUrl" in d:
            kw["jmx_url"] = self._string(d, "jmxUrl")
            if not kw["jmx_url"].startswith("service:jmx:"):
                raise self.error(("jmxUrl",), f"{kw['jmx_url']!r} is not a JMX service URL",
                                 "write service:jmx:rmi:///jndi/rmi://HOST:PORT/jmxrmi (or use hostPort)")

    def _credentials(self, d: dict, kw: dict) -> None:
        for key, attr in (("username", "username"), ("password", "password")):
            if key in d:
                kw[attr] = self.file.variable((key,), self._string(d, key))

    def _ssl(self, d: dict, kw: dict) -> None:
        if "ssl" not in d:
            return
        ssl = d["ssl"]
        if isinstance(ssl, bool):
            kw["ssl"] = ssl
        elif isinstance(ssl, dict):
            for key in ssl:
                if key not in SSL.by_name:
                    self.mistake(("ssl", key), "unknown key, ignored (check its spelling)")
            kw["ssl"], kw["ssl_options"] = True, ssl
            kw["trust_store"], kw["key_store"] = self._store(ssl, "trustStore"), self._store(ssl, "keyStore")
        else:
            raise self.error(("ssl",), f"must be true/false or a mapping, not {kind(ssl)}",
                             "write `ssl: true` or a map with keyStore/trustStore/protocols/ciphers")

    def _start_delay(self, d: dict, kw: dict) -> None:
        if "startDelaySeconds" in d:
            delay = d["startDelaySeconds"]
            if isinstance(delay, bool) or not isinstance(delay, int):
                raise self.error(("startDelaySeconds",), f"{delay!r} is not a whole number of seconds",
                                 "write a number such as 120")
            kw["start_delay_seconds"] = max(delay, 0)  # jmx_exporter takes a negative delay as none

    # --- typed getters
    def _string(self, d: dict, key: str, path: tuple = ()) -> str:
        v = d[key]
        if isinstance(v, (dict, list)) or v is None:
            raise self.error(path + (key,), f"must be a text value, not {kind(v)}", "write a single value")
        return java_str(v)

    def _bool(self, d: dict, key: str, path: tuple = ()) -> bool:
        v = d[key]
        if not isinstance(v, bool):
            raise self.error(path + (key,), f"must be true or false, not {v!r}", "write true or false")
        return v

    def _text(self, d: dict, key: str, path: tuple = ()) -> str:
        """An optional text value: "" when it is absent or empty."""
        return "" if d.get(key) is None else self._string(d, key, path)

    def _password(self, d: dict, key: str, path: tuple) -> str:
        """A store's password, "" when none is given; `${NAME}` reads environment variable NAME."""
        return self.file.variable(path + (key,), self._text(d, key, path))

    def _store(self, ssl: dict, key: str) -> Store:
        """`keyStore`/`trustStore` as `{filename, password, type}` (the spelling of jmx_exporter's
        httpServer block) or as a path, with `keyStorePassword`/`trustStorePassword` beside it."""
        value = ssl.get(key)
        if isinstance(value, dict):
            path = ("ssl", key)
            return Store(self._text(value, "filename", path), self._password(value, "password", path),
                         self._text(value, "type", path))
        if value:
            return Store(self._string(ssl, key, ("ssl",)), self._password(ssl, key + "Password", ("ssl",)))
        return Store()

    def _patterns(self, d: dict, key: str) -> tuple[ObjectNamePattern, ...]:
        items = d[key]
        if items is None:
            return ()
        if not isinstance(items, list):
            raise self.error((key,), f"must be a list of ObjectName patterns, not {kind(items)}",
                             "write one `- \"domain:key=value,*\"` line per pattern")
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise self.error((key, i), f"{item!r} is not an ObjectName pattern", 'quote it: - "kafka.server:*"')
            try:
                out.append(ObjectNamePattern.parse(item))
            except ValueError as e:
                raise self.error((key, i), f"invalid ObjectName pattern: {e}",
                                 "write domain:key=value,... (wildcards * and ?, a lone * for any other keys)") from e
        return tuple(out)

    def _attribute_map(self, d: dict, key: str) -> dict[tuple, frozenset]:
        m = d[key]
        if m is None:
            return {}
        if not isinstance(m, dict):
            raise self.error((key,), f"must map ObjectNames to attribute lists, not {kind(m)}",
                             'write `"java.lang:type=Memory": [HeapMemoryUsage]`')
        out: dict[tuple, frozenset] = {}
        for name, attributes in m.items():
            try:
                object_name = ObjectName.parse(str(name))
            except ValueError as e:
                raise self.error((key, name), f"invalid ObjectName: {e}",
                                 "write an exact ObjectName, without wildcards") from e
            if not isinstance(attributes, list) or not all(isinstance(a, str) for a in attributes):
                raise self.error((key, name), "must be a list of attribute names", "write [Attr1, Attr2]")
            k = object_name_key(object_name)
            out[k] = out.get(k, frozenset()) | frozenset(attributes)
        return out

    # --- rules
    def _rules(self, rules: Any) -> tuple[Rule, ...]:
        if rules is None:
            return (DEFAULT_RULE,)
        if not isinstance(rules, list):
            raise self.error(("rules",), f"must be a list of rules, not {kind(rules)}",
                             "write each rule as a `- pattern: ...` item")
        problems = Problems()  # each rule on its own: a file's every broken rule in one run
        parsed = tuple(problems.check(self._rule, i, r) for i, r in enumerate(rules))
        problems.raise_any()
        return parsed

    def _rule(self, i: int, r: Any) -> Rule:
        path = ("rules", i)
        if not isinstance(r, dict):
            raise self.error(path, f"a rule must be a mapping, not {kind(r)}",
                             "write `- pattern: ...` with name/labels/type on the following lines")
        for key in r:
            if key not in _RULE_KEYS:
                self.mistake(path + (key,), "unknown rule key, ignored (check its spelling)")
        pattern, regex = self._rule_pattern(r, path)
        kw: dict[str, Any] = {"index": i, "line": self.file.line(path), "pattern": pattern, "regex": regex}
        if "name" in r:
            kw["name"] = self._template(self._string(r, "name", path), regex, path + ("name",))
        if "help" in r:
            kw["help"] = self._template(self._string(r, "help", path), regex, path + ("help",))
        if "value" in r:
            text = java_str(r["value"])
            if text:  # an empty value means "no value", as in jmx_exporter
                kw["value"] = self._template(text, regex, path + ("value",))
        if "valueFactor" in r:
            factor = parse_java_double(java_str(r["valueFactor"]))
            if factor is None:
                self.warn(path + ("valueFactor",),
                          f"{r['valueFactor']!r} is not a number; using 1.0 as jmx_exporter 0.x does")
                kw["bad_value_factor"] = java_str(r["valueFactor"])  # jmx_exporter 1.x refuses the file
            else:
                kw["value_factor"] = factor
        if "type" in r:
            t = r["type"]
            if not isinstance(t, str) or t not in TYPES:
                hint = f" (write {t.upper()})" if isinstance(t, str) and t.upper() in TYPES else ""
                raise self.error(path + ("type",), f"{t!r} is not a metric type{hint}", "use GAUGE, COUNTER or UNTYPED")
            kw["type"] = TYPES[t]
        for flag in _RULE_FLAGS:
            if flag.name in r:
                kw[flag.attr] = self._bool(r, flag.name, path)
        if "labels" in r:
            kw["labels"] = self._rule_labels(r["labels"], regex, path)
        return Rule(**kw)

    def _rule_pattern(self, r: dict, path: tuple) -> tuple[str | None, re.Pattern | None]:
        """A rule's pattern and its compiled regex (None, None without one), after checking that
        the keys needing a pattern or a name have them."""
        regex = None
        pattern = None
        if "pattern" in r:
            pattern = self._string(r, "pattern", path)
            try:
                regex = compile_java_regex(pattern)
            except re.error as e:
                raise self.error(path + ("pattern",), f"invalid regex: {e.msg}"
                                 + (f" at position {e.pos}" if e.pos is not None else ""), "fix the pattern") from e
        if ("help" in r or "labels" in r) and "name" not in r:
            key = "help" if "help" in r else "labels"
            raise self.error(path + (key,), f"{key} is set but name is not", f"add a name to the rule or remove {key}")
        if "name" in r and regex is None:
            raise self.error(path + ("name",), "name is set but pattern is not", "add a pattern to the rule")
        if "value" in r and regex is None:
            raise self.error(path + ("value",), "value is set but pattern is not", "add a pattern to the rule")
        return pattern, regex

    def _template(self, text: str, regex: re.Pattern | None, where: tuple) -> Template:
        try:
            return Template(text, regex)
        except ValueError as e:
            raise self.error(where, str(e),
                             "fix the $ reference (groups are numbered from 1 in the order of their '(')") from e

    def _rule_labels(self, labels: Any, regex: re.Pattern | None, path: tuple) -> tuple:
        """A rule's `labels:` as (name, value) templates, sorted by name as jmx_exporter does."""
        if labels is None:
            labels = {}
        if not isinstance(labels, dict):
            raise self.error(path + ("labels",), f"must be a mapping of label name to value, not {kind(labels)}",
                             'write `labels:` then lines like `topic: "$1"`')
        pairs = []
        for key in sorted(labels, key=java_str):
            value = labels[key]
            where = path + ("labels", key)
            if value is None or isinstance(value, (dict, list)):
                raise self.error(where, f"label value must be text, not {kind(value)}",
                                 'write a value such as "$1"')
            pairs.append((self._template(java_str(key), regex, where), self._template(java_str(value), regex, where)))
        return tuple(pairs)

