"""Texts every match of a rule's pattern must contain, tested before its regex runs.

A substring test on them rules most leaves out before the regex (with its backtracking over
several `(.+)`) runs: `Prefilter` tests all the rules' texts in one pass per match string. For a
rule that is not value-blind, `could_match` tells from a leaf's head alone whether any number
could complete a match, so a leaf that cannot is never re-run against that rule.
"""
from __future__ import annotations

import re

from kafka_jmx_sidecar.exporter.rule_engine.config import Rule
from kafka_jmx_sidecar.exporter.rule_engine.value_blindness import NUMBER_CHARS, parsed_pattern


def required_literals(rule: Rule) -> tuple[tuple[str, ...], ...]:
    """Texts every match of the rule's pattern contains, as alternatives: `(("kafka",),
    ("Count", "Value"))` means "contains kafka, and Count or Value". Taken from runs of literal
    characters outside optional parts."""
    if rule.regex is None:
        return ()
    try:
        parsed = parsed_pattern(rule)
        if parsed.state.flags & re.IGNORECASE:
            return ()
        return tuple(_requirements(parsed.data))
    except Exception:
        return ()


def _requirements(items: list) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    run: list[str] = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            run.append(chr(av))
            continue
        if len(run) >= 2:
            out.append(("".join(run),))
        run = []
        if name == "SUBPATTERN" and not (av[1] & re.IGNORECASE):
            out.extend(_requirements(av[3].data))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and av[0] >= 1:
            out.extend(_requirements(av[2].data))
        elif name == "ATOMIC_GROUP":
            out.extend(_requirements(av.data))
        elif name == "BRANCH":
            # One text per alternative (its longest required one); only if each has one.
            choices = []
            for branch in av[1]:
                texts = [t[0] for t in _requirements(branch.data) if len(t) == 1]
                if not texts:
                    break
                choices.append(max(texts, key=len))
            else:
                out.append(tuple(dict.fromkeys(choices)))
    if len(run) >= 2:
        out.append(("".join(run),))
    return out


def head_checks(requirements: tuple[tuple[str, ...], ...]) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], ...]:
    """For each requirement, per alternative: the text and the prefixes of it that could end the
    head (`...attr: `) with the rest of it inside the number. A requirement that the number
    alone could satisfy is left out."""
    out = []
    for alternatives in requirements:
        if any(NUMBER_CHARS.issuperset(text) for text in alternatives):
            continue
        out.append(tuple(
            (text, tuple(text[:k] for k in range(1, len(text)) if NUMBER_CHARS.issuperset(text[k:])))
            for text in alternatives))
    return tuple(out)


def could_match(head: str, checks: tuple) -> bool:
    """Can `head + V` contain every required text, for some number text V?"""
    for alternatives in checks:
        for text, prefixes in alternatives:
            if text in head or any(head.endswith(p) for p in prefixes):
                break
        else:
            return False
    return True


class Prefilter:
    """The texts all the rules' patterns require, as bits: one pass of substring tests per match
    string tells which rules could match it at all."""

    def __init__(self, requirements: tuple[tuple[tuple[str, ...], ...], ...]):
        texts = list(dict.fromkeys(t for rule in requirements for alternatives in rule for t in alternatives))
        bit = {t: 1 << i for i, t in enumerate(texts)}
        self.texts = tuple((t, bit[t]) for t in texts)
        # per rule: the bits it needs all of, and groups of bits it needs one of
        def bits(texts) -> int:
            mask = 0
            for t in texts:
                mask |= bit[t]  # a text required twice is one bit
            return mask
        self.masks = tuple(
            (bits(a[0] for a in rule if len(a) == 1), tuple(bits(a) for a in rule if len(a) > 1))
            for rule in requirements)

    def found(self, text: str) -> int:
        mask = 0
        for t, b in self.texts:
            if t in text:
                mask |= b
        return mask


def possible(found: int, need: int, any_of: tuple[int, ...]) -> bool:
    """Can a match string with the required texts `found` (bits) match a rule that needs all of
    `need` and one of each group in `any_of`?"""
    if found & need != need:
        return False
    for group in any_of:
        if not found & group:
            return False
    return True
