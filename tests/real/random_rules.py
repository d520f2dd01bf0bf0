"""Random jmx_exporter configurations for the property test, from a seed and the leaves of
RandomBeans.java (`HEAD domain<k=v, ...><path>attr` lines).

    config = random_config(random.Random(seed), heads)   # a dict, dumped as YAML by the test

Patterns are cut from real leaves (so they match something), with literal parts, capture groups
of several shapes, wildcards, value-dependent tails and Java-only spellings; names, labels, HELP
and values are templates over the groups, with characters a metric name cannot hold, reserved
suffixes, empty expansions and values that do not parse. Every config excludes the JVM's own
MBeans (their values move between two reads) and never names a metric `jmx_*` (jmx_exporter's
self metrics are dropped from its output before comparing).

Left out on purpose, because jmx_exporter 1.x then fails the whole scrape (an
IllegalArgumentException from client_java's Labels) and serves what it had so far: two label
names that are equal once sanitised or lower-cased.
"""
from __future__ import annotations

import random
import re
from typing import Any

PLATFORM = ["java.lang:*", "java.nio:*", "java.util.logging:*", "jdk.management.jfr:*", "com.sun.management:*",
            "JMImplementation:*"]

_HEAD = re.compile(r"^(?P<domain>[^<]*)<(?P<keys>[^>]*)><(?P<path>[^>]*)>(?P<attr>.*)$")
_GROUPS = [r"(\w+)", r"(.+)", r"([^,]+)", r"(.*)", r"([^=,>]+)", r"(\S+)", r"(.+?)"]
_PREFIXES = ["rnd", "Rnd", "m", "x", "sub-sys", "9lead", "ns.metric", "MixedCase", "kafka"]
_SUFFIXES = ["", "", "", "_total", "_count", "_created", "_info", "_bucket", "_sum", "_seconds", "_total_total"]
_VALUES = ["1", "2.5", "-1", "1e3", "NaN", "-Infinity", "abc", " 5 ", "0x10", "1_000", "$G", "$G.5"]
_FACTORS = [0.001, 1000, -1, 2, "2", "abc", 1e-9, 0.5]


def _literal(text: str) -> str:
    """`text` as a regex literal that Java and Python read alike (ASCII punctuation escaped)."""
    return "".join("\\" + c if c.isascii() and not c.isalnum() and c != "_" else c for c in text)


def _piece(rng: random.Random, text: str) -> str:
    """A pattern for `text`: itself, a group, or a wildcard."""
    r = rng.random()
    if r < 0.45 or not text:
        return _literal(text)
    if r < 0.85:
        return rng.choice(_GROUPS)
    return rng.choice([".*", ".+", ".*?"])


def _pattern(rng: random.Random, head: str) -> tuple[str, int]:
    """A pattern cut from one leaf, and how many groups it has."""
    m = _HEAD.match(head)
    assert m, head
    domain = _piece(rng, m["domain"])
    keys = m["keys"].split(", ") if m["keys"] else []
    if keys and rng.random() < 0.3:
        key_part = _piece(rng, m["keys"])  # the whole key list at once
    else:
        parts = []
        for kv in keys:
            k, _, v = kv.partition("=")
            parts.append(_literal(k) + "=" + _piece(rng, v) if rng.random() < 0.8 else _piece(rng, kv))
        key_part = ", ".join(parts)
        if parts and rng.random() < 0.25:
            key_part = ", ".join(parts[:rng.randint(1, len(parts))]) + ".*"  # leading keys only
    path = _piece(rng, m["path"]) if m["path"] else ("" if rng.random() < 0.7 else ".*")
    attr = _piece(rng, m["attr"])
    pattern = f"{domain}<{key_part}><{path}>{attr}"
    r = rng.random()
    if r < 0.15:
        pattern += ": (.*)"  # the value as a group
    elif r < 0.2:
        pattern += r": (-?\d+)"  # only some values match
    elif r < 0.25:
        pattern += r": (?:NaN|0\.0|1\.0)"
    if rng.random() < 0.1:
        pattern = "^" + pattern
    if rng.random() < 0.05:
        pattern = "(?i)" + pattern
    return pattern, re.compile(pattern).groups


def _fill(rng: random.Random, text: str, groups: int) -> str:
    """`text` with each `$G` replaced by a reference to a random group (by nothing without groups)."""
    return re.sub(r"\$G", lambda _: f"${rng.randint(1, groups)}" if groups else "", text)


