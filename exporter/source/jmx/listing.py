"""What the last listing returned: the ObjectNames read whole, and the per-partition families
listed as columns (`Members`).

The names are kept three ways, aligned: as ObjectNames (their (key, value) pairs shared between
names), as their text (what read() is given, no new string per name), and as the engine's handle
on them in the JVM (a plan selects from it instead of sending names again).
"""
from __future__ import annotations

import sys
from typing import Any, Iterable, Sequence

from kafka_jmx_sidecar.exporter.source.jmx.engine import NameList
from kafka_jmx_sidecar.exporter.base.model import ObjectName


class Members:
    """The members of one family `domain:type=X,name=Y` as columns (see Members.java):
    topics, then per member a topic index, a partition number, its canonical name's hash and its
    canonical key property list's hash."""

    __slots__ = ("family", "handle", "topics", "topic", "partition", "hash", "pattern", "key_hash")

    def __init__(self, family: str, handle: Any, topics: list[str], topic, partition, hashes, patterns=None,
                 key_hashes=None):
        self.family, self.handle, self.topics = family, handle, topics
        self.topic, self.partition, self.hash = topic, partition, hashes
        self.pattern = patterns  # per member, the first include pattern matching it (None: one pattern)
        self.key_hash = key_hashes

    def __len__(self) -> int:
        return len(self.topic)

    def name(self, i: int) -> str:
        return f"{self.family},topic={self.topics[self.topic[i]]},partition={self.partition[i]}"


class Listing:
    """The names of the last listing (`names` is None before the first) and every ObjectName
    parsed since, by text."""

    def __init__(self, engine: Any):
        self._engine = engine
        self.names: list[ObjectName] | None = None
        self.strings: list[str] = []
        self.jnames: Any = None
        self._by_string: dict[str, ObjectName] = {}
        self._pairs: dict[tuple[str, str], tuple[str, str]] = {}
        self._index: dict[str, int] | None = None

    def replace(self, nl: NameList) -> dict[str, ObjectName]:
        """Make nl the listing; the names parsed for an earlier one are kept. Returns the listed
        names by text (what else is kept per name may go for the names not in it)."""
        old = self._by_string
        self._by_string = {}
        names = []
        for st in nl.strings:
            n = old.get(st)
            if n is None:
                n = self._new_name(st)
            self._by_string[st] = n
            names.append(n)
        self.names, self.strings, self.jnames, self._index = names, nl.strings, nl.jnames, None
        return self._by_string

    def parse(self, strings: Iterable[str]) -> list[ObjectName]:
        cache = self._by_string
        out = []
        for st in strings:
            n = cache.get(st)
            if n is None:
                n = cache[st] = self._new_name(st)
            out.append(n)
        return out

    def named(self, names: Sequence[ObjectName | str]) -> list[tuple[str, ObjectName]]:
        """(text, ObjectName) of each name, parsed only when it was never listed."""
        targets = []
        for n in names:
            if isinstance(n, str):
                st = n
                n = self._by_string.get(st) or ObjectName.parse(st)
            else:
                st = str(n)
            targets.append((st, n))
        return targets

    def _new_name(self, text: str) -> ObjectName:
        """ObjectName.parse, with the (key, value) pairs shared between names: 40,000 partitions
        repeat `type=Partition`, each topic and partition number many times (~950 -> ~350 bytes
        per name)."""
        n = ObjectName.parse(text)
        pairs = self._pairs
        keys = []
        for kv in n.keys:
            shared = pairs.get(kv)
            if shared is None:
                shared = pairs[kv] = (sys.intern(kv[0]), sys.intern(kv[1]))
            keys.append(shared)
        return ObjectName(sys.intern(n.domain), tuple(keys))

    def _name_index(self) -> dict[str, int]:
        if self._index is None:
            self._index = {st: i for i, st in enumerate(self.strings)}
        return self._index

    def jnames_for_listed(self, strings: list[str]) -> Any:
        """The engine's handle on some of the listed names (all of them: the listing's own)."""
        if len(strings) == len(self.strings):
            return self.jnames
        idx = self._name_index()
        return self._engine.select(self.jnames, [idx[st] for st in strings])

    def jnames_for(self, strings: list[str]) -> Any:
        """The engine's handle on any names: selected from the listing when it holds them all,
        parsed in the JVM otherwise."""
        idx = self._name_index() if self.names is not None else {}
        if all(st in idx for st in strings):
            return self._engine.select(self.jnames, [idx[st] for st in strings])
        return self._engine.parse_names(strings)
