"""Can a rule tell two numbers apart? `value_blind` proves from a pattern's syntax that it cannot.

The match string ends with the value, so a rule could match `Value: 0` and not `Value: 1`, and a
leaf's outcome could not be cached across polls. The match string is A + V: A = `domain<keys>
<path>attr: ` and V = Java's text of a number, made of `NUMBER_CHARS` only. The regex is
`.*(?:P).*`, so the outcome (match or not, and the groups) can only depend on V if some match of
P can end inside V, or if P looks ahead. Whether a match can end inside V is decided from P's
possible last few characters: they would have to be number characters, preceded (where P reaches
back that far) by the ": " that precedes V. Most rules of Strimzi's and Confluent's files are
blind; the others capture what follows the attribute name, value included.
"""
from __future__ import annotations

import re

try:  # the regex parser behind `re`; its output has kept its shape from 3.10 to 3.13
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse  # type: ignore[no-redef]

from kafka_jmx_sidecar.exporter.rule_engine.config import Rule

NUMBER_CHARS = frozenset("0123456789-.ENaInfinity")
_RELEVANT = NUMBER_CHARS | {" ", ":"}  # the only characters the argument above looks at
_SUFFIX_LIMIT = 8  # characters of P's tail worth looking at
_ALTERNATIVES_LIMIT = 64
CATEGORIES = {name: re.compile(rx, re.ASCII) for name, rx in (
    ("CATEGORY_DIGIT", r"\d"), ("CATEGORY_NOT_DIGIT", r"\D"), ("CATEGORY_SPACE", r"\s"),
    ("CATEGORY_NOT_SPACE", r"\S"), ("CATEGORY_WORD", r"\w"), ("CATEGORY_NOT_WORD", r"\W"))}
_ANY_CHAR = frozenset(_RELEVANT)


class _Unsafe(Exception):
    """The pattern can look past its own match (lookahead, `$`, `\\b`): no proof attempted."""


def parsed_pattern(rule: Rule):
    """The parse tree of the rule's own pattern P (its regex is `.*(?:P).*`)."""
    pattern = rule.regex.pattern[len(".*(?:"):-len(").*")]  # type: ignore[union-attr]
    return sre_parse.parse(pattern, re.ASCII)


def value_blind(rule: Rule) -> bool:
    """True when the rule's outcome for a numeric leaf cannot depend on which number it holds."""
    if rule.regex is None or rule.cache:
        return True  # matches everything / is matched against the literal `<cache>`
    templates = [rule.name, rule.value, rule.help] + [t for pair in rule.labels for t in pair]
    if any(t is not None and 0 in t.parts for t in templates):
        return False  # `$0` is the whole match string, value included
    try:
        parsed = parsed_pattern(rule)
        tails = _tails(parsed.data, bool(parsed.state.flags & re.IGNORECASE))
    except _Unsafe:
        return False
    except Exception:  # a parser shape this code does not know: be safe, not fast
        return False
    return not any(_can_end_in_value(tail, complete) for tail, complete in tails)


def _can_end_in_value(tail: tuple, complete: bool) -> bool:
    """`tail` holds the classes of P's last characters, last first. Can j >= 1 of them lie in V?"""
    if not tail:
        return True  # P can match the empty string, e.g. at the very end
    for j in range(1, len(tail) + 1):
        if not (tail[j - 1] & NUMBER_CHARS):
            return False  # this and every longer alignment need a non-number character in V
        if j == len(tail):
            return True  # all of P in V, or P's earlier part unknown: assume it can
        if " " in tail[j] and (j + 1 >= len(tail) or ":" in tail[j + 1]):
            return True  # P reaches back over the ": " before V
    return False


def _tails(items: list, ignore_case: bool) -> list[tuple[tuple, bool]]:
    """P's possible tails: (classes of the last characters, last first; reached P's start?)."""
    results: list[tuple[tuple, bool]] = [((), True)]
    for op, av in reversed(items):
        item = _item_tails(op, av, ignore_case)
        extended = []
        for tail, open_ in results:
            if not open_:
                extended.append((tail, False))
                continue
            for piece, piece_complete in item:
                combined = tail + piece
                extended.append((combined[:_SUFFIX_LIMIT], piece_complete and len(combined) < _SUFFIX_LIMIT))
        results = list(dict.fromkeys(extended))
        if len(results) > _ALTERNATIVES_LIMIT:
            raise _Unsafe
    return results


def _item_tails(op, av, ignore_case: bool) -> list[tuple[tuple, bool]]:
    name = str(op)
    if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
        return [((_char_class(name, av, ignore_case),), True)]
    if name == "SUBPATTERN":
        _group, add_flags, del_flags, sub = av
        ci = (ignore_case or bool(add_flags & re.IGNORECASE)) and not (del_flags & re.IGNORECASE)
        return _tails(sub.data, ci)
    if name == "ATOMIC_GROUP":
        return _tails(av.data, ignore_case)
    if name == "BRANCH":
        return [t for branch in av[1] for t in _tails(branch.data, ignore_case)]
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, high, sub = av
        if high == 0:
            return [((), True)]
        once = _tails(sub.data, ignore_case)
        if low == high == 1:
            return once
        # The last repetition's tail; what precedes it is not followed further.
        out = [(tail, False) if tail else ((_ANY_CHAR,), False) for tail, _ in once]
        return out + [((), True)] if low == 0 else out
    if name == "AT":
        if str(av) in ("AT_BEGINNING", "AT_BEGINNING_STRING"):
            return [((), True)]
        raise _Unsafe
    if name in ("ASSERT", "ASSERT_NOT"):
        if av[0] >= 0:
            raise _Unsafe  # a lookahead can see V
        _tails(av[1].data, ignore_case)  # a lookbehind looks back into A, but check its content
        return [((), True)]
    return [((_ANY_CHAR,), False), ((), True)]  # back references and the like: anything


def _char_class(name: str, av, ignore_case: bool) -> frozenset:
    """The relevant characters one character-matching item accepts."""
    if name == "ANY":
        return _ANY_CHAR - {"\n"}
    if name == "LITERAL":
        return frozenset(c for c in _RELEVANT if _same_char(c, chr(av), ignore_case))
    if name == "NOT_LITERAL":
        return frozenset(c for c in _RELEVANT if not _same_char(c, chr(av), ignore_case))
    return frozenset(c for c in _RELEVANT if set_matches(av, c, ignore_case))


def _same_char(c: str, literal: str, ignore_case: bool) -> bool:
    return c == literal or (ignore_case and c.lower() == literal.lower())


def set_matches(items: list, ch: str, ignore_case: bool) -> bool:
    """Whether a character class's items (as the parser gives them) accept `ch`."""
    candidates = {ch, ch.lower(), ch.upper()} if ignore_case else {ch}
    negate = bool(items) and str(items[0][0]) == "NEGATE"
    hit = False
    for op, av in items[1:] if negate else items:
        name = str(op)
        if name == "LITERAL":
            hit = chr(av) in candidates
        elif name == "RANGE":
            hit = any(av[0] <= ord(c) <= av[1] for c in candidates)
        elif name == "CATEGORY":
            rx = CATEGORIES.get(str(av))
            hit = rx is None or any(rx.fullmatch(c) for c in candidates)
        else:
            hit = True
        if hit:
            break
    return hit != negate
