"""Leaves: the numbers, booleans and strings inside an MBean, and the text rules match them by.

One leaf per number, boolean or string inside an attribute (composites and tables flattened the
way jmx_exporter's JmxScraper flattens them). A rule sees a leaf as its match string

    domain<k1=v1, k2=v2><path>attrName: value
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from kafka_jmx_sidecar.exporter.base.model import MBean, Tabular
from kafka_jmx_sidecar.exporter.base.java_text import java_str
from kafka_jmx_sidecar.exporter.rule_engine.naming import bean_text, snake_case

if TYPE_CHECKING:
    from kafka_jmx_sidecar.exporter.rule_engine.prefilter import Prefilter

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MILLI = _dt.timedelta(milliseconds=1)


def epoch_seconds(value: _dt.datetime | _dt.date) -> float:
    """A java.util.Date becomes `getTime() / 1000.0`; a naive datetime is taken as UTC."""
    if not isinstance(value, _dt.datetime):
        value = _dt.datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return ((value - _EPOCH) // _MILLI) / 1000.0


@dataclass(frozen=True, slots=True)
class Leaf:
    """One value inside an MBean. `keys` are the ObjectName's key properties plus, inside a
    table, the row's index columns."""

    domain: str
    keys: tuple[tuple[str, str], ...]
    path: tuple[str, ...]
    attr: str
    description: str | None
    value: Any

    @property
    def bean_name(self) -> str:
        """`domain<k1=v1, k2=v2><path>`: the match string up to the attribute name."""
        return bean_text(self.domain, self.keys, self.path)

    def match_string(self, snake: bool = False, cache: bool = False) -> str:
        """`domain<k1=v1, k2=v2><path>attrName: value` as a rule sees it."""
        return MatchStrings(self).get(snake, cache)


class MatchStrings:
    """A leaf's match strings, built once for all the rules tried on it (at most four variants:
    snake-cased attribute or not, the value or `<cache>`)."""

    __slots__ = ("leaf", "bean", "value", "_memo", "_heads", "_found")

    def __init__(self, leaf: Leaf):
        self.leaf = leaf
        self.bean = leaf.bean_name
        self.value: str | None = None
        self._memo: dict[tuple[bool, bool], str] = {}
        self._heads: dict[bool, str] = {}
        self._found: dict[tuple[bool, bool], int] = {}

    def found(self, snake: bool, cache: bool, prefilter: Prefilter) -> int:
        """Which of the rules' required texts this match string contains, as bits."""
        mask = self._found.get((snake, cache))
        if mask is None:
            mask = self._found[(snake, cache)] = prefilter.found(self.get(snake, cache))
        return mask

    def head(self, snake: bool) -> str:
        """The match string up to the value: the part that is the same for every number."""
        text = self._heads.get(snake)
        if text is None:
            text = self._heads[snake] = self.bean + (snake_case(self.leaf.attr) if snake else self.leaf.attr) + ": "
        return text

    def get(self, snake: bool, cache: bool) -> str:
        key = (snake, cache)
        text = self._memo.get(key)
        if text is None:
            if cache:
                tail = "<cache>"
            else:
                if self.value is None:
                    self.value = java_str(self.leaf.value)
                tail = self.value
            text = self._memo[key] = self.head(snake) + tail
        return text


def leaves(mbean: MBean) -> Iterator[Leaf]:
    """Every exported leaf of an MBean, in attribute order (composite items in key order)."""
    domain, keys = mbean.name.domain, mbean.name.keys
    for attr in mbean.attributes:
        yield from flatten(domain, keys, (), attr.name, attr.description, attr.value)


def flatten(domain: str, keys: tuple, path: tuple, attr: str, description: str | None,
            value: Any) -> Iterator[Leaf]:
    """The leaves of one value: itself when it is a number, boolean or string, its items when it
    is a composite or a table; nothing for null and arrays."""
    if value is None:
        return
    if isinstance(value, (bool, int, float, str)):
        yield Leaf(domain, keys, path, attr, description, value)
    elif isinstance(value, (_dt.datetime, _dt.date)):
        yield Leaf(domain, keys, path, attr, description, epoch_seconds(value))
    elif isinstance(value, Tabular):
        yield from _flatten_table(domain, keys, path, attr, value)
    elif isinstance(value, Mapping):  # CompositeData: items in sorted key order, path + attr
        # jmx_exporter describes every item with the CompositeType's description; the JMX edge
        # may carry it as `Composite.description` (an attribute on the dict).
        item_description = getattr(value, "description", None)
        for key in sorted(value):
            yield from flatten(domain, keys, path + (attr,), key, item_description, value[key])
    elif isinstance(value, (list, tuple, set, frozenset, bytes, bytearray)):
        return  # arrays are not exported
    elif isinstance(value, (int, float)) or hasattr(value, "__float__") and not isinstance(value, complex):
        yield Leaf(domain, keys, path, attr, description, float(value))  # BigDecimal and friends


def _flatten_table(domain: str, keys: tuple, path: tuple, attr: str, table: Tabular) -> Iterator[Leaf]:
    """Each row's index columns become extra key properties (renamed with '_' until they do not
    collide); every other column is a leaf below `attr`, except a column named `value`, which
    takes the table's own place."""
    index = tuple(table.index)
    for row in table.rows:
        description = getattr(row, "description", None)  # the row CompositeType's, as in Java
        row_keys = list(keys)
        taken = {k for k, _ in keys}
        for column in index:
            cell = row.get(column)
            if cell is None:
                continue
            name = column
            while name in taken:
                name += "_"
            taken.add(name)
            row_keys.append((name, java_str(cell)))
        row_keys_t = tuple(row_keys)
        for column in sorted(set(row) - set(index)):
            if column.lower() == "value":
                yield from flatten(domain, row_keys_t, path, attr, description, row[column])
            else:
                yield from flatten(domain, row_keys_t, path + (attr,), column, description, row[column])
