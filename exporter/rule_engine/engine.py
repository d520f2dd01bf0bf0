"""The rule engine: MBeans -> leaves -> rules -> samples, as jmx_exporter does it, with the
outcome of each leaf's rule search kept from poll to poll.

Regexes run once per leaf, not once per poll: a leaf's outcome is cached by ObjectName and
attribute. The catch is that the match string ends with the value; `value_blindness` proves for
most rules that it does not matter, so in steady state a numeric leaf costs a dict lookup and
usually hands back the previous poll's Sample object. A rule that is not blind is re-run every
poll, but only for leaves whose name could ever satisfy it (see `rule_search`); string and
boolean leaves are cached per distinct value. `BeanTable` members are kept apart, as codes per
member (see `member_tables`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from kafka_jmx_sidecar.exporter.base.families import Family, TableSeries, scaled
from kafka_jmx_sidecar.exporter.base.model import BeanTable, JavaNumber, MBean, ObjectName, Sample
from kafka_jmx_sidecar.exporter.rule_engine import customizers
from kafka_jmx_sidecar.exporter.rule_engine.cached_beans import JmxCachedBeans
from kafka_jmx_sidecar.exporter.rule_engine.config import Config
from kafka_jmx_sidecar.exporter.base.java_text import java_str
from kafka_jmx_sidecar.exporter.rule_engine.customizers import MetricCustomizer
from kafka_jmx_sidecar.exporter.rule_engine.leaves import Leaf, flatten
from kafka_jmx_sidecar.exporter.rule_engine.member_tables import MemberTables
from kafka_jmx_sidecar.exporter.rule_engine.naming import NAMING_MODES, add_objectname_on_collisions, first_of_each, safe_name
from kafka_jmx_sidecar.exporter.rule_engine.outcomes import CONSTANTS_LIMIT, EMPTY_NAME, REJECTED_VALUE, BeanPlan, Drop, Outcome, Volatile
from kafka_jmx_sidecar.exporter.rule_engine.rule_search import RuleSearch
from kafka_jmx_sidecar.exporter.rule_engine.series import MergeOrders, assemble


@dataclass
class EngineStats:
    """Counters since the engine was built. The sidecar reports `rejected_values` and
    `jmx_cached_beans` as self-metrics; the others tell tests what the cache did."""

    cache_hits: int = 0  # leaves resolved without running a regex
    cache_misses: int = 0  # leaves for which at least one regex ran
    rejected_values: int = 0  # a `value:` that did not parse as a number
    empty_names: int = 0  # a `name:` that expanded to nothing
    duplicates: int = 0  # samples dropped because an earlier one had the same name and labels
    cached_leaves: int = 0  # leaves whose outcome is cached, after the last poll
    jmx_cached_beans: int = 0  # jmx_exporter's jmx_scrape_cached_beans for the last poll


class RuleEngine:
    """Compiled rules plus the match cache. One engine per loaded config; one poll at a time.

    `series()` and `samples()` take a whole poll: duplicates are judged within one call, and MBeans
    missing from a call leave the cache (as jmx_exporter evicts stale entries after each scrape).
    """

    def __init__(self, config: Config, naming: str = "0.x"):
        if naming not in NAMING_MODES:
            raise ValueError(f"naming must be one of {', '.join(NAMING_MODES)}, not {naming!r}")
        self.config = config
        self.naming = naming
        self._one_x = naming == "1.x"
        self.stats = EngineStats()
        self._search = search = RuleSearch(config, naming)
        self.rules, self.blind = search.rules, search.blind
        # bound once, as they run per leaf
        self._plan_numeric, self._plan_constant, self._run_volatile = (
            search.plan_numeric, search.plan_constant, search.run_volatile)
        self._lower_labels = config.lowercase_output_label_names
        # metricCustomizers are a key of jmx_exporter 1.x: 0.x naming ignores them
        self._customizers = config.metric_customizers if self._one_x else ()
        self._customizer_of: dict[tuple, Any] = {}  # (domain, keys) -> its customizer or None
        self._labelled: dict[tuple, tuple] = {}  # (outcome id, added labels) -> (outcome, with them)
        # MBean plans by (domain, keys): ObjectName's dataclass hash and equality run in Python,
        # a tuple's in C (and compare by identity when the JMX edge hands back the same objects).
        self._plans: dict[tuple, BeanPlan] = {}
        self._poll = 0
        self._cached = 0  # entries in all plans, kept up to date as they come and go
        self._tables = MemberTables(search, self._run_volatile, self._count_drop, self.stats, self._one_x)
        self._merges = MergeOrders()
        self._cached_beans = JmxCachedBeans(self.rules, self._one_x)

    def cached_leaves(self) -> int:
        """Leaves of MBeans whose outcome is cached (table members not included)."""
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
        exporter.rule_engine.series)."""
        rest: list[tuple] = []
        entry = rest.append
        if ranks is None:
            self._each(mbeans, lambda index, o, sample: entry((index, sample, o.key, o.objectname)))
        else:
            self._each(mbeans, lambda index, o, sample: entry((ranks[index], sample, o.key, o.objectname)))
        parts: list[TableSeries] = []
        for table in tables:
            parts.extend(self._tables.series(table, rest))
        if tables:
            rest.sort(key=lambda e: e[0])  # volatile table members were added at the end
        self._tables.forget_gone(tables)
        families, duplicates = assemble(rest, parts, self._one_x, self._merges)
        self.stats.duplicates += duplicates
        self.stats.cached_leaves = self._cached + self._tables.cached()
        self.stats.jmx_cached_beans = self._jmx_cached_beans()
        return families

    def prepare(self, table: BeanTable) -> None:
        """Run the rules on a table's members not seen yet, before the poll's series() call (a
        source calls it while it reads the next tables: see MemberTables.prepare)."""
        self._tables.prepare(table)

    def _jmx_cached_beans(self) -> int:
        tables = self._tables
        return self._cached_beans.count(self._poll, self._plans.values(), tables.caches.values(), tables.templates)

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
                plan = plans[(object_name.domain, object_name.keys)] = BeanPlan()
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
        if len(plans) > touched:
            self._forget_gone(poll)
        stats = self.stats
        stats.cached_leaves = self._cached
        stats.cache_hits += hits
        stats.cache_misses += misses

    def _forget_gone(self, poll: int) -> None:
        """Forget the MBeans this poll did not see."""
        self._plans = {k: p for k, p in self._plans.items() if p.poll == poll}
        self._cached = sum(len(p.numeric) + len(p.nested or ()) + len(p.constants or ()) for p in self._plans.values())
        search = self._search
        if len(search.shared) > 4 * self._cached + 1024:
            search.shared = {}  # texts of vanished MBeans; live outcomes keep theirs

    # --- slow paths
    def _numeric_slow(self, numeric: dict, object_name, attr, found: Any) -> tuple[Any, bool]:
        hit = found is not None and found.__class__ is not Volatile
        if found is None:
            leaf = Leaf(object_name.domain, object_name.keys, (), attr.name, attr.description, attr.value)
            found = numeric[attr.name] = self._plan_numeric(leaf)
            self._cached += 1
        if found.__class__ is Volatile:
            found = self._run_volatile(found, attr.value)
        if found.__class__ is not Outcome:
            self._count_drop(found)
        return found, hit

    def _other_attribute(self, plan: BeanPlan, object_name, attr, index: int, emit) -> tuple[int, int]:
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

    def _resolve_leaf(self, plan: BeanPlan, leaf: Leaf) -> tuple[Any, bool]:
        """Composite and table items, strings, booleans. A string's or boolean's outcome depends
        on the value, so it is cached per value; numbers are cached per identity like attributes."""
        value = leaf.value
        identity = (leaf.keys, leaf.path, leaf.attr)
        if value.__class__ is float or value.__class__ is int:
            if plan.nested is None:
                plan.nested = {}
            found = plan.nested.get(identity)
            hit = found is not None and found.__class__ is not Volatile
            if found is None:
                found = plan.nested[identity] = self._plan_numeric(leaf)
                self._cached += 1
            if found.__class__ is Volatile:
                found = self._run_volatile(found, value)
            return found, hit
        key = (identity, value.__class__, value, str(value) if value.__class__ is JavaNumber else None)
        if plan.constants is None:
            plan.constants = {}
        found = plan.constants.get(key)
        if found is not None:
            return found, True
        if len(plan.constants) >= CONSTANTS_LIMIT:
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

    # --- metricCustomizers (1.x)
    def _customizer(self, name: ObjectName) -> MetricCustomizer | None:
        key = (name.domain, name.keys)
        if key not in self._customizer_of:
            if len(self._customizer_of) > 100_000:
                self._customizer_of.clear()
            self._customizer_of[key] = customizers.first_for(self._customizers, name)
        return self._customizer_of[key]

    def _customized(self, plan: BeanPlan, mbean: MBean, index: int, customizer: MetricCustomizer,
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
            share = self._search.share
            pairs = share(tuple([share((share(k), share(v))) for k, v in sorted(pairs)]))
            found = self._labelled[key] = (outcome, Outcome(outcome.name, pairs, outcome.type, outcome.help,
                                                            outcome.fixed, outcome.factor, outcome.objectname,
                                                            outcome.rule))
        return found[1]
