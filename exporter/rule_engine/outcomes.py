"""What the rules made of a leaf, kept from poll to poll: an `Outcome` (everything but the
number), a `Drop`, or a `Volatile` (value-dependent rules to re-run each poll), and an MBean's
`BeanPlan` holding them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_jmx_sidecar.exporter.base.model import Sample
from kafka_jmx_sidecar.exporter.rule_engine.naming import series_key

if TYPE_CHECKING:
    from kafka_jmx_sidecar.exporter.rule_engine.leaves import Leaf

_new = object.__new__
_set_name, _set_labels, _set_value = Sample.name.__set__, Sample.labels.__set__, Sample.value.__set__
_set_type, _set_help, _set_ts = Sample.type.__set__, Sample.help.__set__, Sample.timestamp_ms.__set__


class Outcome:
    """What a matched rule made of a leaf: everything but the number, computed once."""

    __slots__ = ("name", "labels", "type", "help", "fixed", "factor", "key", "objectname", "last", "rule")

    def __init__(self, name: str, labels: tuple, sample_type: str, help_text: str,
                 fixed: float | None, factor: float, objectname: str, rule: int = -1):
        self.name, self.labels, self.type, self.help = name, labels, sample_type, help_text
        self.fixed, self.factor, self.objectname = fixed, factor, objectname
        self.rule = rule  # the index of the rule that made it (-1: not known)
        self.key = series_key(name, labels)
        self.last: Sample | None = None

    def sample(self, value: float) -> Sample:
        """The Sample for this value; the previous one when the value did not change (a frozen
        dataclass costs a microsecond to build, and most values repeat from poll to poll)."""
        s = self.last
        if s is not None and s.value == value:
            return s
        s = _new(Sample)
        _set_name(s, self.name)
        _set_labels(s, self.labels)
        _set_value(s, value)
        _set_type(s, self.type)
        _set_help(s, self.help)
        _set_ts(s, None)
        self.last = s
        return s


class Drop:
    """A leaf a rule matched and then threw away; `rejected` ones are counted as errors."""

    __slots__ = ("reason", "rejected", "rule")

    def __init__(self, reason: str, rejected: bool, rule: int = -1):
        self.reason, self.rejected = reason, rejected
        self.rule = rule  # the rule that dropped it, where that is kept (-1: not known)


REJECTED_VALUE = Drop("value: did not parse as a number", True)
EMPTY_NAME = Drop("name: expanded to an empty string", True)
UNSUPPORTED = Drop("a string without value:", False)
UNMATCHED = Drop("no rule matched", False)


class Volatile:
    """A numeric leaf some value-dependent rules may claim: they run each poll, in order, before
    the cached outcome of the first value-blind rule that matched."""

    __slots__ = ("leaf", "rules", "fallback")

    def __init__(self, leaf: Leaf, rules: tuple, fallback: Any):
        self.leaf, self.rules, self.fallback = leaf, rules, fallback


class Matched:
    """A value-blind rule that matched a table member, its outcome not made yet (see
    `member_tables`: members whose match differs only in their topic and partition share one)."""

    __slots__ = ("rule", "strings", "match")

    def __init__(self, rule, strings, match):
        self.rule, self.strings, self.match = rule, strings, match


CONSTANTS_LIMIT = 256  # distinct string/boolean values remembered per MBean before starting over


class BeanPlan:
    """What the rules made of one MBean's leaves."""

    __slots__ = ("numeric", "nested", "constants", "poll")

    def __init__(self):
        self.poll = 0  # the last poll that saw this MBean
        self.numeric: dict[str, Any] = {}  # attribute name -> Outcome | Drop | Volatile
        # made when first needed: most MBeans have neither, and an empty dict is 64 bytes
        self.nested: dict[tuple, Any] | None = None  # numbers inside composites and tables, by identity
        self.constants: dict[tuple, Any] | None = None  # (identity, value type, value) -> Outcome | Drop
