"""Server-side queries: `attribute op value` as a javax.management QueryExp, which the broker's
JVM evaluates, so that one queryNames returns only the MBeans it holds for.

Integer and Long gauges both compare as long against an int value; Byte/Short/Double compare
as double (equal for small integers). An MBean whose attribute cannot be read or compared does
not match.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

_OPS = {"==": "eq", ">": "gt", ">=": "geq", "<": "lt", "<=": "leq"}


@dataclass(frozen=True)
class MemberQuery:
    """One query of families' members (JmxClient.start_queries): the names of `pattern`
    that one of `terms` holds for, answered as the positions of the members of `families` among
    them (None: the families are named when the answer is taken, so that it may be asked before
    they are listed). A term is (a name pattern, or None for every name; the tests `attribute op value`, all
    of which hold). `expected`: the names the answer likely holds (the JVM holds it whole)."""

    pattern: str
    families: tuple
    attribute: str
    terms: tuple
    expected: int = 0


class QueryExps:
    def __init__(self) -> None:
        import jpype

        self._jp = jpype
        self._Query = jpype.JClass("javax.management.Query")

    def _value(self, value: Any) -> Any:
        jp = self._jp
        Q = self._Query
        if isinstance(value, bool):
            return Q.value(jp.JBoolean(value))
        if isinstance(value, int):
            return Q.value(jp.JLong(value))
        if isinstance(value, float):
            return Q.value(jp.JDouble(value))
        if isinstance(value, str):
            return Q.value(jp.JString(value))
        raise TypeError(f"a query value must be bool, int, float or str, not {type(value).__name__}")

    def one(self, attribute: str, op: str, value: Any) -> Any:
        """`attribute op value` (op: == != > >= < <=)."""
        Q = self._Query
        if op == "!=":
            return Q.not_(Q.eq(Q.attr(attribute), self._value(value)))
        if op not in _OPS:
            raise ValueError(f"unknown query operator {op!r}: use one of == != > >= < <=")
        return getattr(Q, _OPS[op])(Q.attr(attribute), self._value(value))

    def matching(self, attribute: str, terms: Sequence[tuple[str | None, Sequence[tuple[str, Any]]]]) -> Any:
        """Any of `terms` (MemberQuery.terms) as one QueryExp."""
        ObjectName = self._jp.JClass("javax.management.ObjectName")
        q = None
        for pattern, tests in terms:
            term = None if pattern is None else ObjectName(pattern)
            for op, value in tests:
                test = self.one(attribute, op, value)
                term = test if term is None else self._Query.and_(term, test)
            q = term if q is None else self._Query.or_(q, term)
        return q

    def all_of(self, attribute: str, op: str, value: Any, also: Sequence[tuple[str, Any]] = ()) -> Any:
        """`attribute op value` and every `attribute op value` of `also`, as one QueryExp."""
        return self.matching(attribute, [(None, [(op, value), *also])])
