"""Fast paths for names on the listing's clock: ObjectName.parse without its pattern when no value
is quoted, and String.hashCode for jmx_exporter's visiting order, each against its plain version."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from kafka_jmx_sidecar.exporter.base.model import ObjectName
from kafka_jmx_sidecar.exporter.rule_engine.order import java_string_hash

_KEY_VALUE = re.compile(r'([^,=:*?"]+)=("(?:[^"\\]|\\.)*"|[^,"]*)')


def parse_with_pattern(text: str) -> ObjectName:
    """ObjectName.parse as it was: the pattern only."""
    domain, sep, rest = text.partition(":")
    if not sep or not domain or not rest:
        raise ValueError("not an ObjectName")
    keys, pos = [], 0
    while pos < len(rest):
        m = _KEY_VALUE.match(rest, pos)
        if not m:
            raise ValueError("bad key property")
        keys.append((m.group(1), m.group(2)))
        pos = m.end()
        if pos < len(rest):
            if rest[pos] != ",":
                raise ValueError("expected ','")
            pos += 1
    return ObjectName(domain, tuple(keys))


def outcome(parse, text):
    try:
        return parse(text)
    except ValueError:
        return ValueError


NAME_TEXT = st.text(alphabet=st.sampled_from('ab=,:*?"\\ -1'), max_size=24)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="kafka.", min_size=0, max_size=6), NAME_TEXT)
def test_parse_matches_the_pattern_on_any_text(domain, rest):
    text = f"{domain}:{rest}"
    assert outcome(ObjectName.parse, text) == outcome(parse_with_pattern, text)


@pytest.mark.parametrize("text", [
    "kafka.cluster:type=Partition,name=UnderReplicated,topic=orders,partition=3",
    "kafka.server:type=app-info,id=1",
    'kafka.server:type=x,name="a,b=c",id=1',
    "d:k=",
    "d:k=v=w",
    "d:k=v,",
    "d:=v",
    "d:k*=v",
    "d:k",
])
def test_parse_examples(text):
    assert outcome(ObjectName.parse, text) == outcome(parse_with_pattern, text)


def java_hash_loop(text: str) -> int:
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


@pytest.mark.parametrize("text, java", [
    ("", 0), ("hello", 99162322), ("é€😀", 16752006),  # from java.lang.String.hashCode()
    ("kafka.cluster:name=UnderReplicated,partition=3,topic=orders,type=Partition", 1044139057),
])
def test_java_string_hash_is_java_s(text, java):
    assert java_string_hash(text) == java


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=400).filter(lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)))
def test_java_string_hash_matches_the_loop(text):
    assert java_string_hash(text) == java_hash_loop(text)


def test_java_string_hash_of_a_long_string():
    text = "x" * 10_000 + "😀"
    assert java_string_hash(text) == java_hash_loop(text)
