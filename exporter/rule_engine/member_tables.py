"""What the rules made of `BeanTable` members (Kafka's per-partition gauges, as columns).

Members are matched as any leaf is, once per member list, and what the rules made of each is kept
as a number (a code) into a small list of `MemberOutcome`s (outcomes with the member's topic and
partition as slots): a few bytes a member instead of a plan, an outcome and a sample. The outcome
is made once for the members a rule matched alike (see `shapes`). A member that value-dependent
rules may claim is resolved each poll instead.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left
from itertools import product
from typing import Callable

from kafka_jmx_sidecar.exporter.base.families import PARTITION, TOPIC, MemberOutcome, TableSeries, scaled
from kafka_jmx_sidecar.exporter.base.model import BeanTable
from kafka_jmx_sidecar.exporter.rule_engine.leaves import Leaf, MatchStrings
from kafka_jmx_sidecar.exporter.rule_engine.naming import java_order
from kafka_jmx_sidecar.exporter.rule_engine.outcomes import EMPTY_NAME, REJECTED_VALUE, UNMATCHED, Matched, Outcome, Volatile
from kafka_jmx_sidecar.exporter.rule_engine.shapes import Shapes

# A table member's code: a template number (>= 0), or one of these.
UNSEEN, DROPPED, REJECTED, EMPTY, VOLATILE = -1, -2, -3, -4, -5


class TableCache:
    """What the rules made of each member of one BeanTable's member list."""

    __slots__ = ("order", "topic", "topics", "partition", "rank", "leaf", "codes", "volatile", "groups", "counted",
                 "cached", "planned")

    def __init__(self, table: BeanTable, previous: TableCache | None = None, order: Callable | None = None):
        self.order = order  # (template code, members) -> the members in exposition order; None: visiting order
        self.topic = table.topic  # the member list this is for (replaced, not changed, on a new list)
        self.topics, self.partition = table.topics, table.partition
        self.rank = table.rank  # the ranks the groups are in visiting order of
        self.leaf = (table.attribute, table.description)  # with the name, all a rule sees of a member
        self.codes = array("i", [UNSEEN]) * len(table)
        self.volatile: dict[int, Volatile] = {}
        self.groups: list[tuple[int, array]] = []  # (template, members in visiting order)
        self.counted: list[tuple[int, list[int]]] = []  # rejected values and empty names, counted each poll
        self.cached = 0
        self.planned = False  # planned by prepare() in this poll, before series()
        if previous is not None and previous.leaf == self.leaf:
            self._carry(previous)
            self.regroup(table)

    def _carry(self, old: TableCache) -> None:
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
        for o, volatile in old.volatile.items():  # every VOLATILE code copied has its entry here
            i = moved.get(o)
            if i is not None:
                self.volatile[i] = volatile

    @property
    def unseen(self) -> bool:
        return self.cached < len(self.codes)

    def regroup(self, table: BeanTable) -> None:
        by_code: dict[int, list[int]] = {}
        for i, code in enumerate(self.codes):
            if code >= 0 or code in (REJECTED, EMPTY):
                by_code.setdefault(code, []).append(i)
        self.rank = table.rank
        rank = table.rank.__getitem__
        order = self.order
        self.groups = [(code, array("I", sorted(members, key=rank) if order is None else order(code, table, members)))
                       for code, members in by_code.items() if code >= 0]
        self.counted = [(code, members) for code, members in by_code.items() if code < 0]
        self.cached = len(self.codes) - self.codes.count(UNSEEN)


def _key_values_kept(slotted: tuple, labels: tuple, fixed: set) -> tuple:
    """When several labels hold a slot (the member's topic or partition) and one of them is named
    like its ObjectName key (`topic`, `partition`), another (not itself named topic or partition)
    whose text is also a value of the
    table's own keys (`fixed`: the cluster-wide view's `leader=1` beside partition 1) keeps its
    text: it is that key's, and the member then shares its table's template."""
    out = None
    for slot, key in ((TOPIC, "topic"), (PARTITION, "partition")):
        held = [j for j, (_, v) in enumerate(slotted) if v is slot]
        if len(held) > 1 and any(slotted[j][0] == key for j in held):
            for j in held:
                if slotted[j][0] not in ("topic", "partition") and labels[j][1] in fixed:
                    out = out or list(slotted)
                    out[j] = labels[j]
    return slotted if out is None else tuple(out)


def template_key(found: Outcome, table: BeanTable, topic: str, partition: str) -> tuple:
    """An outcome as a member template's fields, the member's `topic` and `partition` made slots
    wherever a label holds one of them whole."""
    labels = tuple([(k, TOPIC if v == topic else PARTITION if v == partition else v) for k, v in found.labels])
    labels = _key_values_kept(labels, found.labels, {v for _, v in table.keys})
    attr = found.objectname[found.objectname.rfind(">") + 1:] if found.objectname else table.attribute
    return (found.name, labels, found.type, found.help, found.fixed, found.factor, attr, found.rule)


