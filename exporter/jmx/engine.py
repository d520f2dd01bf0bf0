"""The two ways of doing the JVM-side work; the client above them does not care which runs.

`JavaEngine` calls the compiled SidecarJmx helper: one JPype call per batch, parallel reads on
Java threads (one per connection), results as one string. `JPypeEngine` makes the same JMX calls
one by one through JPype (parallel on Python threads: JPype releases the GIL during Java calls)
and converts each value in Python; it needs no compiler and is the baseline the benchmark
compares against.

read() returns one record per MBean: the helper's text (JavaEngine; convert.decode_record makes
it (status, values)) or (status, values) itself (JPypeEngine). Both raise BatchFailure carrying
the Java exception when a connection fails mid-batch.
"""
from __future__ import annotations

import concurrent.futures
import threading
import time
from array import array
from dataclasses import dataclass
from typing import Any, Sequence

from exporter.jmx import convert
from exporter.jmx.client_settings import JmxSettings


class BatchFailure(Exception):
    """A connection-level failure (IOException, deadline) during a batch; `.java` is the cause."""

    def __init__(self, java: Any, connection: int = -1, round_trips: int = 0):
        super().__init__("batch failed")
        self.java = java
        self.connection = connection
        self.round_trips = round_trips


class NameList:
    __slots__ = ("strings", "jnames", "round_trips")

    def __init__(self, strings: list[str], jnames: Any, round_trips: int):
        self.strings = strings
        self.jnames = jnames
        self.round_trips = round_trips


def _ints(typecode: str, jarray: Any) -> array:
    """A Java int[] as an array, copied through the buffer protocol (no Python int per element)."""
    out = array(typecode)
    if len(jarray):
        out.frombytes(memoryview(jarray).cast("B"))
    return out


def _deadline_ms(deadline: float | None) -> int:
    """A time.monotonic() deadline -> Java wall-clock millis (0 = none)."""
    if deadline is None:
        return 0
    return int((time.time() + max(0.0, deadline - time.monotonic())) * 1000)


@dataclass(frozen=True)
class Census:
    """What a listing matched before the exclude patterns took names out (jmx_exporter's visiting
    order depends on it): how many names, how many of them per domain, how many domains the
    broker has, how many names each include pattern matched; per name read whole (in the order
    of the names listed) the first include pattern that matched it and its class name's hash."""

    listed: int
    per_domain: dict
    domains: int
    pattern_sizes: tuple = ()
    rest_pattern: Any = ()
    rest_class: Any = ()


