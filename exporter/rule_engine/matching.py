"""The rule engine: MBeans -> leaves -> match strings -> rules -> samples, as jmx_exporter does it.

One leaf per number, boolean or string inside an attribute (composites and tables flattened the
way jmx_exporter's JmxScraper flattens them). Each leaf is matched against

    domain<k1=v1, k2=v2><path>attrName: value

by the rules in order; the first match names the sample (or drops it).

Regexes run once per leaf, not once per poll: a leaf's outcome is cached by ObjectName and
attribute. The catch is that the match string ends with the value, so a rule could match
`Value: 0` and not `Value: 1`. `value_blind` proves from a pattern's syntax that it cannot tell
two numbers apart (no match of it can end inside the number, and it does not look ahead), which
holds for every rule of Strimzi's and Confluent's files: in steady state a numeric leaf costs a
dict lookup and usually hands back the previous poll's Sample object. A rule that is not blind is
re-run every poll, but only for leaves whose name could ever satisfy it (`required_literals`);
string and boolean leaves are cached per distinct value. The same required texts pre-filter the
rules on a leaf's first sight, so most rules never reach their regex.

`BeanTable` members (Kafka's per-partition gauges, as columns) are matched the same way, once per
member list, and what the rules made of each is kept as a number into a small list of
`MemberOutcome`s (outcomes with the member's topic and partition as slots): a few bytes a member
instead of a plan, an outcome and a sample.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from exporter.model import BeanTable, JavaNumber, MBean, ObjectName, Sample
from exporter.rule_engine import customizers
from exporter.rule_engine.customizers import MetricCustomizer
from exporter.rule_engine.config import DEFAULT_RULE, Config, Rule, java_str, parse_java_double
from exporter.families import PARTITION, TOPIC, Family, MemberOutcome, TableSeries, scaled
from exporter.rule_engine.leaves import Leaf, MatchStrings, flatten
from exporter.rule_engine.naming import (NAMING_MODES, add_objectname_on_collisions, first_of_each, java_order,
                                   openmetrics_base, safe_name, series_key, snake_case)
from exporter.rule_engine.prefilter import Prefilter, could_match, head_checks, possible, required_literals
from exporter.rule_engine.series import assemble
from exporter.rule_engine.value_blindness import value_blind


# --- Outcomes -------------------------------------------------------------------------------

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


class _Volatile:
    """A numeric leaf some value-dependent rules may claim: they run each poll, in order, before
    the cached outcome of the first value-blind rule that matched."""

    __slots__ = ("leaf", "rules", "fallback")

    def __init__(self, leaf: Leaf, rules: tuple, fallback: Any):
        self.leaf, self.rules, self.fallback = leaf, rules, fallback


@dataclass
class EngineStats:
    """Counters since the engine was built (the sidecar reports them as self-metrics)."""

    cache_hits: int = 0  # leaves resolved without running a regex
    cache_misses: int = 0  # leaves for which at least one regex ran
    rejected_values: int = 0  # a `value:` that did not parse as a number
    empty_names: int = 0  # a `name:` that expanded to nothing
    duplicates: int = 0  # samples dropped because an earlier one had the same name and labels
    cached_leaves: int = 0  # leaves whose outcome is cached, after the last poll
    jmx_cached_beans: int = 0  # jmx_exporter's jmx_scrape_cached_beans for the last poll


class _BeanPlan:
    __slots__ = ("numeric", "nested", "constants", "poll")

    def __init__(self):
        self.poll = 0  # the last poll that saw this MBean
        self.numeric: dict[str, Any] = {}  # attribute name -> Outcome | Drop | _Volatile
        # made when first needed: most MBeans have neither, and an empty dict is 64 bytes
        self.nested: dict[tuple, Any] | None = None  # numbers inside composites and tables, by identity
        self.constants: dict[tuple, Any] | None = None  # (identity, value type, value) -> Outcome | Drop


# A table member's code: a template number (>= 0), or one of these.
_UNSEEN, _DROPPED, _REJECTED, _EMPTY, _VOLATILE = -1, -2, -3, -4, -5


class _TableCache:
    """What the rules made of each member of one BeanTable's member list."""

    __slots__ = ("order", "topic", "topics", "partition", "leaf", "codes", "volatile", "groups", "counted", "cached")

    def __init__(self, table: BeanTable, previous: "_TableCache | None" = None, order: Callable | None = None):
        self.order = order  # (template code, members) -> the members in exposition order; None: visiting order
        self.topic = table.topic  # the member list this is for (replaced, not changed, on a new list)
        self.topics, self.partition = table.topics, table.partition
        self.leaf = (table.attribute, table.description)  # with the name, all a rule sees of a member
        self.codes = array("i", [_UNSEEN]) * len(table)
        self.volatile: dict[int, _Volatile] = {}
        self.groups: list[tuple[int, array]] = []  # (template, members in visiting order)
        self.counted: list[tuple[int, list[int]]] = []  # rejected values and empty names, counted each poll
        self.cached = 0
        if previous is not None and previous.leaf == self.leaf:
            self._carry(previous)
            self.regroup(table)

    def _carry(self, old: "_TableCache") -> None:
        """Take the codes of the members also in `old` (the list before a names refresh): the
        regexes then run only for new members. Both lists are sorted by (topic, partition), so a
        topic is one run of members in each; a run whose partitions did not change is copied whole."""
        old_topic = {t: k for k, t in enumerate(old.topics)}
        codes, topic, partition = self.codes, self.topic, self.partition
        moved: dict[int, int] = {}  # old position -> new, for value-dependent members
        start = 0
        for k, name in enumerate(self.topics):
            end = bisect_left(topic, k + 1, start)
            j = old_topic.get(name)
            if j is not None:
                o_start = bisect_left(old.topic, j)
                o_end = bisect_left(old.topic, j + 1, o_start)
                if end - start == o_end - o_start and partition[start:end] == old.partition[o_start:o_end]:
                    codes[start:end] = old.codes[o_start:o_end]
                    if old.volatile:
                        moved.update(zip(range(o_start, o_end), range(start, end)))
                else:
                    at = {old.partition[o]: o for o in range(o_start, o_end)}
                    for i in range(start, end):
                        o = at.get(partition[i])
                        if o is not None:
                            codes[i] = old.codes[o]
                            moved[o] = i
            start = end
        for o, volatile in old.volatile.items():  # every _VOLATILE code copied has its entry here
            i = moved.get(o)
            if i is not None:
                self.volatile[i] = volatile

    @property
    def unseen(self) -> bool:
        return self.cached < len(self.codes)

    def regroup(self, table: BeanTable) -> None:
        by_code: dict[int, list[int]] = {}
        for i, code in enumerate(self.codes):
            if code >= 0 or code in (_REJECTED, _EMPTY):
                by_code.setdefault(code, []).append(i)
        rank = table.rank.__getitem__
        order = self.order
        self.groups = [(code, array("I", sorted(members, key=rank) if order is None else order(code, table, members)))
                       for code, members in by_code.items() if code >= 0]
        self.counted = [(code, members) for code, members in by_code.items() if code < 0]
        self.cached = len(self.codes) - self.codes.count(_UNSEEN)


