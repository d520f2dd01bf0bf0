"""JMX ObjectName patterns (`includeObjectNames`, `excludeObjectNames`) and ObjectName equality
as JMX defines it."""
from __future__ import annotations

import re
from dataclasses import dataclass

from kafka_jmx_sidecar.exporter.base.model import ObjectName


def _wildcard(text: str) -> re.Pattern:
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in text), re.DOTALL)


@dataclass(frozen=True)
class ObjectNamePattern:
    """A JMX ObjectName pattern such as `kafka.*:*` or `kafka.server:type=*,name=BytesInPerSec,*`."""

    text: str
    domain: re.Pattern
    keys: tuple[tuple[str, re.Pattern | str], ...]
    any_other_keys: bool

    @classmethod
    def parse(cls, text: str) -> "ObjectNamePattern":
        domain, sep, rest = text.partition(":")
        if not sep:
            raise ValueError(f"{text!r} has no ':' (expected domain:key=value,... or domain:*)")
        if "\n" in domain:
            raise ValueError(f"{text!r}: the domain contains a newline")
        keys: list[tuple[str, re.Pattern | str]] = []
        any_other = False
        for part in _split_properties(rest):
            if part == "*":
                if any_other:
                    raise ValueError(f"{text!r}: '*' appears twice in the key list")
                any_other = True
                continue
            key, eq, value = part.partition("=")
            if not eq or not key or any(ch in key for ch in ":,=*?\"\n"):
                raise ValueError(f"{text!r}: {part!r} is not key=value")
            if value == "":
                raise ValueError(f"{text!r}: key {key!r} has an empty value")
            if any(k == key for k, _ in keys):
                raise ValueError(f"{text!r}: key {key!r} appears twice")
            keys.append((key, _wildcard(value) if ("*" in value or "?" in value) else value))
        if not keys and not any_other:
            raise ValueError(f"{text!r} has no key properties (use {domain}:* for every MBean of the domain)")
        return cls(text, _wildcard(domain or "*"), tuple(keys), any_other)

    def matches(self, name: ObjectName) -> bool:
        if not self.domain.fullmatch(name.domain):
            return False
        props = dict(name.keys)
        if not self.any_other_keys and len(props) != len(self.keys):
            return False
        for key, want in self.keys:
            have = props.get(key)
            if have is None:
                return False
            if type(want) is str:
                if have != want:
                    return False
            elif not want.fullmatch(have):
                return False
        return True


def _split_properties(rest: str) -> list[str]:
    """Split on commas that are not inside a quoted value."""
    parts, start, quoted, i = [], 0, False, 0
    while i < len(rest):
        c = rest[i]
        if quoted and c == "\\":
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "," and not quoted:
            parts.append(rest[start:i])
            start = i + 1
        i += 1
    if quoted:
        raise ValueError(f"{rest!r}: a quoted value is not closed")
    parts.append(rest[start:])
    return parts


def object_name_key(name: ObjectName) -> tuple[str, frozenset]:
    """ObjectName equality as JMX defines it: the order of key properties does not matter."""
    return name.domain, frozenset(name.keys)


ALL_OBJECT_NAMES = ObjectNamePattern.parse("*:*")
