"""JPypeEngine: the JVM-side work as plain JPype calls, for a JVM without a compiler (see engine.py)."""
from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import Any, Sequence

from kafka_jmx_sidecar.exporter.source.jmx import convert
from kafka_jmx_sidecar.exporter.source.jmx.client_settings import JmxSettings
from kafka_jmx_sidecar.exporter.source.jmx.engine import BatchFailure, NameList


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
