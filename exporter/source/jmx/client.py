"""JmxClient: the broker's MBeans over remote JMX/RMI, read with as few round trips as possible.

    client = JmxClient(settings)             # starts the JVM if needed; connects lazily
    names = client.list_names()              # one queryNames per include pattern; on a slow clock
    mbeans = client.read(client.name_texts)  # one getAttributes per MBean, on `connections` threads
    stats = client.take_stats()              # round trips, MBeans read, ... since the last take

With the compiled helper, list_split() lists Kafka's per-partition families as columns instead
(listing.Members), read with read_members() and query_members().

What is cached, and when it is refreshed:
- the ObjectName list: until the caller lists again (listing.py);
- MBeanInfo: per ObjectName, and per family for classes of one shape (mbean_info.py);
- the read plan (which attributes of which MBean): rebuilt when one of the above changes, or a
  read auto-excludes an attribute (read_plan.py, filters.py).

The connections are kept across polls (connections.py). Nothing here invokes an MBean
operation or sets an attribute.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator, Sequence

from kafka_jmx_sidecar.exporter.source.jmx import convert, mbean_info, read_plan
from kafka_jmx_sidecar.exporter.source.jmx.client_settings import JmxSettings
from kafka_jmx_sidecar.exporter.source.jmx.connections import Connections
from kafka_jmx_sidecar.exporter.source.jmx.engine import NameList
from kafka_jmx_sidecar.exporter.source.jmx.errors import JmxConfigError
from kafka_jmx_sidecar.exporter.source.jmx.filters import AttributeFilter, check_patterns
from kafka_jmx_sidecar.exporter.source.jmx.java_engine import JavaEngine
from kafka_jmx_sidecar.exporter.source.jmx.jpype_engine import JPypeEngine
from kafka_jmx_sidecar.exporter.source.jmx.jvm import helper, start_jvm
from kafka_jmx_sidecar.exporter.source.jmx.listing import Listing, Members
from kafka_jmx_sidecar.exporter.source.jmx.mbean_info import InfoCache, Targets
from kafka_jmx_sidecar.exporter.source.jmx.queries import MemberQuery, QueryExps
from kafka_jmx_sidecar.exporter.source.jmx.read_plan import Plans, ReadPlan
from kafka_jmx_sidecar.exporter.source.jmx.started import StartedQueries, StartedReads
from kafka_jmx_sidecar.exporter.source.jmx.stats import JmxStats
from kafka_jmx_sidecar.exporter.base.model import MBean, ObjectName

# The most names the client should have asked for at once, as the last listing or poll tells. The
# JVM deserializes an answer whole, ~450 bytes a name, and it outlives its young collections: at
# 40,000 partitions with Strimzi's rules the Log gauges' shared query returned 54,000 names and
# grew the heap by ~35 MB during a poll; a names refresh asking two 40,000-name families at once
# grew it by ~40 MB. Families past it are asked in parts or one after the other.
ANSWER_MOST = 30_000


class JmxClient:
    def __init__(self, settings: JmxSettings, *, clock=time.monotonic):
        self.settings = settings
        self._lock = threading.RLock()
        start_jvm(settings)
        h = helper(settings) if settings.engine in ("auto", "java") else None
        if settings.engine == "java" and h is None:
            raise JmxConfigError("engine: java needs a JDK (javax.tools.JavaCompiler) in the sidecar's JVM")
        self._engine = JavaEngine(h) if h is not None else JPypeEngine()
        self._queries = QueryExps()
        check_patterns(settings)
        self._filters = AttributeFilter(settings)
        self._stats = JmxStats()
        self._conns = Connections(settings, self._engine, self._stats, clock)
        self._listing = Listing(self._engine)
        self.census = None  # engine.Census of the last list_split()
        self._infos = InfoCache(settings, self._engine, self._conns, self._stats)
        self._plans = Plans()
        # bumped whenever a plan may be stale: new names, new MBeanInfo, auto-excluded attributes
        self._generation = 0

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def listed_classes(self) -> dict[str, str]:
        """Name text -> class name, for the names the last list_split() read whole (empty when
        the listing gave none)."""
        return self._infos.classes

    @property
    def connected(self) -> bool:
        return self._conns.up

    def close(self) -> None:
        with self._lock:
            self._conns.close()

    def abort(self) -> None:
        """From another thread, without waiting for the call in progress: give it up, refuse
        later calls (JmxStoppedError). For a sidecar that is stopping; close() still closes."""
        self._conns.abort()

    def __enter__(self) -> "JmxClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def take_stats(self) -> JmxStats:
        """Counters since the previous take (a poll's worth when called once per poll)."""
        with self._lock:
            return self._stats.take()

    # --- names ----------------------------------------------------------------------------------

    @property
    def name_texts(self) -> list[str]:
        """The listed names' text, in the listing's order: passing these to read() costs no new
        string per name (an ObjectName's str() builds one)."""
        return self._listing.strings

    def list_names(self) -> list[ObjectName]:
        """queryNames for every include pattern (one round trip each), minus the exclude
        patterns, sorted; becomes the set read() reads. Call on the slow clock."""
        s = self.settings
        with self._lock:
            self._size_connections()
            nl: NameList = self._conns.call(
                lambda: self._engine.list_names(self._conns.mbscs[0], s.include_object_names,
                                                 s.exclude_object_names, s.read_timeout_seconds),
                "queryNames")
            self._count_queries(nl.round_trips)
            self._new_listing(nl)
            return self._listing.names  # type: ignore[return-value]

    @property
    def splits(self) -> bool:
        """Whether list_split() is available (it needs the compiled helper)."""
        return hasattr(self._engine, "list_split")

    def list_split(self, families: Sequence[str], previous: Sequence[Members | None] = ()
                   ) -> tuple[list[ObjectName], Any, list[Members]]:
        """list_names(), with the members of `families` ("domain:type=X,name=Y") taken out as
        columns instead of names: (the other names, their canonical name hashes, the members per
        family). read() reads the other names; read_members() and query_members() the members.
        A family whose members are those of its `previous` Members comes back as that object.
        Over several connections two families are asked at once, unless their `previous`
        members add up past ANSWER_MOST. `self.census` then says what the listing matched before exclusions (engine.Census)."""
        s = self.settings
        previous = list(previous) + [None] * (len(families) - len(previous))
        with self._lock:
            self._size_connections()
            nl, hashes, fams, self.census = self._conns.call(
                lambda: self._engine.list_split(self._conns.jconns, s.include_object_names,
                                                 s.exclude_object_names, families,
                                                 [p.handle if p else None for p in previous], ANSWER_MOST,
                                                 s.read_timeout_seconds),
                "queryNames")
            self._count_queries(nl.round_trips)
            self._new_listing(nl)
            self._infos.classes = mbean_info.classes(self._listing.strings, self.census)
            return self._listing.names, hashes, [was if m is None else Members(f, *m)  # type: ignore[misc]
                                                 for f, m, was in zip(families, fams, previous)]

    def _size_connections(self) -> None:
        """Before a listing: all `connections` for a broker of `parallel_from` MBeans or more,
        else one (see client_settings)."""
        s = self.settings
        if s.connections == 1:
            return
        count = self._conns.call(lambda: int(self._conns.mbscs[0].getMBeanCount()), "getMBeanCount")
        self._stats.round_trips += 1
        self._conns.want(s.connections if count >= s.parallel_from else 1)

    @property
    def parallel(self) -> bool:
        """Whether reads are spread over several connections (and queries overlap them)."""
        return len(self._conns.mbscs) > 1

    def _count_queries(self, round_trips: int) -> None:
        self._stats.round_trips += round_trips
        self._stats.queries += round_trips

    def _new_listing(self, nl: NameList) -> None:
        alive = self._listing.replace(nl)
        # forget what belongs to vanished MBeans; re-read MBeanInfo of classes whose shape can change
        self._infos.forget(alive)
        self._filters.forget(alive)
        self._plans.clear()
        self._generation += 1

    # --- per-partition families -----------------------------------------------------------------

    def read_members(self, members: Members, positions: Sequence[int] | None, attribute: str,
                     deadline: float | None = None) -> list[Any]:
        """`attribute` of the members at `positions` (None: all), one getAttributes each: the
        value per member, or `convert.MISSING` for one that is gone or failed."""
        with self._lock:
            records, complex_values, rt = self._conns.call(
                lambda: self._engine.read_members(self._conns.jconns, members.handle, positions, attribute,
                                                  deadline, self.settings.read_timeout_seconds), "getAttributes")
            self._stats.round_trips += rt
            return self._member_values(records, complex_values)

    def _member_values(self, records: list, complex_values: Any) -> list[Any]:
        out = []
        decode = convert.decode_record
        read = 0
        for rec in records:
            status, values = decode(rec, complex_values)
            if status != "o" or not values or convert.is_marker(values[0]):
                out.append(convert.MISSING)
            else:
                out.append(values[0])
                read += 1
        self._stats.mbeans_read += read
        return out

    # --- reads begun before the queries, collected after them --------------------------------

    @property
    def reads_in_background(self) -> bool:
        """Whether start_reads() reads while the caller goes on (the compiled helper, several
        connections), or when finish_reads() is called."""
        return hasattr(self._engine, "start_reads") and self.parallel

    def start_reads(self, members: Sequence[Members], attribute: str, names: Sequence[str] | None,
                    deadline: float | None = None) -> "StartedReads":
        """Begin reading `attribute` of every member of each of `members` and then the MBeans
        `names` (as read() reads them; None: none), over the connections while the caller goes
        on (its queries then overlap these reads); finish_reads() waits for them."""
        with self._lock:
            plan = None
            if names:
                plan = self._plans.subset(names, None, self._generation)
                if plan is None:
                    targets = self._listing.named(names)
                    self._ensure_infos(targets, self._listing.jnames_for)
                    plan = self._build(targets, self._listing.jnames_for, None)
                    self._plans.keep_subset(names, None, plan)
            started = StartedReads(list(members), attribute, plan, deadline)
            if self.reads_in_background:
                jplan = plan.jplan if plan is not None and plan.entries else None
                started.handle = self._conns.call(lambda: self._engine.start_reads(
                    self._conns.jconns, [m.handle for m in members], attribute, jplan, deadline,
                    self.settings.read_timeout_seconds), "getAttributes")
            return started

    def finish_reads(self, started: "StartedReads", take: Callable[[int, list[Any]], None]
                     ) -> tuple[list[MBean], list[float]]:
        """What start_reads() began: take(k, values) for the k-th family as soon as it is read
        (its members' values as read_members() gives them; one family's alive at a time, and
        the caller works on it while the next is read), then the MBeans read (as read() gives
        them) and each read's seconds. Reads that failed on a broken connection are read again,
        from the first family not taken, at once, after reconnecting."""
        with self._lock:
            counts = [len(m) for m in started.members] + [len(started.plan.entries) if started.plan else 0]
            first = [started.handle is not None]
            seconds: list[float] = []

            def fn() -> tuple:
                if first[0]:
                    first[0] = False
                    parts = self._engine.finish_reads(started.handle, counts)
                else:
                    parts = self._read_now(started, len(seconds))
                for records, complex_values, rt, s in parts:
                    self._stats.round_trips += rt
                    if len(seconds) == len(started.members):  # the MBeans read whole, last
                        seconds.append(s)
                        return records, complex_values
                    take(len(seconds), self._member_values(records(), complex_values))
                    seconds.append(s)
                raise AssertionError("the reads ended before the MBeans read whole")
            records, complex_values = self._conns.call(fn, "getAttributes")
            mbeans: list[MBean] = []
            if started.plan is not None and started.plan.entries:
                mbeans, excluded = read_plan.decode(started.plan, records(), complex_values, self._stats,
                                                    self._filters.auto_excluded)
                if excluded:
                    self._generation += 1
            return mbeans, seconds

    def _read_now(self, started: "StartedReads", first: int = 0) -> Iterator[tuple]:
        """The reads of `started` from its `first` family on, made here and now, each handed over
        as it is read (no background engine, or after a reconnect)."""
        for m in started.members[first:]:
            t0 = time.monotonic()
            records, complex_values, rt = self._engine.read_members(
                self._conns.jconns, m.handle, None, started.attribute, started.deadline,
                self.settings.read_timeout_seconds)
            yield (lambda records=records: records), complex_values, rt, time.monotonic() - t0
        plan = started.plan
        if plan is not None and plan.entries:
            t0 = time.monotonic()
            records, complex_values, rt = self._engine.read(self._conns.jconns, plan.jplan, len(plan.entries),
                                                            started.deadline, self.settings.read_timeout_seconds)
            yield (lambda: records), complex_values, rt, time.monotonic() - t0
        else:
            yield list, (), 0, 0.0

    def query_members(self, pattern: str, families: Sequence[Members], attribute: str, op: str, value: Any,
                      *, also: Sequence[tuple[str, Any]] = ()) -> list[Any]:
        """query_names(), answered as the positions of the members of each family it returned."""
        return self._query_members(pattern, families, self._queries.all_of(attribute, op, value, also))

    def start_queries(self, asks: Sequence[MemberQuery], share: "StartedQueries | None" = None,
                      at_once: int | None = None) -> "StartedQueries":
        """Begin asking `asks` at once, one per connection at a time (`at_once` at most; with the
        queries of `share` too, within its bound), within ANSWER_MOST names expected in flight
        (Together.java); query_answer() collects each."""
        with self._lock:
            specs = [(a.pattern, self._queries.matching(a.attribute, a.terms),
                      None if a.families is None else [m.handle for m in a.families], a.expected) for a in asks]

            def fn() -> StartedQueries:
                n = len(self._conns.mbscs)
                lanes = share.lanes if share is not None else self._engine.query_lanes(min(n, at_once or n))
                return StartedQueries(specs, lanes, self._engine.start_queries(
                    self._conns.jconns, lanes, specs, ANSWER_MOST, self.settings.read_timeout_seconds))
            started = self._conns.call(fn, "queryNames")
            self._count_queries(len(asks))
            return started

    def query_answer(self, started: "StartedQueries", k: int, families: Sequence[Members] | None = None
                     ) -> tuple[list[Any], float]:
        """The k-th query start_queries() began, once answered: its answer as query_members()
        gives it, and the seconds it took; `families`: whose members it is about, when it was
        started with none. After a broken connection the queries not answered yet are asked
        again, one at a time, once reconnected."""
        given = None if families is None else [m.handle for m in families]
        with self._lock:
            def fn() -> tuple[list[Any], float]:
                if not started.broken:
                    started.broken = True  # until the answer is in: a retry asks again
                    out = self._engine.query_answer(started.handle, k, given)
                    started.broken = False
                    return out
                pattern, q, handles, _ = started.specs[k]
                handles = handles if handles is not None else given
                t0 = time.monotonic()
                hits = self._engine.query_members(self._conns.mbscs[0], pattern, q, handles,
                                                  self.settings.read_timeout_seconds)
                self._count_queries(1)
                return hits, time.monotonic() - t0
            return self._conns.call(fn, "queryNames")

    def cancel_queries(self, started: "StartedQueries") -> None:
        """Give up the queries start_queries() began that are not answered yet."""
        started.handle.cancel()

    def _query_members(self, pattern: str, families: Sequence[Members], q: Any) -> list[Any]:
        with self._lock:
            hits = self._conns.call(lambda: self._engine.query_members(
                self._conns.mbscs[0], pattern, q, [m.handle for m in families], self.settings.read_timeout_seconds),
                "queryNames")
            self._count_queries(1)
            return hits

    def query_names(self, pattern: str, attribute: str | None = None, op: str = "==",
                    value: Any = None, *, also: Sequence[tuple[str, Any]] = ()) -> list[ObjectName]:
        """Names matching `pattern` (and `attribute op value`, and every `attribute op value` of
        `also`, evaluated inside the broker's JVM; see queries.py), in ONE round trip."""
        q = None if attribute is None else self._queries.all_of(attribute, op, value, also)
        with self._lock:
            nl = self._conns.call(
                lambda: self._engine.query(self._conns.mbscs[0], pattern, q, self.settings.read_timeout_seconds),
                "queryNames")
            self._count_queries(nl.round_trips)
            return self._listing.parse(nl.strings)

    def query_texts(self, pattern: str, attribute: str, op: str, value: Any) -> list[str]:
        """query_names(), answered as the names' text (as listed), none parsed."""
        q = self._queries.all_of(attribute, op, value)
        with self._lock:
            nl = self._conns.call(
                lambda: self._engine.query(self._conns.mbscs[0], pattern, q, self.settings.read_timeout_seconds),
                "queryNames")
            self._count_queries(nl.round_trips)
            return nl.strings

    # --- reading --------------------------------------------------------------------------------

    def read(self, names: Sequence[ObjectName | str] | None = None, *,
             attributes: Sequence[str] | None = None, deadline: float | None = None) -> list[MBean]:
        """Read MBeans: every listed one (names=None; lists first if needed), or the given ones.

        One getAttributes per MBean, spread over the connections. `attributes` restricts the read
        to those attribute names; `deadline` (a time.monotonic() value) bounds the whole read.
        MBeans that vanished or failed are left out (the vanished counted in the stats). An MBean
        whose values did not change since the previous read of the same plan is returned as the
        same (immutable) object. The plan for a `names` list is kept while that list object is
        passed again unchanged (pass a new list when the set changes).
        """
        with self._lock:
            if names is None:
                if self._listing.names is None:
                    self.list_names()
                return self._read_listed(attributes, deadline)
            return self._read_some(names, attributes, deadline)

    def _read_listed(self, attributes: Sequence[str] | None, deadline: float | None) -> list[MBean]:
        plan = self._plans.listed
        if attributes is None and plan is not None and plan.usable(self._generation):
            return self._run(plan, deadline)  # every listed name has its MBeanInfo: nothing to look up
        listing = self._listing
        targets = list(zip(listing.strings, listing.names or ()))
        self._ensure_infos(targets, listing.jnames_for_listed)
        if attributes is not None:
            plan = self._build(targets, listing.jnames_for_listed, frozenset(attributes))
        else:
            if self._plans.listed is None or self._plans.listed.generation != self._generation:
                self._plans.listed = self._build(targets, listing.jnames_for_listed, None)
            plan = self._plans.listed
        return self._run(plan, deadline)

    def _read_some(self, names: Sequence[ObjectName | str], attributes: Sequence[str] | None,
                   deadline: float | None) -> list[MBean]:
        plan = self._plans.subset(names, attributes, self._generation)
        if plan is not None:
            return self._run(plan, deadline)
        targets = self._listing.named(names)
        jnames_for = self._listing.jnames_for
        self._ensure_infos(targets, jnames_for)
        plan = self._build(targets, jnames_for, None if attributes is None else frozenset(attributes))
        self._plans.keep_subset(names, attributes, plan)
        return self._run(plan, deadline)

    def _ensure_infos(self, targets: Targets, jnames_for) -> None:
        before = len(self._infos.known)
        try:
            self._infos.ensure(targets, jnames_for)
        finally:
            if len(self._infos.known) != before:
                self._generation += 1

    def _build(self, targets: Targets, jnames_for, only: frozenset | None) -> ReadPlan:
        return read_plan.build(targets, self._infos, self._filters, self._engine, jnames_for, only, self._generation)

    def _run(self, plan: ReadPlan, deadline: float | None) -> list[MBean]:
        if not plan.entries:
            return []
        records, complex_values, rt = self._conns.call(
            lambda: self._engine.read(self._conns.jconns, plan.jplan, len(plan.entries), deadline,
                                      self.settings.read_timeout_seconds), "getAttributes")
        self._stats.round_trips += rt
        out, excluded = read_plan.decode(plan, records, complex_values, self._stats, self._filters.auto_excluded)
        if excluded:
            self._generation += 1
        return out
