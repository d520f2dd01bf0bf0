"""Metric and label names as jmx_exporter builds them, and the two duplicate policies.

`safe_name` and `snake_case` reproduce jmx_exporter's `toSafeName`/`toSnakeAndLowerCase`
character for character. `openmetrics_base` is the 1.x naming (client_java 1.x strips reserved
suffixes; its writers put `_total` back on the series of counter families only). Names repeat across every poll, so the two
string functions memoise their results.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from kafka_jmx_sidecar.exporter.base.families import RejectedPoll
from kafka_jmx_sidecar.exporter.base.model import Sample

NAMING_MODES = ("0.x", "1.x")

# Every character outside [a-zA-Z0-9:_] becomes '_' and runs of '_' collapse: both at once is
# "every run of characters outside [a-zA-Z0-9:] becomes one '_'".
_UNSAFE_RUN = re.compile(r"[^a-zA-Z0-9:]+")
_RESERVED_SUFFIXES = ("_total", "_created", "_bucket", "_info")
OBJECTNAME_LABEL = "_objectname"

_safe_memo: dict[str, str] = {}
_snake_memo: dict[str, str] = {}
_MEMO_LIMIT = 200_000


def bean_text(domain: str, keys: Sequence[tuple[str, str]], path: Sequence[str] = ()) -> str:
    """`domain<k1=v1, k2=v2><path>`: a leaf's match string up to its attribute name; with the
    attribute appended, what 1.x's `_objectname` label holds."""
    return domain + "<" + ", ".join([k + "=" + v for k, v in keys]) + "><" + ", ".join(path) + ">"


def safe_name(name: str) -> str:
    """`test-_-test` -> `test_test`, `__test` -> `_test`, `001` -> `_001`."""
    out = _safe_memo.get(name)
    if out is None:
        out = _UNSAFE_RUN.sub("_", name)
        # Java's Character.isDigit on the first UTF-16 unit: a BMP decimal digit.
        if name and name[0] <= "\uffff" and name[0].isdecimal():
            out = "_" + out
        if len(_safe_memo) >= _MEMO_LIMIT:
            _safe_memo.clear()
        _safe_memo[name] = out
    return out


def snake_case(name: str) -> str:
    """`testTCPTest` -> `test_tcptest`: '_' before an upper-case letter that follows a character
    that is neither upper case nor '_', then everything lower case."""
    out = _snake_memo.get(name)
    if out is None:
        if not name:
            return name
        first = name[0]
        chars = [first.lower()]
        after_upper_or_underscore = first.isupper() or first == "_"
        for c in name[1:]:
            upper = c.isupper()
            if upper and not after_upper_or_underscore:
                chars.append("_")
            chars.append(c.lower())
            after_upper_or_underscore = upper or c == "_"
        out = "".join(chars)
        if len(_snake_memo) >= _MEMO_LIMIT:
            _snake_memo.clear()
        _snake_memo[name] = out
    return out


def openmetrics_base(name: str) -> str:
    """The name jmx_exporter 1.x gives a sample's family (client_java's `sanitizeMetricName`):
    reserved suffixes `_total`/`_created`/`_bucket`/`_info` stripped while one ends the name,
    and a name that is nothing but one of them loses its `_` instead (`_total` -> `total`)."""
    while True:
        if name in _RESERVED_SUFFIXES:
            return name[1:]
        for suffix in _RESERVED_SUFFIXES:
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        else:
            return name


def openmetrics_name(name: str, sample_type: str) -> str:
    """1.x naming of a series: its family's name (`openmetrics_base`), with `_total` added back
    for counters only. A counter `x_count` -> `x_count_total`; a gauge `x_total` -> `x`."""
    name = openmetrics_base(name)
    return name + "_total" if sample_type == "counter" else name


def java_order(text: str) -> bytes:
    """A sort key giving Java's `String.compareTo` order (UTF-16 code units; Python compares code
    points, which differs once a character beyond U+FFFF meets one from U+E000 to U+FFFF)."""
    return text.encode("utf-16-be")


def labels_order(labels: Sequence[tuple[str, str]]) -> tuple:
    """client_java 1.x's `Labels.compareTo` as a sort key: the label names first, then the values,
    each list compared item by item (a list that is a prefix of the other comes first)."""
    return tuple([java_order(k) for k, _ in labels]), tuple([java_order(v) for _, v in labels])


def series_key(name: str, labels: Sequence[tuple[str, str]]) -> str:
    """One string per (name, label names and values in order): what 0.x de-duplicates on.

    jmx_exporter compares name, label-name list and label-value list, so order matters. A string
    (whose hash Python caches) is cheaper to look up every poll than a tuple of tuples.
    """
    return name + "\x00" + "\x00".join(k + "\x01" + v for k, v in labels)


def keep_first(samples: Iterable[Sample]) -> list[Sample]:
    """0.x duplicates: the first sample with a given name and label set wins."""
    return first_of_each((series_key(s.name, s.labels), s) for s in samples)[0]


def first_of_each(keyed: Iterable[tuple[str, Sample]]) -> tuple[list[Sample], int]:
    """keep_first over (series key, sample) pairs whose keys are known: the kept samples, and
    how many duplicates were dropped."""
    seen: set[str] = set()
    add = seen.add
    out = []
    append = out.append
    dropped = 0
    for key, s in keyed:
        if key in seen:
            dropped += 1
        else:
            add(key)
            append(s)
    return out, dropped


def add_objectname_on_collisions(entries: Sequence[tuple[Sample, str]]) -> list[Sample]:
    """1.x duplicates: every sample of a name whose label sets collide gets an `_objectname` label.

    `entries` pairs each sample with its ObjectName text (the match string up to the last ':',
    as jmx_exporter 1.x takes it). Labels are sorted by name, as client_java 1.x keeps them.
    A label set that still collides after that (two attributes alike once snake-cased, say) is
    refused as client_java refuses it, and jmx_exporter 1.x then fails the scrape (HTTP 500).
    """
    by_name: dict[str, list[tuple[Sample, str]]] = {}
    for entry in entries:
        by_name.setdefault(entry[0].name, []).append(entry)
    out = []
    for group in by_name.values():
        label_sets = {s.labels for s, _ in group}
        if len(label_sets) == len(group):
            out.extend(s for s, _ in group)
            continue
        seen = set()
        for s, objectname in group:
            labels = tuple(sorted(s.labels + ((OBJECTNAME_LABEL, objectname),)))
            if labels in seen:
                raise RejectedPoll(f"{s.name}{dict(labels)} twice: jmx_exporter 1.x fails such a scrape "
                                   f"(HTTP 500, DuplicateLabelsException)")
            seen.add(labels)
            out.append(Sample(s.name, labels, s.value, s.type, s.help, s.timestamp_ms))
    return out
