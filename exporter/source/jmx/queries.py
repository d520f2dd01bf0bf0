"""Server-side queries: `attribute op value` as a javax.management QueryExp, which the broker's
JVM evaluates, so that one queryNames returns only the MBeans it holds for.

Integer and Long gauges both compare as long against an int value; Byte/Short/Double compare
as double (equal for small integers). An MBean whose attribute cannot be read or compared does
not match.
"""
from __future__ import annotations

from typing import Any, Sequence

_OPS = {"==": "eq", ">": "gt", ">=": "geq", "<": "lt", "<=": "leq"}


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

    def unusual(self, attribute: str, terms: Sequence[tuple[str, Sequence[Any]]]) -> Any:
        """The MBeans of any of `terms` (ObjectName pattern, common values) whose `attribute` is
        none of that pattern's common values, as one QueryExp (an ObjectName pattern is a
        QueryExp the broker matches as it matches a query's pattern)."""
        ObjectName = self._jp.JClass("javax.management.ObjectName")
        q = None
        for pattern, values in terms:
            term = ObjectName(pattern)
            for value in values:
                term = self._Query.and_(term, self.one(attribute, "!=", value))
            q = term if q is None else self._Query.or_(q, term)
        return q

    def all_of(self, attribute: str, op: str, value: Any, also: Sequence[tuple[str, Any]] = ()) -> Any:
        """`attribute op value` and every `attribute op value` of `also`, as one QueryExp."""
        q = self.one(attribute, op, value)
        for more_op, more_value in also:
            q = self._Query.and_(q, self.one(attribute, more_op, more_value))
        return q
