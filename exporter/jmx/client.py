"""JmxClient: the broker's MBeans over remote JMX/RMI, read with as few round trips as possible.

    client = JmxClient(settings)          # starts the JVM if needed; connects lazily
    names = client.list_names()           # one queryNames per include pattern; call it on a slow clock
    mbeans = client.read()                # one getAttributes per MBean, on `connections` threads
    stats = client.take_stats()           # round trips, MBeans read, ... since the last take

What is cached, and when it is refreshed:
- the ObjectName list: until the caller calls list_names() again;
- MBeanInfo (attribute names, declared types, descriptions, class name): per ObjectName, and per
  family (the ObjectName without its topic/partition keys) when the MBean's class has one shape
  for all its instances (Yammer metrics); the MBeanInfo of other classes (Kafka's KafkaMbean, whose
  attributes grow) is re-read after each list_names();
- the read plan (which attributes of which MBean), rebuilt when one of the above changes.

The connections are kept across polls. A connection that breaks is re-established at once on
the next call (a broker restart costs no poll), then with exponential backoff between failed
attempts; meanwhile calls fail fast with the last error. Nothing here invokes an MBean operation
or sets an attribute.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from exporter.jmx import convert
from exporter.jmx.engine import BatchFailure, JavaEngine, JPypeEngine, NameList
from exporter.jmx.errors import (JmxConfigError, JmxConnectionError, JmxError, JmxTimeoutError,
                                 translate)
from exporter.jmx.jvm import helper, mark_used, start_jvm
from exporter.jmx.client_settings import EXPENSIVE_ATTRIBUTES, JmxSettings
from exporter.model import Attribute, MBean, ObjectName

log = logging.getLogger(__name__)

_OPS = {"==": "eq", ">": "gt", ">=": "geq", "<": "lt", "<=": "leq"}


@dataclass
class JmxStats:
    """Counters since the last take_stats() (or since the client was made)."""

    round_trips: int = 0      # RMI calls: queryNames, getMBeanInfo, getAttributes (not connects)
    mbeans_read: int = 0      # MBeans whose attributes came back
    mbeans_gone: int = 0      # listed, but unregistered before we read them
    infos_read: int = 0       # getMBeanInfo calls (part of round_trips)
    queries: int = 0          # queryNames calls (part of round_trips)
    connects: int = 0         # connections (re-)established
    connect_failures: int = 0


class _Info:
    __slots__ = ("class_name", "attrs", "shared")

    def __init__(self, class_name: str, attrs: tuple[tuple[str, str, str], ...], shared: bool):
        self.class_name = class_name
        self.attrs = attrs          # readable attributes: (name, declared type, description)
        self.shared = shared        # one shape for the class: shared by a family, kept across listings


class _Plan:
    """What one read() sends (the engine's plan) and what it needs to build MBeans again."""

    __slots__ = ("jplan", "entries", "generation", "prev_raw", "prev_mbeans", "source", "size", "complete")

    def __init__(self, jplan: Any, entries: list, generation: int):
        self.jplan = jplan
        self.entries = entries          # (ObjectName, name text, _Info, attribute positions)
        self.generation = generation    # the client's generation it was built for
        self.prev_raw: list | None = None
        self.prev_mbeans: list | None = None
        self.source: Any = None
        self.size = 0
        self.complete = True


def _canonical(name: ObjectName | str) -> tuple[str, frozenset]:
    """ObjectName equality as JMX defines it (key order does not matter)."""
    if isinstance(name, str):
        name = ObjectName.parse(name)
    return name.domain, frozenset(name.keys)


class Members:
    """The members of one family `domain:type=X,name=Y` as columns (see SidecarJmx.Members):
    topics, then per member a topic index, a partition number and its canonical name's hash."""

    __slots__ = ("family", "handle", "topics", "topic", "partition", "hash", "pattern")

    def __init__(self, family: str, handle: Any, topics: list[str], topic, partition, hashes, patterns=None):
        self.family, self.handle, self.topics = family, handle, topics
        self.topic, self.partition, self.hash = topic, partition, hashes
        self.pattern = patterns  # per member, the first include pattern matching it (None: one pattern)

    def __len__(self) -> int:
        return len(self.topic)

    def name(self, i: int) -> str:
        return f"{self.family},topic={self.topics[self.topic[i]]},partition={self.partition[i]}"


class JmxClient:
    def __init__(self, settings: JmxSettings, *, clock=time.monotonic):
        self.settings = settings
        self._clock = clock
        self._lock = threading.RLock()
        start_jvm(settings)
        engine = settings.engine
        h = helper(settings) if engine in ("auto", "java") else None
        if engine == "java" and h is None:
            raise JmxConfigError("engine: java needs a JDK (javax.tools.JavaCompiler) in the sidecar's JVM")
        self._engine = JavaEngine(h) if h is not None else JPypeEngine()
        import jpype

        self._jp = jpype
        self._Query = jpype.JClass("javax.management.Query")
        # connections
        self._connectors: list[Any] = []
        self._mbscs: list[Any] = []
        self._jconns: Any = None
        self._failures = 0
        self._next_attempt = 0.0
        self._last_error: JmxError | None = None
        # names
        self._names: list[ObjectName] | None = None
        self.census = None  # engine.Census of the last list_split()
        self._strings: list[str] = []
        self._jnames: Any = None
        self._by_string: dict[str, ObjectName] = {}
        self._pairs: dict[tuple[str, str], tuple[str, str]] = {}
        self._index: dict[str, int] | None = None
        # MBeanInfo
        self._info: dict[str, _Info] = {}
        self._family_info: dict[str, _Info] = {}
        self._info_failed: set[str] = set()  # getMBeanInfo failed: skipped until the next listing
        # filters
        ON = jpype.JClass("javax.management.ObjectName")
        for key, patterns in (("includeObjectNames", settings.include_object_names),
                              ("excludeObjectNames", settings.exclude_object_names)):
            for p in patterns:
                try:
                    ON(p)
                except jpype.JException as e:
                    raise JmxConfigError(f"{key}: {p!r} is not an ObjectName pattern ({e.getMessage()}); "
                                         'write domain:key=value,... with * and ? wildcards, e.g. "kafka.server:*"'
                                         ) from None
        try:
            self._include_attrs = {_canonical(k): frozenset(v)
                                   for k, v in settings.include_object_name_attributes.items()}
            self._exclude_attrs = {_canonical(k): frozenset(v)
                                   for k, v in settings.exclude_object_name_attributes.items()}
        except ValueError as e:
            raise JmxConfigError(f"include/excludeObjectNameAttributes: {e}") from None
        self._expensive = ({_canonical(k): v for k, v in EXPENSIVE_ATTRIBUTES.items()}
                           if settings.skip_expensive_attributes else {})
        self._auto_excluded: dict[str, set[str]] = {}
        # the plan for reading every listed MBean
        self._plan: _Plan | None = None
        self._subset_plans: dict[tuple, _Plan] = {}
        # bumped whenever a plan may be stale: new names, new MBeanInfo, auto-excluded attributes
        self._generation = 0
        # stats
        self._stats = JmxStats()

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return bool(self._mbscs)

    def close(self) -> None:
        with self._lock:
            self._drop_connections()

    def __enter__(self) -> "JmxClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _drop_connections(self) -> None:
        for c in self._connectors:
            self._engine.close(c)
        self._connectors, self._mbscs, self._jconns = [], [], None

    def _translate(self, java_exc: Any, doing: str) -> JmxError:
        s = self.settings
        return translate(java_exc, s.endpoint, doing=doing, username=s.username,
                         read_timeout=s.read_timeout_seconds, connect_timeout=s.connect_timeout_seconds,
                         stub_lookup=lambda: _stub_endpoint(self._engine, s))

    def _ensure_connected(self) -> bool:
        """Connect every connection if needed; True when this call connected."""
        if self._mbscs:
            return False
        now = self._clock()
        if self._last_error is not None and now < self._next_attempt:
            last = self._last_error
            raise type(last)(f"{last.message} (next attempt in {self._next_attempt - now:.0f} s)",
                             endpoint=last.endpoint, java_chain=last.java_chain)
        connectors: list[Any] = []
        mbscs: list[Any] = []
        mark_used(self.settings.ssl)
        try:
            for _ in range(self.settings.connections):
                try:
                    connectors.append(self._engine.connect(self.settings))
                    mbscs.append(connectors[-1].getMBeanServerConnection())
                except BatchFailure as e:
                    raise self._translate(e.java, "connect") from None
                except self._jp.JException as e:
                    raise self._translate(e, "connect") from None
        except JmxError as e:
            for c in connectors:
                self._engine.close(c)
            self._stats.connect_failures += 1
            self._backoff(e)
            log.warning("%s", e.message)
            raise
        self._connectors, self._mbscs = connectors, mbscs
        self._jconns = self._engine.conns(mbscs)
        self._failures, self._last_error = 0, None
        self._stats.connects += len(connectors)
        return True

    def _backoff(self, err: JmxError) -> None:
        """Remember err; the next connection attempt waits reconnect_min * 2^(failures-1) s."""
        self._failures += 1
        s = self.settings
        self._next_attempt = self._clock() + min(s.reconnect_max_seconds,
                                                 s.reconnect_min_seconds * 2 ** (self._failures - 1))
        self._last_error = err

    def _attempt(self, fn, doing: str) -> tuple[bool, Any]:
        """(True, fn()) or (False, the JmxError of a broken connection); other errors raise."""
        try:
            return True, fn()
        except BatchFailure as e:
            self._stats.round_trips += e.round_trips
            return False, self._translate(e.java, doing)
        except self._jp.JException as e:
            if not _is_io(e):
                raise self._translate(e, doing) from None
            return False, self._translate(e, doing)

    def _call(self, fn, doing: str):
        """fn() with connections up. A connection that worked before and broke is re-established
        at once and fn() tried again (a broker restart costs no poll); otherwise the error is
        raised and later attempts back off."""
        fresh = self._ensure_connected()
        ok, result = self._attempt(fn, doing)
        if ok:
            return result
        self._drop_connections()
        if fresh or isinstance(result, JmxTimeoutError):
            self._backoff(result)
            raise result
        log.info("JMX connection to %s broke (%s); reconnecting", self.settings.endpoint, result.message)
        self._ensure_connected()
        ok, result = self._attempt(fn, doing)
        if ok:
            return result
        self._drop_connections()
        self._backoff(result)
        raise result

    # --- stats ----------------------------------------------------------------------------------

    def take_stats(self) -> JmxStats:
        """Counters since the previous take (a poll's worth when called once per poll)."""
        with self._lock:
            s, self._stats = self._stats, JmxStats()
            return s

    # --- names ----------------------------------------------------------------------------------

    @property
    def name_texts(self) -> list[str]:
        """The listed names' text, in the listing's order: passing these to read() costs no new
        string per name (an ObjectName's str() builds one)."""
        return self._strings

    def list_names(self) -> list[ObjectName]:
        """queryNames for every include pattern (one round trip each), minus the exclude
        patterns, sorted; becomes the set read() reads. Call on the slow clock."""
        s = self.settings
        with self._lock:
            nl: NameList = self._call(
                lambda: self._engine.list_names(self._mbscs[0], s.include_object_names, s.exclude_object_names,
                                                 s.read_timeout_seconds),
                "queryNames")
            self._stats.round_trips += nl.round_trips
            self._stats.queries += nl.round_trips
            self._set_names(nl)
            return self._names  # type: ignore[return-value]

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
        `self.census` then says what the listing matched before exclusions (engine.Census)."""
        s = self.settings
        previous = list(previous) + [None] * (len(families) - len(previous))
        with self._lock:
            nl, hashes, fams, self.census = self._call(
                lambda: self._engine.list_split(self._mbscs[0], s.include_object_names, s.exclude_object_names,
                                                 families, [p.handle if p else None for p in previous],
                                                 s.read_timeout_seconds),
                "queryNames")
            self._stats.round_trips += nl.round_trips
            self._stats.queries += nl.round_trips
            self._set_names(nl)
            return self._names, hashes, [was if m is None else Members(f, *m)  # type: ignore[misc]
                                         for f, m, was in zip(families, fams, previous)]

    def read_members(self, members: Members, positions: Sequence[int] | None, attribute: str,
                     deadline: float | None = None) -> list[Any]:
        """`attribute` of the members at `positions` (None: all), one getAttributes each: the
        value per member, or `convert.MISSING` for one that is gone or failed."""
        with self._lock:
            records, complex_values, rt = self._call(
                lambda: self._engine.read_members(self._jconns, members.handle, positions, attribute, deadline,
                                                  self.settings.read_timeout_seconds), "getAttributes")
            self._stats.round_trips += rt
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

    def query_members(self, pattern: str, families: Sequence[Members], attribute: str, op: str, value: Any,
                      *, also: Sequence[tuple[str, Any]] = ()) -> list[Any]:
        """query_names(), answered as the positions of the members of each family it returned."""
        q = self._query_exps(attribute, op, value, also)
        with self._lock:
            hits = self._call(lambda: self._engine.query_members(
                self._mbscs[0], pattern, q, [m.handle for m in families], self.settings.read_timeout_seconds),
                "queryNames")
            self._stats.round_trips += 1
            self._stats.queries += 1
            return hits

    def _parse(self, strings: Iterable[str]) -> list[ObjectName]:
        cache = self._by_string
        out = []
        for st in strings:
            n = cache.get(st)
            if n is None:
                n = cache[st] = self._new_name(st)
            out.append(n)
        return out

    def _new_name(self, text: str) -> ObjectName:
        """ObjectName.parse, with the (key, value) pairs shared between names: 40,000 partitions
        repeat `type=Partition`, each topic and partition number many times (~950 -> ~350 bytes
        per name)."""
        n = ObjectName.parse(text)
        pairs = self._pairs
        keys = []
        for kv in n.keys:
            shared = pairs.get(kv)
            if shared is None:
                shared = pairs[kv] = (sys.intern(kv[0]), sys.intern(kv[1]))
            keys.append(shared)
        return ObjectName(sys.intern(n.domain), tuple(keys))

    def _set_names(self, nl: NameList) -> None:
        old = self._by_string
        self._by_string = {}
        names = []
        for st in nl.strings:
            n = old.get(st)
            if n is None:
                n = self._new_name(st)
            self._by_string[st] = n
            names.append(n)
        alive = self._by_string
        self._names, self._strings, self._jnames, self._index = names, nl.strings, nl.jnames, None
        # forget what belongs to vanished MBeans; re-read MBeanInfo of classes whose shape can change
        self._info = {k: v for k, v in self._info.items() if k in alive and v.shared}
        self._family_info = {k: v for k, v in self._family_info.items() if v.shared}
        self._auto_excluded = {k: v for k, v in self._auto_excluded.items() if k in alive}
        self._info_failed = set()
        self._plan = None
        self._subset_plans.clear()
        self._generation += 1

    def _name_index(self) -> dict[str, int]:
        if self._index is None:
            self._index = {st: i for i, st in enumerate(self._strings)}
        return self._index

    # --- MBeanInfo ------------------------------------------------------------------------------

    def _family(self, name: ObjectName) -> str | None:
        fk = self.settings.family_keys
        keys = name.keys
        if not any(k in fk for k, _ in keys):
            return None
        return name.domain + ":" + ",".join(f"{k}={v}" for k, v in keys if k not in fk)

    def _shared_class(self, class_name: str) -> bool:
        return class_name.startswith(self.settings.shared_info_classes)

    def _ensure_infos(self, targets: Sequence[tuple[str, ObjectName]], jnames_for) -> None:
        """MBeanInfo for every target without one: one family member first, then the rest of a
        family only when its class does not share one MBeanInfo."""
        before = len(self._info)
        try:
            self._ensure_infos_of(targets, jnames_for)
        finally:
            if len(self._info) != before:
                self._generation += 1

    def _ensure_infos_of(self, targets: Sequence[tuple[str, ObjectName]], jnames_for) -> None:
        info, fam_info = self._info, self._family_info
        first: list[tuple[str, ObjectName, str | None]] = []
        waiting: dict[str, list[tuple[str, ObjectName]]] = {}
        failed = self._info_failed
        for st, n in targets:
            if st in info or st in failed:
                continue
            fam = self._family(n)
            if fam is not None:
                shared = fam_info.get(fam)
                if shared is not None:
                    info[st] = shared
                    continue
                if fam in waiting:
                    waiting[fam].append((st, n))
                    continue
                waiting[fam] = []
            first.append((st, n, fam))
        if not first:
            return
        self._fetch_infos(first, jnames_for)
        rest = []
        for fam, members in waiting.items():
            shared = fam_info.get(fam)
            for st, n in members:
                if shared is not None:
                    info[st] = shared
                else:
                    rest.append((st, n, None))
        if rest:
            self._fetch_infos(rest, jnames_for)

    def _fetch_infos(self, batch: list[tuple[str, ObjectName, str | None]], jnames_for) -> None:
        jn = jnames_for([st for st, _, _ in batch])
        records, rt = self._call(lambda: self._engine.infos(self._jconns, jn, len(batch), None,
                                                                     self.settings.read_timeout_seconds), "getMBeanInfo")
        self._stats.round_trips += rt
        self._stats.infos_read += rt
        for (st, n, fam), (status, class_name, attrs) in zip(batch, records):
            if status != "o":
                self._note_failure(st, status, "getMBeanInfo")
                self._info_failed.add(st)  # not asked again before the next list_names()
                continue
            shared = self._shared_class(class_name)
            inf = _Info(class_name, attrs, shared)
            self._info[st] = inf
            if fam is not None and shared:
                self._family_info[fam] = inf

    def _note_failure(self, st: str, status: str, doing: str) -> None:
        if status == "g":
            self._stats.mbeans_gone += 1
            return
        log.debug("%s %s failed: %s", st, doing, status[1:])

    # --- attribute selection --------------------------------------------------------------------

    def _wanted(self, st: str, name: ObjectName, inf: _Info, only: frozenset | None) -> tuple[int, ...]:
        """Positions in inf.attrs to read for this MBean (jmx_exporter's attribute filters)."""
        key = None
        if self._include_attrs or self._exclude_attrs or self._expensive:
            key = (name.domain, frozenset(name.keys))
        include = self._include_attrs.get(key) if self._include_attrs else None
        if self._include_attrs and include is None:
            return ()
        exclude = self._exclude_attrs.get(key, ()) if self._exclude_attrs else ()
        auto = self._auto_excluded.get(st, ())
        if key in self._expensive:
            skip = self._expensive[key]
            if skip is None:
                return ()
            exclude = set(exclude) | skip
        array_types = self.settings.auto_exclude_object_name_attributes
        out = []
        for i, (a, typ, _) in enumerate(inf.attrs):
            if include is not None and a not in include:
                continue
            if a in exclude or a in auto:
                continue
            if only is not None and a not in only:
                continue
            if array_types and typ.startswith("["):
                continue
            out.append(i)
        return tuple(out)

    def _build_plan(self, targets: Sequence[tuple[str, ObjectName]], jnames_for,
                    only: frozenset | None) -> "_Plan":
        sets: dict[tuple[str, ...], int] = {}
        attr_set: list[int] = []
        entries = []
        picked: list[str] = []
        complete = True
        for st, n in targets:
            inf = self._info.get(st)
            if inf is None:
                if st not in self._info_failed:
                    complete = False  # not looked up yet
                continue
            pos = self._wanted(st, n, inf, only)
            if not pos:
                continue
            names = tuple(inf.attrs[i][0] for i in pos)
            k = sets.get(names)
            if k is None:
                k = sets[names] = len(sets)
            attr_set.append(k)
            entries.append((n, st, inf, pos))
            picked.append(st)
        jplan = self._engine.plan(jnames_for(picked), list(sets), attr_set) if entries else None
        plan = _Plan(jplan, entries, self._generation)
        plan.complete = complete
        return plan

    # --- reading --------------------------------------------------------------------------------

    def read(self, names: Sequence[ObjectName | str] | None = None, *,
             attributes: Sequence[str] | None = None, deadline: float | None = None) -> list[MBean]:
        """Read MBeans: every listed one (names=None; lists first if needed), or the given ones.

        One getAttributes per MBean, spread over the connections. `attributes` restricts the read
        to those attribute names; `deadline` (a time.monotonic() value) bounds the whole read.
        MBeans that vanished or failed are left out (the vanished counted in the stats). An MBean
        whose values did not change since the previous read of the same plan is returned as the
        same (immutable) object. The plan for a `names` list is kept while that list object is passed
        again unchanged (pass a new list when the set changes).
        """
        with self._lock:
            if names is None:
                if self._names is None:
                    self.list_names()
                return self._read_listed(attributes, deadline)
            return self._read_some(names, attributes, deadline)

    def _jnames_for_listed(self, strings: list[str]) -> Any:
        if len(strings) == len(self._strings):
            return self._jnames
        idx = self._name_index()
        return self._engine.select(self._jnames, [idx[st] for st in strings])

    def _read_listed(self, attributes: Sequence[str] | None, deadline: float | None) -> list[MBean]:
        plan = self._plan
        if attributes is None and plan is not None and plan.generation == self._generation and plan.complete:
            return self._run_plan(plan, deadline)  # every listed name has its MBeanInfo: nothing to look up
        targets = list(zip(self._strings, self._names or ()))
        self._ensure_infos(targets, self._jnames_for_listed)
        if attributes is not None:
            plan = self._build_plan(targets, self._jnames_for_listed, frozenset(attributes))
        else:
            if self._plan is None or self._plan.generation != self._generation:
                self._plan = self._build_plan(targets, self._jnames_for_listed, None)
            plan = self._plan
        return self._run_plan(plan, deadline)

    def _read_some(self, names: Sequence[ObjectName | str], attributes: Sequence[str] | None,
                   deadline: float | None) -> list[MBean]:
        key = (id(names), None if attributes is None else tuple(attributes))
        plan = self._subset_plans.get(key)
        if (plan is not None and plan.source is names and plan.size == len(names)
                and plan.generation == self._generation and plan.complete):
            return self._run_plan(plan, deadline)
        targets = []
        for n in names:
            if isinstance(n, str):
                st = n
                n = self._by_string.get(st) or ObjectName.parse(st)
            else:
                st = str(n)
            targets.append((st, n))
        idx = self._name_index() if self._names is not None else {}

        def jnames_for(strings: list[str]) -> Any:
            if all(st in idx for st in strings):
                return self._engine.select(self._jnames, [idx[st] for st in strings])
            return self._engine.parse_names(strings)

        self._ensure_infos(targets, jnames_for)
        plan = self._build_plan(targets, jnames_for, None if attributes is None else frozenset(attributes))
        plan.source, plan.size = names, len(names)
        if len(self._subset_plans) >= 8:
            self._subset_plans.pop(next(iter(self._subset_plans)))
        self._subset_plans[key] = plan
        return self._run_plan(plan, deadline)

    def _run_plan(self, plan: "_Plan", deadline: float | None) -> list[MBean]:
        entries = plan.entries
        if not entries:
            return []
        records, complex_values, rt = self._call(
            lambda: self._engine.read(self._jconns, plan.jplan, len(entries), deadline,
                                      self.settings.read_timeout_seconds), "getAttributes")
        self._stats.round_trips += rt
        out: list[MBean] = []
        append = out.append
        auto = self.settings.auto_exclude_object_name_attributes
        prev_raw, prev_mbeans = plan.prev_raw, plan.prev_mbeans
        if prev_raw is None or len(prev_raw) != len(records):
            prev_raw, prev_mbeans = None, None
        new_mbeans: list[MBean | None] = [None] * len(records)
        decode = convert.decode_record
        excluded = False
        read = 0
        for i, ((n, st, inf, pos), rec) in enumerate(zip(entries, records)):
            if prev_raw is not None and rec == prev_raw[i] and prev_mbeans[i] is not None:
                mb = prev_mbeans[i]  # same text, same values (records with complex values never match)
                new_mbeans[i] = mb
                append(mb)
                read += 1
                continue
            status, values = decode(rec, complex_values) if type(rec) is str else rec
            if status != "o":
                self._note_failure(st, status, "getAttributes")
                continue
            read += 1
            attrs = []
            ia = inf.attrs
            clean = True
            for p, v in zip(pos, values):
                if type(v) is convert._Marker or type(v) is convert.Unsupported:
                    if auto and v is not convert.MISSING:
                        self._auto_excluded.setdefault(st, set()).add(ia[p][0])
                        excluded = True
                    clean = False
                    continue
                a, typ, desc = ia[p]
                attrs.append(Attribute(a, v, desc, typ))
            mb = MBean(n, inf.class_name, tuple(attrs))
            if clean and type(rec) is str and "\x1fx" not in rec:
                new_mbeans[i] = mb
            append(mb)
        plan.prev_raw, plan.prev_mbeans = records if records and type(records[0]) is str else None, new_mbeans
        self._stats.mbeans_read += read
        if excluded:
            self._generation += 1
        return out

    # --- server-side queries --------------------------------------------------------------------

    def _value_exp(self, value: Any) -> Any:
        jp = self._jp
        Q = self._Query
        if isinstance(value, bool):
            return Q.value(jp.JBoolean(value))
        if isinstance(value, int):
            return Q.value(jp.JLong(value))
        if isinstance(value, float):
            return Q.value(jp.JDouble(value))
        if isinstance(value, str):
            return Q.value(jp.JString(value))
        raise TypeError(f"a query value must be bool, int, float or str, not {type(value).__name__}")

    def query_exp(self, attribute: str, op: str, value: Any) -> Any:
        """A javax.management QueryExp `attribute op value` (op: == != > >= < <=)."""
        Q = self._Query
        if op == "!=":
            return Q.not_(Q.eq(Q.attr(attribute), self._value_exp(value)))
        if op not in _OPS:
            raise ValueError(f"unknown query operator {op!r}: use one of == != > >= < <=")
        return getattr(Q, _OPS[op])(Q.attr(attribute), self._value_exp(value))

    def query_names(self, pattern: str, attribute: str | None = None, op: str = "==",
                    value: Any = None, *, also: Sequence[tuple[str, Any]] = ()) -> list[ObjectName]:
        """Names matching `pattern` (and `attribute op value`, and every `attribute op value` of
        `also`, evaluated inside the broker's JVM), in ONE round trip; an MBean whose attribute
        cannot be read or compared does not match.

        Integer and Long gauges both compare as long against an int value; Byte/Short/Double
        compare as double (equal for small integers)."""
        return self._query(pattern, None if attribute is None else self._query_exps(attribute, op, value, also))

    def _query_exps(self, attribute: str, op: str, value: Any, also: Sequence[tuple[str, Any]]) -> Any:
        """`attribute op value` and every `attribute op value` of `also`, as one QueryExp."""
        q = self.query_exp(attribute, op, value)
        for more_op, more_value in also:
            q = self._Query.and_(q, self.query_exp(attribute, more_op, more_value))
        return q

    def _query(self, pattern: str, q: Any) -> list[ObjectName]:
        with self._lock:
            nl = self._call(lambda: self._engine.query(self._mbscs[0], pattern, q, self.settings.read_timeout_seconds), "queryNames")
            self._stats.round_trips += nl.round_trips
            self._stats.queries += nl.round_trips
            return self._parse(nl.strings)


def _is_io(e: Any) -> bool:
    """A Java exception that means the connection, not the MBean, failed."""
    try:
        import jpype

        return isinstance(e, jpype.JClass("java.io.IOException"))
    except Exception:
        return False


def _stub_endpoint(engine: Any, settings: JmxSettings) -> str:
    from exporter.jmx.errors import stub_endpoint

    return stub_endpoint(engine.stub_text(settings))