class JavaEngine:
    def __init__(self, helper: Any):
        import jpype

        self.h = helper
        self.jpype = jpype
        self.ObjectName = jpype.JClass("javax.management.ObjectName")
        self.String = jpype.JClass("java.lang.String")
        self.MBSC = jpype.JClass("javax.management.MBeanServerConnection")
        self.Plan = jpype.JClass("sidecar.jmx.SidecarJmx$Plan", loader=helper.class_.getClassLoader())

    def connect(self, settings: JmxSettings) -> Any:
        timeout_ms = int(settings.connect_timeout_seconds * 1000)
        self.h.installSocketFactory(timeout_ms)
        return self.h.connect(settings.url, settings.username, settings.password, settings.ssl, timeout_ms)

    def close(self, connector: Any) -> None:
        self.h.closeQuietly(connector)

    def stub_text(self, settings: JmxSettings) -> str:
        return stub_text(settings)

    def conns(self, mbscs: Sequence[Any]) -> Any:
        return self.jpype.JArray(self.MBSC)(list(mbscs))

    def _names(self, r: Any) -> NameList:
        text = str(r.text)
        return NameList(text.split("\n") if text else [], r.names, int(r.roundTrips))

    def list_names(self, mbsc: Any, include: Sequence[str], exclude: Sequence[str], stall: float) -> NameList:
        S = self.jpype.JArray(self.String)
        return self._names(self.h.listNames(mbsc, S(list(include)), S(list(exclude)), int(stall * 1000)))

    def query(self, mbsc: Any, pattern: str, query: Any, stall: float) -> NameList:
        return self._names(self.h.query(mbsc, pattern, query, int(stall * 1000)))

    def list_split(self, mbsc: Any, include: Sequence[str], exclude: Sequence[str], families: Sequence[str],
                   previous: Sequence[Any], stall: float) -> tuple[NameList, array, list]:
        """list_names with the members of `families` as columns: the rest, the rest's canonical
        name hashes, and per family (handle, topics, topic, partition, hash columns), or None
        where the family is its `previous` handle, unchanged."""
        S = self.jpype.JArray(self.String)
        r = self.h.listSplit(mbsc, S(list(include)), S(list(exclude)), S(list(families)),
                             self.jpype.JArray(self.jpype.JObject)(list(previous)), int(stall * 1000))
        out = []
        for m, hashes, patterns in zip(r.families, r.hashes, r.memberPatterns):
            if hashes is None:
                out.append(None)
                continue
            text = str(m.topicsText())
            out.append((m, text.split("\n") if text else [], _ints("I", m.topicColumn()),
                        _ints("I", m.partitionColumn()), _ints("i", hashes),
                        None if patterns is None else _ints("I", patterns)))
        census = {}
        lines = str(r.domainCounts).split("\n")
        for domain, count in zip(lines[0::2], lines[1::2]):
            census[domain] = int(count)
        return self._names(r.rest), _ints("i", r.restHash), out, Census(
            int(r.listedTotal), census, int(r.serverDomains), tuple(int(n) for n in r.patternSizes),
            _ints("I", r.restPattern), _ints("i", r.restClass))

    def read_members(self, conns: Any, members: Any, positions: Sequence[int] | None, attribute: str,
                     deadline: float | None, stall: float) -> tuple[list, Any, int]:
        jp = self.jpype.JArray(self.jpype.JInt)(positions) if positions is not None else None
        r = self.h.readMembers(conns, members, jp, attribute, _deadline_ms(deadline), int(stall * 1000))
        self._check(r)
        count = len(positions) if positions is not None else int(members.size())
        return convert.split_records(str(r.text), count), r.complex, int(r.roundTrips)

    def query_members(self, mbsc: Any, pattern: str, query: Any, families: Sequence[Any], stall: float) -> list[array]:
        fams = self.jpype.JArray(self.jpype.JObject)(list(families))
        return [_ints("I", hits) for hits in self.h.queryMembers(mbsc, pattern, query, fams, int(stall * 1000))]

    def parse_names(self, strings: Sequence[str]) -> Any:
        return self.h.parseNames("\n".join(strings))

    def select(self, jnames: Any, indices: Sequence[int]) -> Any:
        return self.h.select(jnames, self.jpype.JArray(self.jpype.JInt)(indices))

    def _check(self, r: Any) -> None:
        if r.failure is not None:
            raise BatchFailure(r.failure, int(r.failedConnection), int(r.roundTrips))

    def infos(self, conns: Any, jnames: Any, count: int, deadline: float | None, stall: float) -> tuple[list, int]:
        r = self.h.infos(conns, jnames, _deadline_ms(deadline), int(stall * 1000))
        self._check(r)
        return convert.decode_infos(str(r.text), count), int(r.roundTrips)

    def plan(self, jnames: Any, attr_sets: Sequence[Sequence[str]], attr_set: Sequence[int]) -> Any:
        jp = self.jpype
        sets = jp.JArray(jp.JArray(self.String))([jp.JArray(self.String)(list(s)) for s in attr_sets])
        return self.Plan(jnames, sets, jp.JArray(jp.JInt)(attr_set))

    def read(self, conns: Any, plan: Any, count: int, deadline: float | None, stall: float) -> tuple[list, int]:
        r = self.h.read(conns, plan, _deadline_ms(deadline), int(stall * 1000))
        self._check(r)
        return convert.split_records(str(r.text), count), r.complex, int(r.roundTrips)


def _java_env(settings: JmxSettings) -> Any:
    import jpype

    env = jpype.JClass("java.util.HashMap")()
    if settings.username:
        String = jpype.JClass("java.lang.String")
        env.put(jpype.JClass("javax.management.remote.JMXConnector").CREDENTIALS,
                jpype.JArray(String)([settings.username, settings.password or ""]))
    if settings.ssl:
        env.put("com.sun.jndi.rmi.factory.socket", jpype.JClass("javax.rmi.ssl.SslRMIClientSocketFactory")())
    return env