class MemberTables:
    """The TableCache of each BeanTable of the last poll, and the member outcomes (templates) all
    of them share. `search` is the rule search (its `search_member` and `made`), `run_volatile`
    its; `count_drop` and `stats` the engine's."""

    def __init__(self, search, run_volatile: Callable, count_drop: Callable, stats, one_x: bool):
        self._search, self._run_volatile, self._count_drop = search, run_volatile, count_drop
        self._stats = stats
        self._order = self._members_by_labels if one_x else None
        self.caches: dict[tuple, TableCache] = {}
        self.templates: list[MemberOutcome] = []
        self._template_index: dict[tuple, int] = {}

    def series(self, table: BeanTable, rest: list) -> list[TableSeries]:
        """The table's members as one TableSeries per template. Each member's rule outcome is
        found once per member list (the regexes run then) and kept as a template number; a
        member that value-dependent rules may claim is resolved each poll into `rest`."""
        cache = self._cache(table)
        present = table.present
        planned, cache.planned = cache.planned, False
        if not (cache.unseen and self._plan(table, cache)):
            if not planned:  # else counted by prepare()
                self._stats.cache_hits += sum(present)
            if cache.rank is not table.rank and cache.order is None:
                # a names refresh that kept the member list (other names came or went) ranks the
                # members anew, and jmx_exporter's HashSet may visit them in another order
                cache.regroup(table)
        frozen = table.frozen()
        for code, positions in cache.counted:
            for i in positions:
                if present[i]:
                    self._count_drop(REJECTED_VALUE if code == REJECTED else EMPTY_NAME)
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
        return [TableSeries(frozen, self.templates[code], positions) for code, positions in cache.groups]

    def prepare(self, table: BeanTable) -> None:
        """Run the rules on the table's members not seen yet, ahead of series(), which then
        finds them planned: the source calls it as each table's values come in, while the next
        ones are read (a first poll's members would otherwise all wait for the last read)."""
        cache = self._cache(table)
        if cache.unseen and self._plan(table, cache):
            cache.planned = True  # counted here: series() counts no hits for it this poll

    def _cache(self, table: BeanTable) -> TableCache:
        key = (table.domain, table.keys)
        cache = self.caches.get(key)
        if cache is None or cache.topic is not table.topic:
            cache = self.caches[key] = TableCache(table, cache, self._order)
        return cache

    def forget_gone(self, tables: list[BeanTable]) -> None:
        """Forget the tables not in this poll, and then the templates no member uses any more."""
        live = {(t.domain, t.keys) for t in tables}
        if len(self.caches) > len(live):
            self.caches = {k: c for k, c in self.caches.items() if k in live}
        if len(self.templates) > 64:
            self._forget_templates()

    def cached(self) -> int:
        """Members whose outcome is known."""
        return sum(c.cached for c in self.caches.values())

    def _plan(self, table: BeanTable, cache: TableCache) -> bool:
        """Run the rules on the present members not seen yet; False when there were none. Of
        members no rule can tell apart (`alike`), the first is searched, and the others take its
        code when its outcome stands for them (`_stands_for_its_class`)."""
        codes, present = cache.codes, table.present
        unseen = [i for i in range(len(table)) if codes[i] == UNSEEN and present[i]]
        if not unseen:
            return False
        shapes = Shapes(self._search, table, template_key, self._code_of)
        ambiguous: list[tuple[int, Outcome]] = []
        alike = self._search.alike
        classes = alike.classes(table, unseen) if alike is not None else None
        if classes is None or len(classes) == len(unseen):
            self._search_into(table, cache, unseen, shapes, ambiguous)
        else:
            firsts = self._search_into(table, cache, [c[0] for c in classes], shapes, ambiguous)
            variable: set[str] | None = None
            rest = []
            for members in classes:
                if len(members) == 1:
                    continue
                i = members[0]
                if variable is None:  # the texts a member's topic or partition may be
                    variable = set(table.topics) | {str(p) for p in set(table.partition)}
                if self._stands_for_its_class(table, shapes, i, firsts[i], variable):
                    code = codes[i]
                    for j in members[1:]:
                        codes[j] = code
                else:
                    rest += members[1:]
            if rest:
                rest.sort()
                self._search_into(table, cache, rest, shapes, ambiguous)
        for i, found in ambiguous:  # after the others: see _template_code
            codes[i] = self._template_code(found, table, i)
        self._stats.cache_misses += len(unseen)
        self._stats.cache_hits += sum(present) - len(unseen)
        cache.regroup(table)
        return True

    def _search_into(self, table: BeanTable, cache: TableCache, indices: list[int], shapes: Shapes,
                     ambiguous: list[tuple[int, Outcome]]) -> dict[int, object]:
        """Search the members at `indices` and keep their codes (a member whose topic is named like
        its partition number into `ambiguous`); what the search found of each."""
        codes = cache.codes
        out: dict[int, object] = {}

        def leaf(i: int) -> Leaf:
            return Leaf(table.domain, table.member_keys(i), (), table.attribute, table.description,
                        table.values[i])

        for i, found in self._search.search_members(table, indices, leaf):
            out[i] = found
            if found.__class__ is Matched:
                shape, code = shapes.code(found, i)
                if code is not None:
                    codes[i] = code
                    continue
                found = shapes.made(Matched(found.rule, MatchStrings(leaf(i)), found.match), i, shape)
            if found.__class__ is Volatile:
                codes[i] = VOLATILE
                cache.volatile[i] = found
            elif found.__class__ is Outcome and table.topics[table.topic[i]] == str(table.partition[i]):
                ambiguous.append((i, found))
            else:
                codes[i] = self._code_of(found, table, i)
        return out

    def _stands_for_its_class(self, table: BeanTable, shapes: Shapes, i: int, found, variable: set[str]) -> bool:
        """Whether member i's code is every member's of its class: nothing matched it, or a shape
        whose template stands for all its members (`shapes`) did, each group of the match being
        the topic, the partition or fixed text that is neither (the others' match has the same
        spans: their groups then take the same slots)."""
        if found is UNMATCHED:
            return True
        if found.__class__ is not Matched or shapes.known(found, i) is None:
            return False
        if found.match is None:
            return True
        (t0, t1), (p0, p1) = self._search.member_spans(table, i)
        for g, (a, b) in enumerate(found.match.regs[1:], 1):
            if a < 0 or (a, b) == (t0, t1) or (a, b) == (p0, p1):
                continue
            if b > t0 and a < t1 or b > p0 and a < p1 or found.match.group(g) in variable:
                return False
        return True

    def _code_of(self, found, table: BeanTable, i: int) -> int:
        """Member i's code for what the rules made of it (not a Volatile)."""
        if found is REJECTED_VALUE:
            return REJECTED
        if found is EMPTY_NAME:
            return EMPTY
        if found.__class__ is not Outcome:
            return DROPPED
        return self._template_code(found, table, i)

    def _template_code(self, found: Outcome, table: BeanTable, i: int) -> int:
        """The template of member i's outcome: the member's topic and partition made slots, so
        that members named alike share it. A topic named like a partition number (topic "0",
        partition 0) leaves it open which label holds which; such a member takes a reading that
        the table's other members already gave a template (planned first for that), so that it
        does not stand apart in a template of its own (and make its family expanded, see
        exporter.rule_engine.series)."""
        topic, partition = table.topics[table.topic[i]], str(table.partition[i])
        tkey = template_key(found, table, topic, partition)
        templates = self._template_index
        if topic == partition:
            name, labels, *rest = tkey
            both = [k for k, (_, v) in enumerate(labels) if v is TOPIC]
            for slots in product((TOPIC, PARTITION), repeat=len(both)):
                reading = list(labels)
                for k, slot in zip(both, slots):
                    reading[k] = (labels[k][0], slot)
                code = templates.get((name, tuple(reading), *rest))
                if code is not None:
                    return code
        code = templates.get(tkey)
        if code is None:
            code = templates[tkey] = len(self.templates)
            self.templates.append(MemberOutcome(*tkey))
        return code

    def _members_by_labels(self, code: int, table: BeanTable, members: list[int]) -> list[int]:
        """1.x: a template's members in client_java's order of their labels. Their label names
        and fixed values are the template's, so the topic and partition slots, in the order of
        the labels, decide; each distinct topic and partition text is keyed once."""
        slots = [v for _, v in self.templates[code].labels if v is TOPIC or v is PARTITION]
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
        used = sorted({code for cache in self.caches.values() for code, _ in cache.groups})
        if 2 * len(used) >= len(self.templates):
            return
        number = [-1] * len(self.templates)
        for new, old in enumerate(used):
            number[old] = new
        for cache in self.caches.values():
            cache.codes = array("i", [number[c] if c >= 0 else c for c in cache.codes])
            cache.groups = [(number[code], members) for code, members in cache.groups]
        self.templates = [self.templates[old] for old in used]
        self._template_index = {k: number[code] for k, code in self._template_index.items() if number[code] >= 0}
