"""Members of one BeanTable that a rule matched alike share what the rule made of them.

A table's members differ only in their topic and partition, and the rule that matches them mostly
differs only in which groups hold those: making the outcome (expanding the name, help, value and
label templates, then the member template) costs several times the regex. So the first member of a
shape makes it, and the others whose match has the same shape take its template code. A shape is
the rule and the match's groups, with a group that is the member's topic or partition (whole) made
a slot.

That a shape's template stands for every member of that shape is checked, not assumed: the first
member's outcome is made again for a probe member whose topic and partition are texts no name has
(in its keys and in the slotted groups), and the shape is kept only if the probe's template is the
first member's. A template that uses the topic anywhere but as a whole label value (in the name,
help, value, a label name, part of a label value, the whole match `$0`) then differs, and such a
shape is made member by member, as before.
"""
from __future__ import annotations

from typing import Callable

from kafka_jmx_sidecar.exporter.base.model import BeanTable
from kafka_jmx_sidecar.exporter.rule_engine.leaves import Leaf, MatchStrings
from kafka_jmx_sidecar.exporter.rule_engine.outcomes import Matched, Outcome

# texts no topic, partition, ObjectName value or rule text holds (a NUL is in none of them)
PROBE_TOPIC, PROBE_PARTITION = "\x00topic\x00", "\x00partition\x00"
_TOPIC, _PARTITION = object(), object()  # a group that is the member's topic or partition
# a rule none of whose shapes a second member shares (a group holds more than the topic) stops
# being probed after this many
_GIVE_UP_AFTER = 64


class _Groups:
    """A match's groups as Template.expand asks for them."""

    __slots__ = ("groups",)

    def __init__(self, groups: tuple):
        self.groups = groups

    def group(self, i: int):
        return self.groups[i - 1]


class Shapes:
    """The shapes met in one table while its unseen members are planned. `template_key(outcome,
    table, topic, partition)` and `code_of(outcome, table, i)` are the member tables'."""

    __slots__ = ("_search", "_table", "_template_key", "_code_of", "_codes", "_apart", "_probed", "_shared")

    def __init__(self, search, table: BeanTable, template_key: Callable, code_of: Callable):
        self._search, self._table = search, table
        self._template_key, self._code_of = template_key, code_of
        self._codes: dict[tuple, int] = {}  # shape -> the template code its members share
        self._apart: set[tuple] = set()  # shapes whose probe disagreed: made member by member
        self._probed: dict[int, int] = {}  # rule index -> shapes probed
        self._shared: set[int] = set()  # rules a member took an earlier member's code of

    def code(self, found: Matched, i: int) -> tuple[tuple | None, int | None]:
        """Member i's shape, and the code it shares with an earlier member of that shape (None
        when none did)."""
        key = self._key(found, i)
        code = None if key is None else self._codes.get(key)
        if code is not None:
            self._shared.add(key[0])
        return key, code

    def known(self, found: Matched, i: int) -> int | None:
        """The code member i's shape was given, if any (not counted as shared)."""
        key = self._key(found, i)
        return None if key is None else self._codes.get(key)

    def made(self, found: Matched, i: int, key: tuple | None) -> Outcome:
        """What the rule makes of member i; its shape is kept when the probe agrees."""
        search = self._search
        outcome = search.made(found.rule, found.strings, found.match)
        if key is None:
            return outcome
        rule = key[0]
        probed = self._probed.get(rule, 0)
        if key in self._apart or (probed >= _GIVE_UP_AFTER and rule not in self._shared):
            return outcome
        self._probed[rule] = probed + 1
        groups = tuple([PROBE_TOPIC if g is _TOPIC else PROBE_PARTITION if g is _PARTITION else g for g in key[1]])
        probe = search.made(found.rule, MatchStrings(_probe_leaf(found.strings.leaf)), _Groups(groups))
        if self._agree(outcome, probe, i):
            self._codes[key] = self._code_of(outcome, self._table, i)
        else:
            self._apart.add(key)
        return outcome

    def _agree(self, outcome, probe, i: int) -> bool:
        """Whether member i's outcome and the probe's make the same template."""
        if outcome.__class__ is not Outcome:
            return probe is outcome  # the drops are constants: the same drop whatever the topic
        if probe.__class__ is not Outcome or len({k for k, _ in outcome.labels}) != len(outcome.labels):
            return False  # (labels named alike: 1.x sorts them by value too)
        table = self._table
        topic, partition = table.topics[table.topic[i]], str(table.partition[i])
        return self._template_key(outcome, table, topic, partition) == \
            self._template_key(probe, table, PROBE_TOPIC, PROBE_PARTITION)

    def _key(self, found: Matched, i: int) -> tuple | None:
        if not self._search.from_groups(found.rule):
            return None
        table = self._table
        topic, partition = table.topics[table.topic[i]], str(table.partition[i])
        if topic == partition:
            return None  # which group is which is open: see MemberTables._template_code
        groups = () if found.match is None else found.match.groups()
        return (self._search.rule_index(found.rule),
                tuple([_TOPIC if g == topic else _PARTITION if g == partition else g for g in groups]))


def _probe_leaf(leaf: Leaf) -> Leaf:
    """The leaf of a member whose topic and partition are the probe's."""
    keys = leaf.keys[:-2] + (("topic", PROBE_TOPIC), ("partition", PROBE_PARTITION))
    return Leaf(leaf.domain, keys, leaf.path, leaf.attr, leaf.description, leaf.value)