def stub_text(settings: JmxSettings) -> str:
    """The RMI stub the broker's registry hands out (toString names its host:port)."""
    import jpype

    host, _, port = settings.endpoint.rpartition(":")
    if not port.isdigit():
        return ""
    LocateRegistry = jpype.JClass("java.rmi.registry.LocateRegistry")
    csf = jpype.JClass("javax.rmi.ssl.SslRMIClientSocketFactory")() if settings.ssl else None
    registry = LocateRegistry.getRegistry(host.strip("[]"), int(port), csf)
    name = settings.url.rstrip("/").rpartition("/")[2] or "jmxrmi"
    return str(registry.lookup(name).toString())


class JPypeEngine:
    """Plain JPype calls; no compiler needed. Same results as JavaEngine, more CPU per value."""

    def __init__(self) -> None:
        import jpype

        self.jpype = jpype
        self.ObjectName = jpype.JClass("javax.management.ObjectName")
        self.String = jpype.JClass("java.lang.String")
        self.IOException = jpype.JClass("java.io.IOException")
        self.InstanceNotFound = jpype.JClass("javax.management.InstanceNotFoundException")
        self.Factory = jpype.JClass("javax.management.remote.JMXConnectorFactory")
        self.URL = jpype.JClass("javax.management.remote.JMXServiceURL")
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def _executor(self, n: int) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None or self._pool._max_workers < n:  # noqa: SLF001
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(n, 1), thread_name_prefix="jmx")
        return self._pool

    def connect(self, settings: JmxSettings) -> Any:
        url, env = self.URL(settings.url), _java_env(settings)
        box: list = []

        def attempt() -> None:
            try:
                box.append((True, self.Factory.connect(url, env)))
            except Exception as e:  # handed to the caller below
                box.append((False, e))
                return
            if abandoned.is_set():  # too late: nobody will use it
                self.close(box[0][1])

        abandoned = threading.Event()
        t = threading.Thread(target=attempt, name="jmx-connect", daemon=True)
        t.start()
        t.join(settings.connect_timeout_seconds)
        if not box:
            abandoned.set()
            raise BatchFailure(self.jpype.JClass("java.net.SocketTimeoutException")(
                f"connect timed out after {int(settings.connect_timeout_seconds * 1000)} ms"))
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def close(self, connector: Any) -> None:
        def quietly() -> None:
            try:
                connector.close()
            except Exception:
                pass
        threading.Thread(target=quietly, name="jmx-close", daemon=True).start()

    def stub_text(self, settings: JmxSettings) -> str:
        return stub_text(settings)

    def conns(self, mbscs: Sequence[Any]) -> list:
        return list(mbscs)

    def _sorted(self, names: Any, round_trips: int) -> NameList:
        pairs = sorted((str(n.toString()), n) for n in names)
        strings = [s for s, _ in pairs]
        jnames = self.jpype.JArray(self.ObjectName)([n for _, n in pairs])
        return NameList(strings, jnames, round_trips)

    def list_names(self, mbsc: Any, include: Sequence[str], exclude: Sequence[str], stall: float) -> NameList:
        found = self.jpype.JClass("java.util.HashSet")()
        for p in include:
            found.addAll(mbsc.queryNames(self.ObjectName(p), None))
        ex = [self.ObjectName(p) for p in exclude]
        kept = [n for n in found if not any(e.apply(n) for e in ex)]
        return self._sorted(kept, len(include))

    def query(self, mbsc: Any, pattern: str, query: Any, stall: float) -> NameList:
        return self._sorted(list(mbsc.queryNames(self.ObjectName(pattern), query)), 1)

    def parse_names(self, strings: Sequence[str]) -> Any:
        return self.jpype.JArray(self.ObjectName)([self.ObjectName(s) for s in strings])

    def select(self, jnames: Any, indices: Sequence[int]) -> Any:
        return self.jpype.JArray(self.ObjectName)([jnames[i] for i in indices])

    def _run(self, conns: list, count: int, deadline: float | None, stall: float, one) -> tuple[list, int]:
        out: list = [None] * count
        chunk = max(1, min(64, count // (8 * max(1, len(conns)))))  # every connection gets work
        chunks = list(range(0, count, chunk))
        failure: list = []
        done = [0]

        def work(k: int, starts: list[int]) -> None:
            for start in starts:
                if failure:
                    return
                if deadline is not None and time.monotonic() > deadline:
                    failure.append(BatchFailure(self.jpype.JClass("java.util.concurrent.TimeoutException")(
                        "the batch did not finish before its deadline"), k, 0))
                    return
                for i in range(start, min(count, start + chunk)):
                    try:
                        out[i] = one(conns[k], i)
                    except self.IOException as e:
                        failure.append(BatchFailure(e, k, 0))
                        return
                    done[0] += 1

        n = min(len(conns), max(1, len(chunks)))
        futures = [self._executor(n).submit(work, k, chunks[k::n]) for k in range(n)]
        seen, since = -1, time.monotonic()
        while not all(f.done() for f in futures):
            concurrent.futures.wait(futures, timeout=0.05)
            if done[0] != seen:
                seen, since = done[0], time.monotonic()
            elif time.monotonic() - since > stall:
                failure.append(BatchFailure(self.jpype.JClass("java.net.SocketTimeoutException")(
                    f"no answer within {int(stall * 1000)} ms"), -1, 0))
                break
        if failure:
            failure[0].round_trips = done[0]
            raise failure[0]
        return out, done[0]

    def infos(self, conns: list, jnames: Any, count: int, deadline: float | None, stall: float) -> tuple[list, int]:
        def one(mbsc: Any, i: int):
            try:
                info = mbsc.getMBeanInfo(jnames[i])
            except self.IOException:
                raise
            except self.InstanceNotFound:
                return ("g", "", ())
            except Exception as e:  # JMException, RuntimeException from the server
                return ("e" + str(e), "", ())
            attrs = tuple((str(a.getName()), str(a.getType()),
                           None if a.getDescription() is None else str(a.getDescription()))
                          for a in info.getAttributes() if a.isReadable())
            return ("o", str(info.getClassName()), attrs)
        return self._run(conns, count, deadline, stall, one)

    def plan(self, jnames: Any, attr_sets: Sequence[Sequence[str]], attr_set: Sequence[int]) -> Any:
        sets = [self.jpype.JArray(self.String)(list(s)) for s in attr_sets]
        return (jnames, [list(s) for s in attr_sets], sets, list(attr_set))

    def read(self, conns: list, plan: Any, count: int, deadline: float | None, stall: float) -> tuple[list, int]:
        jnames, py_sets, sets, attr_set = plan
        to_python = convert.to_python

        def one(mbsc: Any, i: int):
            want = py_sets[attr_set[i]]
            try:
                got = mbsc.getAttributes(jnames[i], sets[attr_set[i]])
            except self.IOException as e:
                if not untransferable(e):
                    raise
                return self._one_by_one(mbsc, jnames[i], want)
            except self.InstanceNotFound:
                return ("g", [])
            except Exception as e:
                return ("e" + str(e), [])
            values = dict((str(a.getName()), a.getValue()) for a in got)
            return ("o", [to_python(values[w]) if w in values else convert.MISSING for w in want])
        records, rt = self._run(conns, count, deadline, stall, one)
        return records, None, rt

    def _one_by_one(self, mbsc: Any, name: Any, want: Sequence[str]):
        values = []
        for w in want:
            try:
                values.append(convert.to_python(mbsc.getAttribute(name, w)))
            except self.InstanceNotFound:
                return ("g", [])
            except self.IOException as e:
                if not untransferable(e):
                    raise
                values.append(convert.Unsupported("not transferable"))
            except Exception:
                values.append(convert.MISSING)
        return ("o", values)


_UNTRANSFERABLE = ("java.io.NotSerializableException", "java.io.WriteAbortedException",
                   "java.lang.ClassNotFoundException", "java.io.InvalidClassException")


def untransferable(e: Any) -> bool:
    """A value that cannot cross the wire (not Serializable, unknown class): not a broken connection."""
    for _ in range(10):
        if e is None:
            return False
        if str(e.getClass().getName()) in _UNTRANSFERABLE:
            return True
        e = e.getCause()
    return False
