"""How the members of Kafka's per-partition families are read: with as few queries and reads as
the values allow.

How a family is queried. A query costs a scan of the MBean domain inside the broker (about
0.2 s at 40,000 partitions), whatever it returns, plus about 15 us per name it returns; a read
costs one round trip (about 0.1-0.2 ms). So each family costs as few queries and returned names
as its values allow. The previous poll's two most common values, `common` then `second` (0 and
nothing on the first poll), say what to ask:

  1. `Value != common`: the members holding anything else (for the health flags: usually none);
     when they are few, each is read and that is all. Families of one domain and type sharing
     `common` (Kafka's partition gauges) are asked together, in one query of `domain:type=T,*`;
  2. when they are many (the replica counts: the partitions led here),
     `Value != common and Value != second`: the members holding neither (usually none), asked
     together for the families of one domain and type (the two replica counts: one query);
  3. members of (1) not in (2) that held `second` at the last poll hold it still; the others of
     (1) and all of (2) are read one by one, unless they are many (leadership moved), in which
     case `Value == second` tells which hold it and only the rest are read. With no `second`
     yet (the first poll), one query per value (`Value == v`) does that, until the members left
     are fewer than a query's worth of reads: first the value most of a few members read before
     (1), spread over the family, hold besides 0; then the value most of a few of those left
     hold, then the small values up to the catalog's maximum for the family.

The queries that need no other's answer ((1); (2) when the last poll's (1) returned many; the
first poll's likeliest value) are asked at once, one per connection at a time: the broker scans
for each on a thread of its own. Members (1) did not return hold `common`. Every value served is
the MBean's value at some moment of the poll, except after two changes of one MBean within the
poll interval (`second`, something else, `common` again around (2)). An MBean whose attribute the
query cannot evaluate is served as `common`, as it was served as 0 before.

Families of other numbers (sizes, offsets, lags: `number`) are read member by member, unless the
last poll (on the first poll, a few members read, spread over the family) says that a query for
the members not holding the common value, and reads of those alone, cost less than reading every
member (`queried`): LastStableOffsetLag (0 but for open
transactions) joins the health flags' query, which the broker evaluates on its members anyway
(from the first poll on, asked `!= 0` before anything is learned);
the Log gauges are asked together, one query of `kafka.log:type=Log,*`, each for its own common
value (NumLogSegments 1, an empty log's 0). Step (1) alone then: the members it returns are read.
A shared query whose families returned many names at the last poll (busy brokers' Log gauges) is
asked in parts, a few families each: the JVM holds a query's whole answer at once.
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.source.family import Family, family_pattern
from kafka_jmx_sidecar.exporter.source.jmx import JmxClient
from kafka_jmx_sidecar.exporter.source.jmx.client import ANSWER_MOST
from kafka_jmx_sidecar.exporter.source.jmx.convert import MISSING
from kafka_jmx_sidecar.exporter.source.jmx.queries import MemberQuery
from kafka_jmx_sidecar.exporter.source.query_costs import QueryCosts

# Members read on the first poll to learn which value most of those off the common one hold.
_SAMPLE = 16
# Members of a family of numbers read on the first poll to guess whether a query is worth it.
SAMPLE_NUMBERS = 64
# A family this small is read, not queried: a query scans the whole domain.
QUERY_MIN_MEMBERS = 8


class Answers:
    """What the queries started at once (FamilyReads.ask) answered, per family key: step (1), step
    (2), and the first poll's `Value == v` (v, positions); each answer is taken when a family
    needs it (FamilyReads.read_family), so that one family is served while the others' are asked.
    `pending`: (started queries, index, what to do with its answer, the families it is about, and
    their members when it was started before they were listed)."""

    __slots__ = ("others", "unusual", "holding", "pending")

    def __init__(self) -> None:
        self.others: dict[tuple, list[int]] = {}
        self.unusual: dict[tuple, set[int]] = {}
        self.holding: dict[tuple, tuple[Any, list[int]]] = {}
        self.pending: list[tuple[Any, int, Callable[[list], None], set]] = []


class FamilyReads:
    """Serves each family's members a poll: what was learned of the values (`common`, per family
    key: the last poll's two most common numbers) and of the costs of a query and of a read."""

    def __init__(self, client: JmxClient):
        self.client = client
        self.common: dict[tuple, tuple[Any, Any]] = {}
        self.costs = QueryCosts()
        self._answered: dict[tuple, int] = {}  # family key -> names its step (1) returned last
        self._ahead: dict[tuple, Any] = {}  # (pattern, terms) -> a step (1) started alone before the listing

    def read_members(self, f: Family, positions: list[int] | None) -> list[Any]:
        """The values of f's members at `positions` (None: all), one getAttributes each."""
        started = time.monotonic()
        values = self.client.read_members(f.members, positions, "Value")
        if len(values) >= 100:
            self.costs.note_reads(time.monotonic() - started, len(values))
        return values

    def read_all(self, f: Family) -> None:
        self.fill(f, self.read_members(f, None))

    def fill(self, f: Family, values: list[Any]) -> None:
        """Serve every member of f the value read for it (convert.MISSING: gone); a `number`
        family learns its common value and how many members hold another."""
        self._serve_read(f, values)
        f.base = None  # every member served: a query's next poll serves every member again
        if f.number:
            counts = Counter(v for v in values if v is not MISSING)
            gone = len(values) - sum(counts.values())
            self._learn(f, counts.most_common(1)[0][0] if counts else 0, {}, gone, counts)

    def _serve_read(self, f: Family, values: list[Any]) -> None:
        t = f.table
        column, present, integral = t.values, t.present, t.integral
        for i, v in enumerate(values):
            if v.__class__ is int and integral or v.__class__ is float and not integral:
                column[i] = v
                present[i] = 1
            elif v is MISSING:
                present[i] = 0
            else:
                f.serve(i, v)
                column, integral = t.values, t.integral

    def _query(self, f: Family, op: str, value: Any, also: tuple = ()) -> Any:
        """Positions of the members for which `Value op value` (and `also`) holds: one query."""
        return self._timed(lambda: self.client.query_members(f.pattern, [f.members], "Value", op, value, also=also))[0]

    def _timed(self, ask) -> list:
        """ask(): one query's positions per family, its cost noted."""
        started = time.monotonic()
        hits = ask()
        self.costs.note_query(time.monotonic() - started, sum(len(h) for h in hits))
        return hits

    def queried(self, families: list[Family]) -> list[Family]:
        """The families asked by query this poll: the health flags and counts always; a `number`
        family when, by the last poll's values, the reads a query for the members not holding
        its common value saves cost more than the names it returns, and (asked with no flag of
        its domain and type) than a query of its own besides."""
        out = [f for f in families if f.max_value is not None]
        flagged = {f.key[:2] for f in out}
        read, scan = self.costs.read_seconds, self.costs.query_seconds
        candidates: dict[tuple, list[tuple[float, Family]]] = {}
        for f in families:
            if f.number and f.unusual is None and f.key[:2] in flagged:
                out.append(f)  # asked `!= 0` with the flags (LastStableOffsetLag): costs only its few names
                continue
            if f.number and f.unusual is None and len(f.table) >= 4 * SAMPLE_NUMBERS:
                self._sample(f)  # the first poll: a few members stand for the family
            if not f.number or f.unusual is None:
                continue  # nothing learned yet: read, which learns
            gain = (len(f.table) - f.unusual) * read - f.unusual * self.costs.hit_seconds
            if gain > 0:
                candidates.setdefault(f.key[:2], []).append((gain, f))
        for group, gains in candidates.items():
            if group in flagged or sum(g for g, _ in gains) > scan:
                out += [f for _, f in gains]
        return out

    def _sample(self, f: Family) -> None:
        """Nothing learned of f yet (the first poll): a few members read, spread over it, stand
        for it, so that a family most of whose members hold one value (an idle broker's segment
        counts, start offsets, fetcher lags) is queried from the first poll on, not read whole.
        The poll then learns the family's real counts."""
        size = len(f.table)
        values = [v for v in self.read_members(f, list(range(0, size, size // SAMPLE_NUMBERS))[:SAMPLE_NUMBERS])
                  if v.__class__ is int or v.__class__ is float]
        if values:
            common, held = Counter(values).most_common(1)[0]
            self.common[f.key] = (common, None)
            # a value one member holds says nothing of the others: all count as off it
            f.unusual = size - held * size // len(values) if held > 1 else size
            self._answered[f.key] = f.unusual  # what its query will return: the parts are cut by it

    def ask(self, families: list[Family], complete: set[tuple[str, str]], reading: int = 0) -> Answers:
        """Every query of the poll that needs no other's answer, started at once (one per
        connection at a time): step (1) of every family; step (2) of those whose step (1) returned
        many names at the last poll; on the first poll, `Value == v` of a family most of whose
        members off the common value hold v by a few of them read. read_family asks what else it
        needs. While more than a query's worth of MBeans are `reading` meanwhile (Strimzi's
        rules), one query at a time: the reads keep the connections and the broker busy, and a
        second query at once only contends with them (a poll of 10,000 partitions on the
        simulator took 10% longer).

        Steps (1) and (2) are asked once for the families of one domain and type (_step_one_shapes,
        in parts when their last answers add up past ANSWER_MOST names: _parts): the scan of the
        domain, most of a query's cost, is paid once instead of once per family."""
        out = Answers()
        groups: dict[tuple, list[Family]] = {}
        for f in families:
            groups.setdefault(f.key[:2], []).append(f)
        asks: list[tuple[MemberQuery, Callable[[list], None]]] = []
        for (domain, type_), group in groups.items():
            asks += self._step_one(f"{domain}:type={type_},*", group, (domain, type_) in complete, out)
            asks += self._step_two(f"{domain}:type={type_},*", group, out)
        try:
            started = self._start(asks, out, at_once=1 if reading > self.costs.reads_per_query() else None)
            self.forget_ahead()
            self._start(self._first_guesses(families, out), out, started)  # its reads overlap the queries
        except BaseException:
            self.drop(out)
            raise
        return out

    def _start(self, asks: list[tuple[MemberQuery, Callable[[list], None]]], out: Answers, share: Any = None,
               at_once: int | None = None) -> Any:
        """`share`: queries started before, whose bound holds for these too."""
        fresh = []
        for q, land in asks:
            ahead = self._ahead.pop((q.pattern, q.terms), None)
            if ahead is None:
                fresh.append((q, land))
            else:  # started before the families were listed: their answer is taken with them
                out.pending.append((ahead, 0, land, {m.family for m in q.families}, q.families))
        if not fresh:
            return share
        started = self.client.start_queries([q for q, _ in fresh], share, at_once)
        out.pending += [(started, k, land, {m.family for m in q.families}, None) for k, (q, land) in enumerate(fresh)]
        return started

    def _take(self, asked: Answers, f: Family) -> None:
        """Every answer started before the last one about f, in their order."""
        family = f.members.family
        last = max((i for i, p in enumerate(asked.pending) if family in p[3]), default=-1)
        for started, k, land, _, families in asked.pending[:last + 1]:
            hits, seconds = self.client.query_answer(started, k, families)
            self.costs.note_query(seconds, sum(len(h) for h in hits))
            land(hits)
        del asked.pending[:last + 1]

    def drop(self, asked: Answers) -> None:
        """Give up the queries started for `asked` not answered yet (a poll that failed)."""
        for started in {id(p[0]): p[0] for p in asked.pending}.values():
            self.client.cancel_queries(started)
        asked.pending.clear()

    def _step_one(self, pattern: str, group: list[Family], complete: bool, out: Answers) -> list:
        parts = self._parts(group)
        shapes = self._step_one_shapes(pattern, [[f.key for f in part] for part in parts], complete)
        queries = [MemberQuery(shape, tuple(f.members for f in part), "Value", terms, self._expected(part))
                   for (shape, terms), part in zip(shapes, parts)]

        def land(part: list[Family], hits: list) -> None:
            for f, positions in zip(part, hits):
                out.others[f.key] = list(positions)
                self._answered[f.key] = len(positions)
        return [(q, lambda hits, part=part: land(part, hits)) for q, part in zip(queries, parts)]

    def _step_one_shapes(self, pattern: str, parts: list[list[tuple]], complete: bool) -> list[tuple[str, tuple]]:
        """Step (1)'s query of each part of one domain and type's family keys: (its pattern, its
        terms). One `Value != common` over `pattern` (`domain:type=T,*`) when they are one part
        sharing `common` and every family of the domain and type (`complete`); else each
        family's `Value != its common` (its name pattern in the query)."""
        keys = [k for part in parts for k in part]
        commons = {k: self.common.get(k, (0, None))[0] for k in keys}
        first = commons[keys[0]]
        if len(parts) == 1 and (len(keys) < 2 or complete and all(
                c == first and type(c) is type(first) for c in commons.values())):
            return [(pattern if len(keys) > 1 else family_pattern(keys[0]), ((None, (("!=", first),)),))]
        return [(pattern, tuple((family_pattern(k), (("!=", commons[k]),)) for k in part)) for part in parts]

    def ask_ahead(self, groups: dict[tuple[str, str], tuple[list[tuple], bool]]) -> None:
        """Start step (1) of the families of `groups` ((domain, type) -> their keys, and whether
        they are every family of it) before they are listed, as ask() will ask it when nothing
        was answered for them yet (the first poll): the broker scans for it while the names are
        listed, where it would scan after. ask() takes the answer of the query it would ask, and
        gives up the others."""
        self.forget_ahead()
        asks = [MemberQuery(shape, None, "Value", terms)
                for (domain, type_), (keys, complete) in groups.items() if not any(k in self._answered for k in keys)
                for shape, terms in self._step_one_shapes(f"{domain}:type={type_},*", [keys], complete)]
        # each on its own: one not taken is given up alone
        self._ahead = {(q.pattern, q.terms): self.client.start_queries([q]) for q in asks}

    def forget_ahead(self) -> None:
        """Give up the queries ask_ahead() started that ask() did not take."""
        for started in self._ahead.values():
            self.client.cancel_queries(started)
        self._ahead = {}

    def _step_two(self, pattern: str, group: list[Family], out: Answers) -> list:
        rpq = self.costs.reads_per_query()
        asked = [f for f in group if f.max_value is not None and self.common.get(f.key, (0, None))[1] is not None
                 and self._answered.get(f.key, 0) > rpq]
        if not asked:
            return []
        tests = [(f.pattern, tuple(("!=", v) for v in self.common[f.key])) for f in asked]
        q = MemberQuery(pattern if len(asked) > 1 else asked[0].pattern, tuple(f.members for f in asked), "Value",
                        tuple(tests) if len(asked) > 1 else ((None, tests[0][1]),))

        def land(hits: list) -> None:
            for f, positions in zip(asked, hits):
                out.unusual[f.key] = set(positions)
        return [(q, land)]

    def _first_guesses(self, families: list[Family], out: Answers) -> list:
        """On the first poll (nothing learned of a family of small values), `Value == v` when most
        of a few members read, spread over the family, that do not hold 0 hold v, and they stand
        for more members than a query's worth of reads (the replica counts of the partitions led
        here hold the replication factor). Not of the 0/1 flags: most members of a healthy broker
        hold 0, and the members read would only delay the counts' query."""
        rpq = self.costs.reads_per_query()
        asks = []
        for f in families:
            size = len(f.table)
            if (f.max_value or 0) < 2 or f.key in self.common or size <= rpq or size < 4 * SAMPLE_NUMBERS:
                continue
            sample = self.read_members(f, list(range(0, size, max(1, size // SAMPLE_NUMBERS)))[:SAMPLE_NUMBERS])
            seen = Counter(v for v in sample if v.__class__ is int and v != 0).most_common(1)
            if not seen or seen[0][1] < 2 or seen[0][1] * size // len(sample) <= rpq:
                continue
            v, held = seen[0]
            asks.append((MemberQuery(f.pattern, (f.members,), "Value", ((None, (("==", v),)),), held * size // len(sample)),
                         lambda hits, f=f, v=v: out.holding.__setitem__(f.key, (v, list(hits[0])))))
        return asks

    def _expected(self, families: list[Family]) -> int:
        return sum(self._answered.get(f.key, 0) for f in families)

    def _parts(self, group: list[Family]) -> list[list[Family]]:
        """`group` in as few parts as keep each near ANSWER_MOST names by the last answers, the
        biggest families first, each to the part holding fewest names (one part before anything
        was answered)."""
        answered = {f.key: self._answered.get(f.key, 0) for f in group}
        count = max(1, -(-sum(answered.values()) // ANSWER_MOST))
        parts: list[list[Family]] = [[] for _ in range(count)]
        names = [0] * count
        for f in sorted(group, key=lambda f: -answered[f.key]):
            least = names.index(min(names))
            parts[least].append(f)
            names[least] += answered[f.key]
        return [p for p in parts if p]

    def read_family(self, f: Family, asked: Answers | None = None) -> None:
        """Serve every member of `f` (see the module docstring for the queries), from what the
        queries asked at once (ask) answered for it, and the queries it needs besides."""
        common, second = self.common.get(f.key, (0, None))
        explicit: dict[int, Any] = {}  # member position -> value, for members not holding `common`
        gone: set[int] = set()
        asked = asked or Answers()
        self._take(asked, f)
        others = asked.others.get(f.key)
        if others is None:
            others = list(self._query(f, "!=", common))
        to_read = others
        holding = asked.holding.get(f.key)
        if holding is not None:  # the first poll's likeliest value, asked with (1)
            for i in holding[1]:
                explicit[i] = holding[0]
            to_read = [i for i in others if i not in explicit]
        if f.max_value is None:
            pass  # numbers of their own: (1) alone, the members it returned are read
        elif second is None and len(to_read) > self.costs.reads_per_query():
            # nothing known about the others yet (the first poll): one query per value, the
            # likeliest first, until the members left are cheaper to read
            for v in self._likely_values(f, to_read, common):
                if holding is not None and v == holding[0]:
                    continue  # asked already
                for i in self._query(f, "==", v):
                    explicit[i] = v
                to_read = [i for i in others if i not in explicit]
                if len(to_read) <= self.costs.reads_per_query():
                    break
        elif second is not None and len(others) > self.costs.reads_per_query():
            unusual = asked.unusual.get(f.key)
            if unusual is None:
                unusual = set(self._query(f, "!=", common, (("!=", second),)))
            last = f.last
            same = {i for i in others if i not in unusual and last(i) == second and type(last(i)) is type(second)}
            if len(others) - len(same) > self.costs.reads_per_query():  # many moved: ask who holds `second`
                for i in self._query(f, "==", second):
                    explicit[i] = second
                to_read = sorted({i for i in others if i not in explicit} | unusual)
            else:
                for i in same:
                    explicit[i] = second
                to_read = sorted({i for i in others if i not in same} | unusual)
        if to_read:
            for i, v in zip(to_read, self.read_members(f, to_read)):
                if v is MISSING:
                    gone.add(i)
                else:
                    explicit[i] = v
        if f.base is not None and f.base == common and type(f.base) is type(common):
            touched = f.special | explicit.keys() | gone  # only these can differ from the last poll
        elif f.serve_all(common):
            touched = explicit.keys() | gone
        else:
            touched = range(len(f.table))
        get = explicit.get
        for i in touched:
            if i in gone:
                f.drop(i)
            else:
                f.serve(i, get(i, common))
        f.base, f.special = common, explicit.keys() | gone
        self._learn(f, common, explicit, len(gone))

    def _likely_values(self, f: Family, others: list[int], common: Any) -> list[int]:
        """The values `others` may hold, the likeliest first: those held by a few of them read
        (most hold the replication factor, which may be above the catalog's usual maximum), then
        the other small values."""
        sample = self.read_members(f, others[::max(1, len(others) // _SAMPLE)][:_SAMPLE])
        seen = [v for v, _ in Counter(v for v in sample if v.__class__ is int).most_common() if v != common]
        return seen + [v for v in range(f.max_value + 1) if v != common and v not in seen]

    def _learn(self, f: Family, common: Any, explicit: dict[int, Any], gone: int, counts: Counter | None = None
               ) -> None:
        """The two most common numbers this poll: what the next poll asks about; and how many
        members hold another than the most common."""
        if counts is None:
            try:
                counts = Counter(explicit.values())
            except TypeError:  # an unhashable value: not a number, so not worth a query
                counts = Counter()
            counts[common] += len(f.table) - len(explicit) - gone
        top = [v for v, c in counts.most_common() if c > 0 and type(v) in (int, float)][:2]
        if not top:
            self.common.pop(f.key, None)  # back to one query per small value
            f.unusual = None
        else:
            self.common[f.key] = (top[0], top[1] if len(top) > 1 else None)
            f.unusual = len(f.table) - counts[top[0]]