_CONSTANTS_LIMIT = 256  # distinct string/boolean values remembered per MBean before starting over


class RuleEngine:
    """Compiled rules plus the match cache. One engine per loaded config; one poll at a time.

    `samples()` takes a whole poll: duplicates are judged within one call, and MBeans missing from
    a call leave the cache (as jmx_exporter evicts stale entries after each scrape).
    """

    def __init__(self, config: Config, naming: str = "0.x"):
        if naming not in NAMING_MODES:
            raise ValueError(f"naming must be one of {', '.join(NAMING_MODES)}, not {naming!r}")
        self.config = config
        self.naming = naming
        self.rules: tuple[Rule, ...] = config.rules or (DEFAULT_RULE,)
        self.blind: tuple[bool, ...] = tuple(value_blind(r) for r in self.rules)
        # Texts each pattern's matches must contain: a substring test rules most leaves out before
        # the regex (with its backtracking over several `(.+)`) has to run.
        literals = tuple(required_literals(r) for r in self.rules)
        self._prefilter = Prefilter(literals)
        # (rule, blind, needed bits, one-of bit groups, head checks, which match string variant)
        self._table = tuple(
            (rule, blind, need, any_of, head_checks(lits), rule.attr_name_snake_case * 2 + rule.cache)
            for rule, blind, lits, (need, any_of) in zip(self.rules, self.blind, literals, self._prefilter.masks))
        self._rule_index = {id(rule): i for i, rule in enumerate(self.rules)}
        self._unsupported = [Drop(UNSUPPORTED.reason, False, i) for i in range(len(self.rules))]
        # jmx_exporter's jmx_scrape_cached_beans counts (rule, leaf) pairs of its `cache: true`
        # rules that a scrape looked up: per leaf, the cache rules up to the one that ended the
        # rule search. _cache_rules_upto[i]: cache rules among the first i + 1.
        upto, n = [], 0
        for rule in self.rules:
            n += bool(rule.cache)
            upto.append(n)
        self._cache_rules_upto = upto
        self._lower_names = config.lowercase_output_name
        self._lower_labels = config.lowercase_output_label_names
        # a key of jmx_exporter 1.x: 0.20.0 does not know it, so 0.x naming ignores it
        self._infer_counters = config.infer_counter_type_from_name and naming == "1.x"
        # so is metricCustomizers (exporter/rule_engine/customizers.py)
        self._customizers = config.metric_customizers if naming == "1.x" else ()
        self._customizer_of: dict[tuple, Any] = {}  # (domain, keys) -> its customizer or None
        self._labelled: dict[tuple, tuple] = {}  # (outcome id, added labels) -> (outcome, with them)
        self._one_x = naming == "1.x"
        # MBean plans by (domain, keys): ObjectName's dataclass hash and equality run in Python,
        # a tuple's in C (and compare by identity when the JMX edge hands back the same objects).
        self._plans: dict[tuple, _BeanPlan] = {}
        self._poll = 0
        self._cached = 0  # entries in all plans, kept up to date as they come and go
        # One object per distinct help text, label and labels tuple: at 40,000 partitions the same
        # topic, partition number and help repeat across every per-partition family.
        self._shared: dict[Any, Any] = {}
        # BeanTables: what the rules made of each member, per table; templates shared by all
        self._tables: dict[tuple, _TableCache] = {}
        self._templates: list[MemberOutcome] = []
        self._template_index: dict[tuple, int] = {}
        self.stats = EngineStats()

    def cached_leaves(self) -> int:
        """Leaves whose outcome is cached (jmx_exporter's jmx_scrape_cached_beans)."""
        return self._cached

    def samples(self, mbeans: Iterable[MBean]) -> list[Sample]:
        """Apply the rules to one poll's MBeans: samples in MBean and attribute order, duplicates
        resolved for the naming mode."""
        entries: list[tuple] = []
        entry = entries.append
        if self._one_x:  # (sample, ObjectName text) pairs
            self._each(mbeans, lambda _index, outcome, sample: entry((sample, outcome.objectname)))
            return add_objectname_on_collisions(entries)
        self._each(mbeans, lambda _index, outcome, sample: entry((outcome.key, sample)))
        out, duplicates = first_of_each(entries)
        self.stats.duplicates += duplicates
        self.stats.jmx_cached_beans = self._jmx_cached_beans()
        return out

    def series(self, mbeans: Sequence[MBean], ranks: Sequence[int] | None = None,
               tables: Sequence[BeanTable] = ()) -> list[Family]:
        """Apply the rules to one poll: MBeans (`ranks`: each one's place in the visiting order,
        by default their order) and `BeanTable`s, as metric families ready to render (see
        exporter.series)."""
        rest: list[tuple] = []
        entry = rest.append
        if ranks is None:
            self._each(mbeans, lambda index, o, sample: entry((index, sample, o.key, o.objectname)))
        else:
            self._each(mbeans, lambda index, o, sample: entry((ranks[index], sample, o.key, o.objectname)))
        parts: list[TableSeries] = []
        for table in tables:
            parts.extend(self._table_series(table, rest))
        if tables:
            rest.sort(key=lambda e: e[0])  # volatile table members were added at the end
        live = {(t.domain, t.keys) for t in tables}
        if len(self._tables) > len(live):
            self._tables = {k: c for k, c in self._tables.items() if k in live}
        if len(self._templates) > 64:
            self._forget_templates()
        families, duplicates = assemble(rest, parts, self._one_x)
        self.stats.duplicates += duplicates
        self.stats.cached_leaves = self._cached + sum(c.cached for c in self._tables.values())
        self.stats.jmx_cached_beans = self._jmx_cached_beans()
        return families

    def _jmx_cached_beans(self) -> int:
        """jmx_exporter's jmx_scrape_cached_beans after this poll (0 without `cache: true` rules).

        0.x (0.20.0) counts the (cache rule, leaf) lookups of the scrape: per leaf, the cache rules
        up to the one that ended the rule search. Exact for outcomes and for strings dropped for
        want of `value:` (their rule is known) and for leaves no rule matched (every rule was
        tried); a leaf whose `value:` or name came out unusable, or a value-dependent one, counts
        as if every rule had been tried (jmx_exporter stops at the rule that dropped it).

        1.x (1.6.0) caches per leaf what its rule search found when that was a cache rule's match
        or no match at all, and counts the leaves it found in that cache: none on the first scrape,
        then those leaves (a leaf new since the last poll is counted as found)."""
        upto = self._cache_rules_upto
        every = upto[-1] if upto else 0
        if not every:
            return 0
        if self._one_x:
            if self._poll <= 1:
                return 0
            cache_rule = [bool(r.cache) for r in self.rules]

            def weight(found: Any) -> int:
                if found.__class__ is _Volatile:
                    found = found.fallback
                if found is UNMATCHED:
                    return 1
                rule = getattr(found, "rule", -1)
                return 1 if rule >= 0 and cache_rule[rule] else 0
            all_rules = 1
        else:
            def weight(found: Any) -> int:
                if found.__class__ is _Volatile:
                    found = found.fallback
                rule = getattr(found, "rule", -1)
                return upto[rule] if rule >= 0 else every
            all_rules = every

        total = 0
        for plan in self._plans.values():
            for found in plan.numeric.values():
                total += weight(found)
            if plan.nested:
                total += sum(weight(found) for found in plan.nested.values())
            if plan.constants:  # kept per value seen: count each leaf once, by its latest value
                latest = {key[0]: found for key, found in plan.constants.items()}
                total += sum(weight(found) for found in latest.values())
        templates = self._templates
        for cache in self._tables.values():
            for code, members in cache.groups:
                total += len(members) * weight(templates[code])
            rejected = sum(len(m) for _, m in cache.counted)
            total += (0 if self._one_x else every * rejected) + all_rules * cache.codes.count(_DROPPED)
            total += sum(weight(v) for v in cache.volatile.values())
        return total

    def _each(self, mbeans: Iterable[MBean], emit: Callable[[int, Outcome, Sample], None]) -> None:
        """`emit(index of the MBean, outcome, sample)` for every sample of every MBean, in MBean
        and attribute order; MBeans missing from the call leave the cache."""
        hits = misses = 0
        self._poll = poll = self._poll + 1
        plans = self._plans
        touched = 0
        for index, mbean in enumerate(mbeans):
            object_name = mbean.name
            plan = plans.get((object_name.domain, object_name.keys))
            if plan is None:
                plan = plans[(object_name.domain, object_name.keys)] = _BeanPlan()
            if plan.poll != poll:
                plan.poll = poll
                touched += 1
            if self._customizers:
                customizer = self._customizer(object_name)
                if customizer is not None:
                    h, m = self._customized(plan, mbean, index, customizer, emit)
                    hits += h
                    misses += m
                    continue
            numeric = plan.numeric
            for attr in mbean.attributes:
                value = attr.value
                if value.__class__ is not float and value.__class__ is not int:
                    h, m = self._other_attribute(plan, object_name, attr, index, emit)
                    hits += h
                    misses += m
                    continue
                # The steady state of a number: one dict lookup, a multiplication, and usually
                # the Sample of the previous poll.
                outcome = numeric.get(attr.name)
                if outcome.__class__ is Outcome:
                    hits += 1
                else:
                    outcome, hit = self._numeric_slow(numeric, object_name, attr, outcome)
                    if hit:
                        hits += 1
                    else:
                        misses += 1
                    if outcome.__class__ is not Outcome:
                        continue
                number = scaled(value, outcome.fixed, outcome.factor)
                sample = outcome.last
                if sample is None or sample.value != number:
                    sample = outcome.sample(number)
                emit(index, outcome, sample)
        if len(plans) > touched:  # some MBeans went away: forget them
            self._plans = {k: p for k, p in plans.items() if p.poll == poll}
            self._cached = sum(len(p.numeric) + len(p.nested or ()) + len(p.constants or ()) for p in self._plans.values())
            if len(self._shared) > 4 * self._cached + 1024:
                self._shared = {}  # texts of vanished MBeans; live outcomes keep theirs
        stats = self.stats
        stats.cached_leaves = self._cached
        stats.cache_hits += hits
        stats.cache_misses += misses

    # --- tables
    def _table_series(self, table: BeanTable, rest: list) -> list[TableSeries]:
        """The table's members as one TableSeries per template. Each member's rule outcome is
        found once per member list (the regexes run then) and kept as a template number; a
        member that value-dependent rules may claim is resolved each poll into `rest`."""
        key = (table.domain, table.keys)
        cache = self._tables.get(key)
        if cache is None or cache.topic is not table.topic:
            cache = self._tables[key] = _TableCache(table, cache, self._members_by_labels if self._one_x else None)
        present = table.present
        if not (cache.unseen and self._plan_table(table, cache)):
            self.stats.cache_hits += sum(present)
        frozen = table.frozen()
        for code, positions in cache.counted:
            for i in positions:
                if present[i]:
                    self._count_drop(REJECTED_VALUE if code == _REJECTED else EMPTY_NAME)
        for i, volatile in cache.volatile.items():
            if not present[i]:
                continue
            value = table.values[i]
            outcome = self._run_volatile(volatile, value)
            if outcome.__class__ is not Outcome:
                self._count_drop(outcome)
                continue
            rest.append((table.rank[i], outcome.sample(scaled(value, outcome.fixed, outcome.factor)),
                         outcome.key, outcome.objectname))
        return [TableSeries(frozen, self._templates[code], positions) for code, positions in cache.groups]

    def _members_by_labels(self, code: int, table: BeanTable, members: list[int]) -> list[int]:
        """1.x: a template's members in client_java's order of their labels. Their label names
        and fixed values are the template's, so the topic and partition slots, in the order of
        the labels, decide; each distinct topic and partition text is keyed once."""
        slots = [v for _, v in self._templates[code].labels if v is TOPIC or v is PARTITION]
        topic_keys = [java_order(t) for t in table.topics]
        partition_keys: dict[int, bytes] = {}
        topic, partition = table.topic, table.partition

        def part(i: int) -> bytes:
            p = partition[i]
            k = partition_keys.get(p)
            if k is None:
                k = partition_keys[p] = java_order(str(p))
            return k

        getters = [(lambda i: topic_keys[topic[i]]) if v is TOPIC else part for v in slots]
        if not getters:
            return members
        if len(getters) == 1:
            return sorted(members, key=getters[0])
        return sorted(members, key=lambda i: tuple([g(i) for g in getters]))

    def _forget_templates(self) -> None:
        """Drop the templates no member uses any more (topics deleted, when a rule puts the topic
        in the name), once they are most of them; the codes are renumbered."""
        used = sorted({code for cache in self._tables.values() for code, _ in cache.groups})
        if 2 * len(used) >= len(self._templates):
            return
        number = [-1] * len(self._templates)
        for new, old in enumerate(used):
            number[old] = new
        for cache in self._tables.values():
            cache.codes = array("i", [number[c] if c >= 0 else c for c in cache.codes])
            cache.groups = [(number[code], members) for code, members in cache.groups]
        self._templates = [self._templates[old] for old in used]
        self._template_index = {k: number[code] for k, code in self._template_index.items() if number[code] >= 0}

    def _plan_table(self, table: BeanTable, cache: "_TableCache") -> bool:
        """Run the rules on the present members not seen yet; False when there were none."""
        codes = cache.codes
        templates = self._template_index
        misses = 0
        for i in range(len(table)):
            if codes[i] != _UNSEEN or not table.present[i]:
                continue
            misses += 1
            leaf = Leaf(table.domain, table.member_keys(i), (), table.attribute, table.description, table.values[i])
            found = self._plan_numeric(leaf)
            if found.__class__ is _Volatile:
                codes[i] = _VOLATILE
                cache.volatile[i] = found
            elif found is REJECTED_VALUE:
                codes[i] = _REJECTED
            elif found is EMPTY_NAME:
                codes[i] = _EMPTY
            elif found.__class__ is not Outcome:
                codes[i] = _DROPPED
            else:
                topic, partition = leaf.keys[-2][1], leaf.keys[-1][1]
                labels = tuple([(k, TOPIC if v == topic else PARTITION if v == partition else v)
                                for k, v in found.labels])
                attr = found.objectname[found.objectname.rfind(">") + 1:] if found.objectname else table.attribute
                tkey = (found.name, labels, found.type, found.help, found.fixed, found.factor, attr, found.rule)
                code = templates.get(tkey)
                if code is None:
                    code = templates[tkey] = len(self._templates)
                    self._templates.append(MemberOutcome(found.name, labels, found.type, found.help,
                                                         found.fixed, found.factor, attr, found.rule))
                codes[i] = code
        if not misses:
            return False
        self.stats.cache_misses += misses
        self.stats.cache_hits += sum(table.present) - misses
        cache.regroup(table)
        return True
    # --- slow paths
    def _numeric_slow(self, numeric: dict, object_name, attr, found: Any) -> tuple[Any, bool]:
        hit = found is not None and found.__class__ is not _Volatile
        if found is None:
            leaf = Leaf(object_name.domain, object_name.keys, (), attr.name, attr.description, attr.value)
            found = numeric[attr.name] = self._plan_numeric(leaf)
            self._cached += 1
        if found.__class__ is _Volatile:
            found = self._run_volatile(found, attr.value)
        if found.__class__ is not Outcome:
            self._count_drop(found)
        return found, hit

    # --- metricCustomizers (1.x)
    def _customizer(self, name: ObjectName) -> MetricCustomizer | None:
        key = (name.domain, name.keys)
        if key not in self._customizer_of:
            if len(self._customizer_of) > 100_000:
                self._customizer_of.clear()
            self._customizer_of[key] = customizers.first_for(self._customizers, name)
        return self._customizer_of[key]

    def _customized(self, plan: _BeanPlan, mbean: MBean, index: int, customizer: MetricCustomizer,
                    emit) -> tuple[int, int]:
        """A customized MBean: its extra metrics, then its attributes, each through the rules as
        any attribute is, with the customizer's labels added to what comes out."""
        lower = self._lower_labels
        labels = customizers.label_pairs(customizer, mbean.attributes,
                                         lambda a: safe_name(a).lower() if lower else safe_name(a), java_str)
        if labels:
            def labelled(i: int, outcome: Outcome, sample: Sample) -> None:
                o = self._with_labels(outcome, labels)
                emit(i, o, o.sample(sample.value))
        else:
            labelled = emit
        hits = misses = 0
        for attr in customizer.extra_metrics + mbean.attributes:
            h, m = self._other_attribute(plan, mbean.name, attr, index, labelled)
            hits += h
            misses += m
        return hits, misses

    def _with_labels(self, outcome: Outcome, labels: tuple) -> Outcome:
        key = (id(outcome), labels)
        found = self._labelled.get(key)
        if found is None or found[0] is not outcome:
            if len(self._labelled) > 100_000:
                self._labelled.clear()
            rule = self.rules[outcome.rule] if outcome.rule >= 0 else None
            # default naming puts them after the key-property labels, a rule before its own
            pairs = outcome.labels + labels if rule is not None and rule.name is None else labels + outcome.labels
            share = self._share
            pairs = share(tuple([share((share(k), share(v))) for k, v in sorted(pairs)]))
            found = self._labelled[key] = (outcome, Outcome(outcome.name, pairs, outcome.type, outcome.help,
                                                            outcome.fixed, outcome.factor, outcome.objectname,
                                                            outcome.rule))
        return found[1]

    def _other_attribute(self, plan: _BeanPlan, object_name, attr, index: int, emit) -> tuple[int, int]:
        hits = misses = 0
        for leaf in flatten(object_name.domain, object_name.keys, (), attr.name, attr.description, attr.value):
            outcome, hit = self._resolve_leaf(plan, leaf)
            if hit:
                hits += 1
            else:
                misses += 1
            if outcome.__class__ is not Outcome:
                self._count_drop(outcome)
                continue
            value = leaf.value
            if outcome.fixed is None and (value is True or value is False):
                number = 1.0 if value else 0.0  # booleans: 1/0, valueFactor not applied
            else:
                number = scaled(value, outcome.fixed, outcome.factor)
            emit(index, outcome, outcome.sample(number))
        return hits, misses

    def _resolve_leaf(self, plan: _BeanPlan, leaf: Leaf) -> tuple[Any, bool]:
        """Composite and table items, strings, booleans. A string's or boolean's outcome depends
        on the value, so it is cached per value; numbers are cached per identity like attributes."""
        value = leaf.value
        identity = (leaf.keys, leaf.path, leaf.attr)
        if value.__class__ is float or value.__class__ is int:
            if plan.nested is None:
                plan.nested = {}
            found = plan.nested.get(identity)
            hit = found is not None and found.__class__ is not _Volatile
            if found is None:
                found = plan.nested[identity] = self._plan_numeric(leaf)
                self._cached += 1
            if found.__class__ is _Volatile:
                found = self._run_volatile(found, value)
            return found, hit
        key = (identity, value.__class__, value, str(value) if value.__class__ is JavaNumber else None)
        if plan.constants is None:
            plan.constants = {}
        found = plan.constants.get(key)
        if found is not None:
            return found, True
        if len(plan.constants) >= _CONSTANTS_LIMIT:
            self._cached -= len(plan.constants)
            plan.constants.clear()
        found = plan.constants[key] = self._plan_constant(leaf)
        self._cached += 1
        return found, False

    def _count_drop(self, drop: Drop) -> None:
        if drop is EMPTY_NAME:
            self.stats.empty_names += 1
        elif drop is REJECTED_VALUE:
            self.stats.rejected_values += 1

    def _plan_numeric(self, leaf: Leaf) -> Any:
        """Run the value-blind rules once; remember the value-dependent ones that come first and
        could match this leaf for some number."""
        volatile = []
        strings = MatchStrings(leaf)
        found = [-1, -1, -1, -1]  # required-text bits per match string variant, computed once
        for entry in self._table:
            rule, blind, need, any_of, checks, variant = entry
            if not blind:
                if could_match(strings.head(rule.attr_name_snake_case), checks):
                    volatile.append(entry)
                continue
            if need or any_of:
                bits = found[variant]
                if bits < 0:
                    bits = found[variant] = self._prefilter.found(
                        strings.get(rule.attr_name_snake_case, rule.cache))
                if bits & need != need or (any_of and not possible(bits, need, any_of)):
                    continue
            result = self._apply(rule, strings)
            if result is not None:
                return _Volatile(leaf, tuple(volatile), result) if volatile else result
        return _Volatile(leaf, tuple(volatile), UNMATCHED) if volatile else UNMATCHED

    def _run_volatile(self, volatile: _Volatile, value: Any) -> Any:
        leaf = volatile.leaf
        if leaf.value.__class__ is not value.__class__ or leaf.value != value:
            leaf = volatile.leaf = Leaf(leaf.domain, leaf.keys, leaf.path, leaf.attr, leaf.description, value)
        strings = MatchStrings(leaf)
        for entry in volatile.rules:
            result = self._try(entry, strings)
            if result is not None:
                return result
        return volatile.fallback

    def _plan_constant(self, leaf: Leaf) -> Any:
        """Strings and booleans: the whole rule search, final for this value."""
        strings = MatchStrings(leaf)
        for entry in self._table:
            result = self._try(entry, strings)
            if result is None:
                continue
            if result.__class__ is Outcome and result.fixed is None and isinstance(leaf.value, str):
                # matched, then dropped: only `value:` makes a string a number
                return self._unsupported[result.rule]
            return result
        return UNMATCHED

    def _try(self, entry: tuple, strings: MatchStrings) -> Outcome | Drop | None:
        rule, _blind, need, any_of, _checks, _variant = entry
        if (need or any_of) and not possible(
                strings.found(rule.attr_name_snake_case, rule.cache, self._prefilter), need, any_of):
            return None
        return self._apply(rule, strings)

    # --- one rule on one leaf
    def _apply(self, rule: Rule, strings: MatchStrings) -> Outcome | Drop | None:
        """None when the rule does not match; otherwise what it makes of the leaf."""
        leaf = strings.leaf
        text = strings.get(rule.attr_name_snake_case, rule.cache)
        match = None
        if rule.regex is not None:
            match = rule.regex.fullmatch(text)
            if match is None:
                return None
        fixed = None
        if rule.value is not None:
            fixed = parse_java_double(rule.value.expand(match))
            if fixed is None:
                return REJECTED_VALUE  # and the rule search stops, as in jmx_exporter
        if rule.name is None:
            name, labels = self._default_name(leaf, rule)
            help_text = default_help(leaf)
        else:
            name = safe_name(rule.name.expand(match))
            if not name:
                return EMPTY_NAME
            if self._lower_names:
                name = name.lower()
            help_text = rule.help.expand(match) if rule.help is not None else default_help(leaf)
            pairs = []
            for name_template, value_template in rule.labels:
                label = safe_name(name_template.expand(match))
                label_value = value_template.expand(match)
                if self._lower_labels:
                    label = label.lower()
                if label and label_value:
                    pairs.append((label, label_value))
            labels = tuple(pairs)
        sample_type = rule.type
        if self._infer_counters and name.endswith("_total"):
            sample_type = "counter"
        if self._one_x:
            name = openmetrics_base(name)  # the family's name; counter series get `_total` when written
            labels = tuple(sorted(labels))
        share = self._share
        labels = share(tuple([share((share(k), share(v))) for k, v in labels]))
        # the ObjectName text only matters to 1.x's collision label
        objectname = text[:text.rfind(":")] if self._one_x else None
        return Outcome(share(name), labels, sample_type, share(help_text), fixed, rule.value_factor, objectname,
                       self._rule_index[id(rule)])

    def _share(self, value: Any) -> Any:
        return self._shared.setdefault(value, value)

    def _default_name(self, leaf: Leaf, rule: Rule) -> tuple[str, tuple]:
        """`domain_<first key value>_<path>_<attr>`; the other keys become labels, in order."""
        keys = leaf.keys
        parts = [leaf.domain]
        if keys:
            parts.append(keys[0][1])
        parts.extend(leaf.path)
        parts.append(snake_case(leaf.attr) if rule.attr_name_snake_case else leaf.attr)
        name = safe_name("_".join(parts))
        if self._lower_names:
            name = name.lower()
        labels = []
        for key, value in keys[1:]:
            label = safe_name(key)
            labels.append((label.lower() if self._lower_labels else label, value))
        return name, tuple(labels)


def default_help(leaf: Leaf) -> str:
    """`<description> <domain>:name=<name>,type=<type>,attribute=<attr>` (`null` for a missing key;
    no description when there is none or when it just repeats the attribute's name)."""
    found: dict[str, str] = {}
    for key, value in leaf.keys:
        if key in ("name", "type"):
            found.setdefault(key, value)
    text = (f"{leaf.domain}:name={found.get('name', 'null')},type={found.get('type', 'null')},"
            f"attribute={leaf.attr}")
    if leaf.description is not None and leaf.description != leaf.attr:
        return leaf.description + " " + text
    return text
