"""Comparing two Prometheus expositions (text 0.0.4 or OpenMetrics) the way the differential tests
judge them: the same families with the same TYPE, HELP (and UNIT), the same series in the same order
with the same label order, and the same values where the source did not move.

`unmoved(first, second)` keeps the series whose value the reference printed alike in two reads
taken before and after ours: those are the values a faithful copy must print too. A histogram's
quantile is kept only if its histogram's count is printed and printed alike too.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( \S+)?$')

Key = tuple  # (name, the label set as printed, braces included: "" when none)


@dataclass
class Exposition:
    text: str
    families: dict[str, dict] = field(default_factory=dict)   # name -> {"type", "help", "unit"}
    family_order: list[str] = field(default_factory=list)
    series: dict[Key, str] = field(default_factory=dict)       # key -> value text
    order: list[Key] = field(default_factory=list)

    def without(self, *prefixes: str) -> "Exposition":
        """A copy without the families and series whose names start with any of `prefixes`."""
        keep = lambda name: not name.startswith(prefixes)  # noqa: E731
        out = Exposition(self.text)
        out.families = {k: v for k, v in self.families.items() if keep(k)}
        out.family_order = [k for k in self.family_order if keep(k)]
        out.series = {k: v for k, v in self.series.items() if keep(k[0])}
        out.order = [k for k in self.order if keep(k[0])]
        return out

    def dropping(self, keys: set, families: set) -> "Exposition":
        """A copy without the series `keys` and the families `families`."""
        out = Exposition(self.text)
        out.families = {k: v for k, v in self.families.items() if k not in families}
        out.family_order = [k for k in self.family_order if k not in families]
        out.series = {k: v for k, v in self.series.items() if k not in keys and k[0] not in families}
        out.order = [k for k in self.order if k in out.series]
        return out


def parse(text: str) -> Exposition:
    exp = Exposition(text)
    for line in text.splitlines():
        if line.startswith("# "):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE", "UNIT"):
                name = parts[2]
                if name not in exp.families:
                    exp.families[name] = {}
                    exp.family_order.append(name)
                exp.families[name][parts[1].lower()] = parts[3] if len(parts) > 3 else ""
            continue
        if not line:
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise AssertionError(f"not a sample line: {line!r}")
        key = (m.group(1), m.group(2) or "")
        if key in exp.series:
            raise AssertionError(f"series printed twice: {line!r}")
        exp.series[key] = m.group(3)
        exp.order.append(key)
    return exp


_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# where rule files put a Yammer histogram's Count beside its percentiles: the same name (Confluent's
# `Count|Value` rules), `_count` (Strimzi's), and the `_total` a 1.x counter gains
_COUNT_SUFFIXES = ("", "_count", "_count_total", "_total")


def _labels(text: str) -> tuple:
    return tuple(sorted(_LABEL.findall(text)))


def unmoved(first: Exposition, second: Exposition) -> set[Key]:
    """A percentile of a histogram taking samples goes up and down: equal in two reads, it may have
    been another value between them (a broker's Fetch p75 read 509.0, 509.75, 509.0 as its
    followers' fetches entered and left the sample). It moves only when a sample enters, which the
    Count counts, so a quantile counts as unmoved only if its count was printed and did not move."""
    equal = {k for k, v in first.series.items() if second.series.get(k) == v}
    quantiles = {k for k in equal if "quantile=" in k[1]}
    if not quantiles:
        return equal
    # the label sets of the families a quantile's count could be in, parsed once each
    names = {k[0] + s for k in quantiles for s in _COUNT_SUFFIXES}
    counts = {(k[0], _labels(k[1])): k in equal for k in first.series if k[0] in names and "quantile=" not in k[1]}
    for key in quantiles:
        base = tuple(p for p in _labels(key[1]) if p[0] != "quantile")
        seen = [counts[(key[0] + s, base)] for s in _COUNT_SUFFIXES if (key[0] + s, base) in counts]
        if not seen or not all(seen):
            equal.discard(key)
    return equal


def settled(ours: Exposition, before: Exposition, after: Exposition) -> tuple[Exposition, Exposition]:
    """`ours` and `before` without what came or went between the reference's two reads (a broker
    creates an MBean when a request first meets an error, say): a series or family that exists in
    one of them only may or may not exist in a read taken between them. What both reads hold, or
    both lack, is compared as it is."""
    keys = set(before.series) ^ set(after.series)
    families = set(before.families) ^ set(after.families)
    return ours.dropping(keys, families), before.dropping(keys, families)


def displaced(ours: Exposition, theirs: Exposition) -> int:
    """How many series would have to move for each family to list its series in `theirs`' order:
    the series not on a longest common subsequence, family by family."""
    position = {k: i for i, k in enumerate(theirs.order)}
    by_family: dict[str, list[int]] = {}
    for k in ours.order:
        if k in position:
            by_family.setdefault(k[0], []).append(position[k])
    moved = 0
    for seq in by_family.values():
        tails: list[int] = []  # longest increasing subsequence, patience style
        for x in seq:
            i = bisect_left(tails, x)
            tails[i:i + 1] = [x]
        moved += len(seq) - len(tails)
    return moved


def differences(ours: Exposition, theirs: Exposition, stable: set[Key] | None = None,
                check_order: bool = True, displaced_allowed: int = 0) -> list[str]:
    """Every way `ours` differs from `theirs`, one line each (empty: the same). `displaced_allowed`:
    how many series may stand elsewhere within their family (see `displaced`)."""
    out: list[str] = []
    for name in sorted(set(theirs.families) | set(ours.families)):
        a, b = ours.families.get(name), theirs.families.get(name)
        if a is None:
            out.append(f"family missing: {name} {b}")
        elif b is None:
            out.append(f"family extra: {name} {a}")
        elif a != b:
            out.append(f"family {name}: ours {a} theirs {b}")
    missing = [k for k in theirs.order if k not in ours.series]
    extra = [k for k in ours.order if k not in theirs.series]
    out += [f"series missing: {_show(k)}" for k in missing]
    out += [f"series extra: {_show(k)}" for k in extra]
    for key in sorted(stable or (), key=repr):
        if key in ours.series and key in theirs.series and ours.series[key] != theirs.series[key]:
            out.append(f"value of {_show(key)}: ours {ours.series[key]} theirs {theirs.series[key]}")
    if check_order and not out:
        if ours.family_order != theirs.family_order:
            out.append(f"family order differs: first at {_first_difference(ours.family_order, theirs.family_order)}")
        if ours.order != theirs.order:
            moved = displaced(ours, theirs)
            if moved > displaced_allowed:
                out.append(f"series order differs ({moved} displaced within their families, "
                           f"{displaced_allowed} allowed): first at {_first_difference(ours.order, theirs.order)}")
    return out


def _show(key: Key) -> str:
    return key[0] + key[1]


def _first_difference(a: list, b: list) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"#{i}: ours {x!r} theirs {y!r}"
    return f"lengths {len(a)} and {len(b)}"
