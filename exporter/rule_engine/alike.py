"""Table members no rule can tell apart: each class is searched once, by one member of it.

A table member's match string is its table's fixed text with the member's topic and partition in
it. A regex (without back-references or case folding) looks at a character only through the
tests its pattern makes of it: equal to a literal, in a class (`\\w`, `[0-9]`, `.`), a word
character (for `\\b`). Two characters that pass the same tests of every rule are the same to
every rule, and so are two texts of one length made of such characters at each place: each rule
matches both or neither, with the same group spans. So members whose topics and partitions are
alike that way (most partition numbers, and topics named to one scheme, `orders-0001`, ...) are
matched alike by every rule: the regexes run for one member of each class, not for each member.

Whether the outcome of that match stands for the others (their topic and partition in the same
slots) is the member tables' to decide (`member_tables`).
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from kafka_jmx_sidecar.exporter.base.model import BeanTable
from kafka_jmx_sidecar.exporter.rule_engine.value_blindness import CATEGORIES, set_matches, sre_parse

_WORD = CATEGORIES["CATEGORY_WORD"]
_FOLDING = re.IGNORECASE | re.LOCALE
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}
# position tests: the line ones look for "\n" (its own class), the word ones at word characters
_AT = {"AT_BEGINNING", "AT_BEGINNING_LINE", "AT_BEGINNING_STRING", "AT_END", "AT_END_LINE",
       "AT_END_STRING", "AT_BOUNDARY", "AT_NON_BOUNDARY"}


class _Unknown(Exception):
    """A regex construct the argument above does not cover: every member is searched."""


def _tests(data, literals: set[str], sets: list[tuple]) -> None:
    """Collect the character tests of a parse tree: the literals, and the classes (as their items)."""
    for op, av in data:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL"):
            literals.add(chr(av))
        elif name == "IN":
            for item_op, item in av:
                if str(item_op) not in ("LITERAL", "RANGE", "CATEGORY", "NEGATE") or (
                        str(item_op) == "CATEGORY" and str(item) not in CATEGORIES):
                    raise _Unknown(name)
            sets.append(tuple(av))
        elif name == "ANY" or name == "AT" and str(av) in _AT:
            continue  # "\n" and the word characters are told apart always
        elif name == "SUBPATTERN":
            if av[1] & _FOLDING:
                raise _Unknown("case folding")
            _tests(av[3], literals, sets)
        elif name in _REPEATS:
            _tests(av[2], literals, sets)
        elif name == "BRANCH":
            for branch in av[1]:
                _tests(branch, literals, sets)
        elif name in ("ASSERT", "ASSERT_NOT"):
            _tests(av[1], literals, sets)
        elif name == "ATOMIC_GROUP":
            _tests(av, literals, sets)
        else:  # back-references compare characters themselves; conditionals, anything new
            raise _Unknown(name)


class Alike:
    """The rules' character tests, and each text's class under them (`canonical`)."""

    def __init__(self, literals: set[str], sets: list[tuple]):
        self._literals = literals | {"\n"}
        self._sets = list(dict.fromkeys(sets))
        self._by_signature: dict[tuple, int] = {}
        self._table: dict[int, int] = {}  # a character -> its class's first character met
        self._known: set[str] = set()

    @classmethod
    def of(cls, regexes: Iterable[re.Pattern]) -> Alike | None:
        """None when a regex tests characters in a way not covered (see _tests)."""
        literals: set[str] = set()
        sets: list[tuple] = []
        try:
            for regex in regexes:
                parsed = sre_parse.parse(regex.pattern, regex.flags)
                if parsed.state.flags & _FOLDING:
                    return None
                _tests(parsed.data, literals, sets)
        except (_Unknown, re.error):
            return None
        return cls(literals, sets)

    def _signature(self, c: str) -> tuple:
        if c in self._literals:
            return (c,)
        return (_WORD.match(c) is not None,) + tuple([set_matches(s, c, False) for s in self._sets])

    def canonical(self, text: str) -> str:
        """`text` with each character replaced by the first one met that every rule tests alike."""
        table = self._table
        for c in set(text).difference(self._known):
            self._known.add(c)
            table[ord(c)] = self._by_signature.setdefault(self._signature(c), ord(c))
        return text.translate(table)

    def classes(self, table: BeanTable, indices: Sequence[int]) -> list[list[int]]:
        """`indices` (ascending) as classes of members no rule can tell apart, each in ascending
        order, the classes in the order of their first members. A member whose topic is a
        number stands alone: its topic and partition may trade places (member_tables)."""
        topic_class: list[int] = []
        seen: dict[str, int] = {}
        for name in table.topics:
            topic_class.append(-1 if name.isdigit() else seen.setdefault(self.canonical(name), len(seen)))
        partition_class: dict[int, int] = {}
        by_partition: dict[str, int] = {}
        width = len(seen) or 1
        out: dict[int, list[int]] = {}
        topic, partition = table.topic, table.partition
        for i in indices:
            t = topic_class[topic[i]]
            if t < 0:
                out[-1 - i] = [i]
                continue
            p = partition[i]
            k = partition_class.get(p)
            if k is None:
                k = partition_class[p] = by_partition.setdefault(self.canonical(str(p)), len(by_partition))
            out.setdefault(k * width + t, []).append(i)
        return list(out.values())