_NAMES = ["{p}_$G{s}", "{p}_$G{s}", "{p}_$G_$G", "$G{s}", "{p}_rule{i}{s}", "{p}.$G-x", "{p}__$G"]
# distinct even once sanitised and lower-cased: the i-th label's name holds i, and only `d` names
# hold a group
_LABEL_NAMES = ["l{i}", "D{i}_$G", "lbl-{i}", "{i}num", "c{i}.x"]
_LABEL_VALUES = ["$G", "$G", "const", "", "a\"b\\c", "x$Gy", "$G$G"]
_HELPS = ["Help for $G", "plain help", "with \\ backslash and\nnewline and \"quotes\"", "", "ünï 😀 $G"]


def _rule(rng: random.Random, heads: list[str], index: int) -> dict[str, Any]:
    pattern, groups = _pattern(rng, rng.choice(heads))
    rule: dict[str, Any] = {"pattern": pattern}
    if rng.random() < 0.85:
        name = rng.choice(_NAMES).format(p=rng.choice(_PREFIXES), s=rng.choice(_SUFFIXES), i=index)
        name = _fill(rng, name, groups)
        rule["name"] = "m_" + name if name.lower().startswith("jmx") else name
        labels = {}
        for i in range(rng.choice([0, 0, 1, 1, 2, 3])):
            labels[_fill(rng, rng.choice(_LABEL_NAMES).format(i=i), groups)] = _fill(rng, rng.choice(_LABEL_VALUES), groups)
        if labels:
            rule["labels"] = labels
        if rng.random() < 0.35:
            rule["help"] = _fill(rng, rng.choice(_HELPS), groups)
    if rng.random() < 0.5:
        rule["type"] = rng.choice(["GAUGE", "COUNTER", "UNTYPED"])
    if rng.random() < 0.15:
        rule["value"] = _fill(rng, rng.choice(_VALUES), groups) or "7"
    if rng.random() < 0.15:
        rule["valueFactor"] = rng.choice(_FACTORS)
    if rng.random() < 0.2:
        rule["attrNameSnakeCase"] = True
    if rng.random() < 0.08:
        rule["cache"] = True
    return rule


def _object_name(head: str) -> tuple[str, str]:
    """The ObjectName and attribute a leaf of an MBean's own attribute belongs to."""
    m = _HEAD.match(head)
    return f"{m['domain']}:{m['keys'].replace(', ', ',')}", m["attr"]


def random_config(rng: random.Random, heads: list[str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if rng.random() < 0.2:
        config["lowercaseOutputName"] = True
    if rng.random() < 0.2:
        config["lowercaseOutputLabelNames"] = True
    if rng.random() < 0.2:
        domains = sorted({_HEAD.match(h)["domain"] for h in heads})
        config["includeObjectNames"] = rng.sample(
            [f"{d}:*" for d in domains] + ["rnd*:*", "*:type=Partition,*", "kafka.*:*", "*:name=*,*"], 2)
    exclude = list(PLATFORM)
    if rng.random() < 0.2:
        exclude.append(rng.choice(["rnd.alpha:*", "kafka.cluster:type=Partition,name=UnderReplicated,*",
                                   "*:k=*,*", "Rnd-Beta:*"]))
    config["excludeObjectNames"] = exclude
    if rng.random() < 0.15:
        name, attr = _object_name(rng.choice([h for h in heads if "><>" in h]))
        config["excludeObjectNameAttributes"] = {name: [attr]}
    if rng.random() < 0.1:
        config["autoExcludeObjectNameAttributes"] = rng.random() < 0.5
    # keys only jmx_exporter 1.x knows (0.20.0 ignores them)
    if rng.random() < 0.1:
        config["inferCounterTypeFromName"] = True
    if rng.random() < 0.08:
        picked = [_object_name(h) for h in rng.sample([h for h in heads if "><>" in h], 6)]
        config["includeObjectNameAttributes"] = {}
        for name, attr in picked:
            config["includeObjectNameAttributes"].setdefault(name, []).append(attr)
    shape = rng.random()
    if shape < 0.15:
        return config  # no rules: default naming for everything
    rules = [_rule(rng, heads, i) for i in range(rng.randint(1, 8))]
    if shape < 0.35:
        rules.append({"pattern": ".*"})  # the rest with default naming
    elif shape < 0.45:
        rules.append({"pattern": r"(.*)<(.*)><(.*)>(.*)", "name": "rnd_catch_all_$1", "labels": {"keys": "$2"}})
    if rng.random() < 0.25:
        rules.insert(0, {"pattern": r"kafka.cluster<type=Partition, name=(\w+), topic=(.+), partition=(\d+)><>Value",
                         "name": "kafka_partition_$1", "labels": {"topic": "$2", "partition": "$3"},
                         **({"type": "GAUGE"} if rng.random() < 0.5 else {})})
    config["rules"] = rules
    return config
