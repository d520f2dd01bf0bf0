"""jmx_exporter's jmx_scrape_cached_beans, counted from what the rule engine keeps (0 without
`cache: true` rules).

0.x (0.20.0) counts the (cache rule, leaf) lookups of the scrape: per leaf, the cache rules up to
the one that ended the rule search. Exact for outcomes and for strings dropped for want of
`value:` (their rule is known) and for leaves no rule matched (every rule was tried); a leaf whose
`value:` or name came out unusable, or a value-dependent one, counts as if every rule had been
tried (jmx_exporter stops at the rule that dropped it).

1.x (1.6.0) caches per leaf what its rule search found when that was a cache rule's match or no
match at all, and counts the leaves it found in that cache: none on the first scrape, then those
leaves (a leaf new since the last poll is counted as found).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from kafka_jmx_sidecar.exporter.base.families import MemberOutcome
from kafka_jmx_sidecar.exporter.rule_engine.config import Rule
from kafka_jmx_sidecar.exporter.rule_engine.member_tables import DROPPED, TableCache
from kafka_jmx_sidecar.exporter.rule_engine.outcomes import UNMATCHED, BeanPlan, Volatile


class JmxCachedBeans:
    """The count for one config's rules in one naming mode."""

    def __init__(self, rules: Sequence[Rule], one_x: bool):
        self._cache_rule = [bool(r.cache) for r in rules]
        # _upto[i]: cache rules among the first i + 1
        self._upto, n = [], 0
        for rule in rules:
            n += bool(rule.cache)
            self._upto.append(n)
        self._one_x = one_x

    def count(self, poll: int, plans: Iterable[BeanPlan], tables: Iterable[TableCache],
              templates: Sequence[MemberOutcome]) -> int:
        """The count after poll number `poll`, which left these plans, table caches and templates."""
        upto = self._upto
        every = upto[-1] if upto else 0
        if not every:
            return 0
        if self._one_x:
            if poll <= 1:
                return 0
            cache_rule = self._cache_rule

            def weight(found: Any) -> int:
                if found.__class__ is Volatile:
                    found = found.fallback
                if found is UNMATCHED:
                    return 1
                rule = getattr(found, "rule", -1)
                return 1 if rule >= 0 and cache_rule[rule] else 0
            all_rules = 1
        else:
            def weight(found: Any) -> int:
                if found.__class__ is Volatile:
                    found = found.fallback
                rule = getattr(found, "rule", -1)
                return upto[rule] if rule >= 0 else every
            all_rules = every

        total = 0
        for plan in plans:
            for found in plan.numeric.values():
                total += weight(found)
            if plan.nested:
                total += sum(weight(found) for found in plan.nested.values())
            if plan.constants:  # kept per value seen: count each leaf once, by its latest value
                latest = {key[0]: found for key, found in plan.constants.items()}
                total += sum(weight(found) for found in latest.values())
        for cache in tables:
            for code, members in cache.groups:
                total += len(members) * weight(templates[code])
            rejected = sum(len(m) for _, m in cache.counted)
            total += (0 if self._one_x else every * rejected) + all_rules * cache.codes.count(DROPPED)
            total += sum(weight(v) for v in cache.volatile.values())
        return total
