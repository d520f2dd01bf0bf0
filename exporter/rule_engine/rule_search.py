"""The rule search on one leaf: the rules in order, the first that matches names the sample (or
drops it), as jmx_exporter does it.

Only a leaf's first sight runs it in full. A numeric leaf runs the value-blind rules once (see
`value_blindness`) and keeps the value-dependent rules before the first match that could ever
match it (see `prefilter.could_match`), re-run each poll as a `Volatile`; a string or boolean
leaf's search is final for its value. The texts each pattern requires pre-filter the rules, so
most never reach their regex.

A table's members (Kafka's per-partition gauges: 400,000 at 40,000 partitions) are searched rule
by rule over a block of them at once (`search_members`), to the same outcome: a rule none of the
block's match strings holds the required texts of is passed over for all of them at once.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from kafka_jmx_sidecar.exporter.rule_engine.alike import Alike
from kafka_jmx_sidecar.exporter.rule_engine.config import DEFAULT_RULE, Config, Rule
from kafka_jmx_sidecar.exporter.base.java_text import java_str, parse_java_double
from kafka_jmx_sidecar.exporter.base.model import BeanTable
from kafka_jmx_sidecar.exporter.rule_engine.leaves import Leaf, MatchStrings
from kafka_jmx_sidecar.exporter.rule_engine.naming import openmetrics_base, safe_name, snake_case
from kafka_jmx_sidecar.exporter.rule_engine.outcomes import (EMPTY_NAME, REJECTED_VALUE, UNMATCHED, UNSUPPORTED, Drop, Matched,
                                                             Outcome, Volatile)
from kafka_jmx_sidecar.exporter.rule_engine.prefilter import Prefilter, could_match, head_checks, possible, required_literals
from kafka_jmx_sidecar.exporter.rule_engine.value_blindness import value_blind


_BLOCK = 4096  # table members searched together: their match strings alive at once


class _Anywhere(dict):
    """Called with a text: whether it is in `joined`, each text searched once (the rules share
    their domain's text, and most of them need a text no member of a block has)."""

    __slots__ = ("joined",)

    def __init__(self, joined: str):
        super().__init__()
        self.joined = joined

    def __call__(self, text: str) -> bool:
        found = self.get(text)
        if found is None:
            found = self[text] = text in self.joined
        return found


class RuleSearch:
    """A config's rules, compiled for the search, and the texts its outcomes share."""

    def __init__(self, config: Config, naming: str):
        self.rules: tuple[Rule, ...] = config.rules or (DEFAULT_RULE,)
        self.blind: tuple[bool, ...] = tuple(value_blind(r) for r in self.rules)
        literals = tuple(required_literals(r) for r in self.rules)
        self._prefilter = Prefilter(literals)
        # (rule, blind, needed bits, one-of bit groups, head checks, which match string variant)
        self._table = tuple(
            (rule, blind, need, any_of, head_checks(lits), rule.attr_name_snake_case * 2 + rule.cache)
            for rule, blind, lits, (need, any_of) in zip(self.rules, self.blind, literals, self._prefilter.masks))
        # per rule: the texts its match string needs all of, and the groups it needs one of each
        texts = self._prefilter.texts
        self._required = tuple(
            (tuple([t for t, b in texts if need & b]),
             tuple(tuple([t for t, b in texts if g & b]) for g in any_of))
            for need, any_of in self._prefilter.masks)
        self._rule_index = {id(rule): i for i, rule in enumerate(self.rules)}
        self._unsupported = [Drop(UNSUPPORTED.reason, False, i) for i in range(len(self.rules))]
        # rules whose outcome is made from the groups of their match alone, not from the whole
        # matched text ($0): table members whose groups differ only in topic and partition share it
        self._from_groups = {id(r): not any(0 in t.parts for t in _templates(r)) for r in self.rules}
        self._lower_names = config.lowercase_output_name
        self._lower_labels = config.lowercase_output_label_names
        # a key of jmx_exporter 1.x: 0.20.0 does not know it, so 0.x naming ignores it
        self._infer_counters = config.infer_counter_type_from_name and naming == "1.x"
        self._one_x = naming == "1.x"
        # which table members every rule treats alike (None: some rule's regex is beyond that proof)
        self.alike = Alike.of(r.regex for r in self.rules if r.regex is not None)
        # One object per distinct help text, label and labels tuple: at 40,000 partitions the same
        # topic, partition number and help repeat across every per-partition family.
        self.shared: dict[Any, Any] = {}

    def share(self, value: Any) -> Any:
        return self.shared.setdefault(value, value)

    def search_member(self, leaf: Leaf) -> Any:
        """`plan_numeric` for a BeanTable member, short of its last step: a value-blind rule that
        matched with no value-dependent rule before it comes back as `Matched`, its outcome not
        made (the member tables make it once for the members whose match differs only in their
        topic and partition: see `shapes`); anything else as `plan_numeric` returns it. Labels
        are not kept in `shared`: the member tables keep one template for the members named
        alike, and 400,000 members' own label tuples would stay for as long as the engine (and
        those of deleted topics with them)."""
        return self._plan(leaf, False, True)

    def made(self, rule: Rule, strings: MatchStrings, match) -> Outcome | Drop:
        """What `rule`, matched as `match` (a re.Match or any object with its `group`), makes of
        the leaf of `strings`; labels not kept in `shared`."""
        return self._made(rule, strings, match, False)

    def search_members(self, table: BeanTable, indices: Sequence[int],
                       leaf: Callable[[int], Leaf]) -> Iterator[tuple]:
        """(i, `search_member` of member i) for the table's members at `indices`, in their order,
        run rule by rule over a block of members at once: a table's members differ only in
        topic, partition and value, so each member's match strings are built from the table's
        fixed text, and a rule's required texts are tested on them only where its regex would
        run. `Matched` results come without their strings (None: `leaf(i)` makes them when an
        outcome is made). A member that a value-dependent rule may claim is searched alone, as
        `search_member` (its `leaf(i)`)."""
        for start in range(0, len(indices), _BLOCK):  # one block's results alive at a time
            block = indices[start:start + _BLOCK]
            out: list = [None] * len(block)
            for k, found in self._search_block(table, block, leaf):
                out[k] = found
            yield from zip(block, out)

    def _search_block(self, table: BeanTable, block: Sequence[int],
                      leaf: Callable[[int], Leaf]) -> Iterator[tuple]:
        topics, topic, partition, values = table.topics, table.topic, table.partition, table.values
        start = _member_start(table)
        beans = [start + topics[topic[i]] + ", partition=" + str(partition[i]) + "><>" for i in block]
        heads: dict[bool, list[str]] = {}
        texts: dict[int, list[str]] = {}
        anywhere: dict[int, _Anywhere] = {}
        left = range(len(block))
        for (rule, blind, need, any_of, checks, variant), required in zip(self._table, self._required):
            if not left:
                break
            snake = rule.attr_name_snake_case
            head = heads.get(snake)
            if head is None:
                tail = (snake_case(table.attribute) if snake else table.attribute) + ": "
                head = heads[snake] = [bean + tail for bean in beans]
            if not blind:  # a value-dependent rule that may claim a member: searched alone
                keep = []
                for k in left:
                    if could_match(head[k], checks):
                        yield k, self.search_member(leaf(block[k]))
                    else:
                        keep.append(k)
                left = keep
                continue
            text = texts.get(variant)
            if text is None:
                text = texts[variant] = [h + "<cache>" for h in head] if rule.cache else \
                    [h + java_str(values[i]) for h, i in zip(head, block)]
                # a text in a member's is in the join (one across two members only keeps the rule)
                anywhere[variant] = _Anywhere("\x00".join(text))
            needed, one_of = required
            in_some = anywhere[variant]
            if not all(in_some(n) for n in needed) or not all(any(in_some(o) for o in g) for g in one_of):
                continue  # the rule's regex would run on no member of the block
            needed = [n for n in needed if n not in start]  # those in the fixed text are in every member's
            regex = rule.regex
            keep = []
            for k in left:
                t = text[k]
                if needed and not all([n in t for n in needed]) or one_of and not all(
                        [any([o in t for o in group]) for group in one_of]):
                    keep.append(k)
                    continue
                match = None if regex is None else regex.fullmatch(t)
                if regex is not None and match is None:
                    keep.append(k)
                else:
                    yield k, Matched(rule, None, match)
            left = keep
        for k in left:
            yield k, UNMATCHED

    def member_spans(self, table: BeanTable, i: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """Where member i's topic and partition are in its match strings (as `_search_block` makes them)."""
        t = len(_member_start(table))
        p = t + len(table.topics[table.topic[i]]) + len(", partition=")
        return (t, p - len(", partition=")), (p, p + len(str(table.partition[i])))

    def rule_index(self, rule: Rule) -> int:
        return self._rule_index[id(rule)]

    def from_groups(self, rule: Rule) -> bool:
        return self._from_groups[id(rule)]

    def plan_numeric(self, leaf: Leaf, share_labels: bool = True) -> Any:
        """Run the value-blind rules once; remember the value-dependent ones that come first and
        could match this leaf for some number."""
        return self._plan(leaf, share_labels, False)

    def _plan(self, leaf: Leaf, share_labels: bool, defer: bool) -> Any:
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
            match = self._match(rule, strings)
            if match is False:
                continue
            if defer and not volatile:
                return Matched(rule, strings, match)
            result = self._made(rule, strings, match, share_labels)
            return Volatile(leaf, tuple(volatile), result) if volatile else result
        return Volatile(leaf, tuple(volatile), UNMATCHED) if volatile else UNMATCHED

    def run_volatile(self, volatile: Volatile, value: Any) -> Any:
        """This poll's outcome of a value-dependent leaf now holding `value`."""
        leaf = volatile.leaf
        if leaf.value.__class__ is not value.__class__ or leaf.value != value:
            leaf = volatile.leaf = Leaf(leaf.domain, leaf.keys, leaf.path, leaf.attr, leaf.description, value)
        strings = MatchStrings(leaf)
        for entry in volatile.rules:
            result = self._try(entry, strings)
            if result is not None:
                return result
        return volatile.fallback

    def plan_constant(self, leaf: Leaf) -> Any:
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
    def _apply(self, rule: Rule, strings: MatchStrings, share_labels: bool = True) -> Outcome | Drop | None:
        """None when the rule does not match; otherwise what it makes of the leaf."""
        match = self._match(rule, strings)
        return None if match is False else self._made(rule, strings, match, share_labels)

    @staticmethod
    def _match(rule: Rule, strings: MatchStrings):
        """The rule's match on the leaf: False when it does not match, None when it has no pattern."""
        if rule.regex is None:
            return None
        match = rule.regex.fullmatch(strings.get(rule.attr_name_snake_case, rule.cache))
        return False if match is None else match

    def _made(self, rule: Rule, strings: MatchStrings, match, share_labels: bool) -> Outcome | Drop:
        leaf = strings.leaf
        text = strings.get(rule.attr_name_snake_case, rule.cache)
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
            labels = self._labels(rule, match)
        sample_type = rule.type
        if self._infer_counters and name.endswith("_total"):
            sample_type = "counter"
        if self._one_x:
            name = openmetrics_base(name)  # the family's name; counter series get `_total` when written
            labels = tuple(sorted(labels))
        share = self.share
        labels = tuple([share((share(k), share(v))) for k, v in labels])
        if share_labels:
            labels = share(labels)
        # the ObjectName text only matters to 1.x's collision label
        objectname = text[:text.rfind(":")] if self._one_x else None
        return Outcome(share(name), labels, sample_type, share(help_text), fixed, rule.value_factor, objectname,
                       self._rule_index[id(rule)])

    def _labels(self, rule: Rule, match) -> tuple:
        """A rule's `labels:` expanded; a pair whose name or value comes out empty is left out."""
        pairs = []
        for name_template, value_template in rule.labels:
            label = safe_name(name_template.expand(match))
            label_value = value_template.expand(match)
            if self._lower_labels:
                label = label.lower()
            if label and label_value:
                pairs.append((label, label_value))
        return tuple(pairs)

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


def _member_start(table: BeanTable) -> str:
    """A table member's match string up to its topic."""
    return table.domain + "<" + "".join([k + "=" + v + ", " for k, v in table.keys]) + "topic="


def _templates(rule: Rule) -> list:
    return [t for t in (rule.name, rule.help, rule.value, *(x for pair in rule.labels for x in pair)) if t is not None]


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
