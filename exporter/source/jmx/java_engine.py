"""JavaEngine: the JVM-side work done by the compiled SidecarJmx helper (see engine.py)."""
from __future__ import annotations

import time
from array import array
from typing import Any, Iterator, Sequence

from kafka_jmx_sidecar.exporter.source.jmx import convert
from kafka_jmx_sidecar.exporter.source.jmx.client_settings import JmxSettings
from kafka_jmx_sidecar.exporter.source.jmx.engine import BatchFailure, Census, NameList


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


class JavaEngine:
    """Calls of the compiled SidecarJmx helper `h`: one JPype call per batch."""

    def __init__(self, helper: Any):
        import jpype

        self.h = helper
        self.jpype = jpype
        self.String = jpype.JClass("java.lang.String")
        self.MBSC = jpype.JClass("javax.management.MBeanServerConnection")
        self.Plan = jpype.JClass("sidecar.jmx.SidecarJmx$Plan", loader=helper.class_.getClassLoader())
        self.Background = jpype.JClass("sidecar.jmx.Background", loader=helper.class_.getClassLoader())
        self.Connecting = jpype.JClass("sidecar.jmx.Connecting", loader=helper.class_.getClassLoader())
        self.Together = jpype.JClass("sidecar.jmx.Together", loader=helper.class_.getClassLoader())
        self.QueryExp = jpype.JClass("javax.management.QueryExp")

    def connect(self, settings: JmxSettings) -> Any:
        timeout_ms = int(settings.connect_timeout_seconds * 1000)
        self.Connecting.installSocketFactory(timeout_ms)
        return self.Connecting.connect(settings.url, settings.username, settings.password, settings.ssl, timeout_ms)

    def connect_all(self, settings: JmxSettings, n: int) -> list:
        """n connections made at once (Connecting.connectAll)."""
        timeout_ms = int(settings.connect_timeout_seconds * 1000)
        self.Connecting.installSocketFactory(timeout_ms)
        return list(self.Connecting.connectAll(settings.url, settings.username, settings.password, settings.ssl,
                                               timeout_ms, n))

    def close(self, connector: Any) -> None:
        self.Connecting.closeQuietly(connector)

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

    def list_split(self, conns: Any, include: Sequence[str], exclude: Sequence[str], families: Sequence[str],
                   previous: Sequence[Any], answer_most: int, stall: float) -> tuple[NameList, array, list]:
        """list_names with the members of `families` as columns: the rest, the rest's canonical
        name hashes, and per family (handle, topics, topic, partition, hash columns, first
        patterns, key hash columns), or None where the family is its `previous` handle, unchanged.
        The families' names are asked over the connections `conns`, two at a time while their
        `previous` members add up to `answer_most` names at most."""
        S = self.jpype.JArray(self.String)
        r = self.h.listSplit(conns, S(list(include)), S(list(exclude)), S(list(families)),
                             self.jpype.JArray(self.jpype.JObject)(list(previous)), answer_most, int(stall * 1000))
        out = []
        for m, hashes, patterns, key_hashes in zip(r.families, r.hashes, r.memberPatterns, r.keyHashes):
            if hashes is None:
                out.append(None)
                continue
            text = str(m.topicsText())
            out.append((m, text.split("\n") if text else [], _ints("I", m.topicColumn()),
                        _ints("I", m.partitionColumn()), _ints("i", hashes),
                        None if patterns is None else _ints("I", patterns), _ints("i", key_hashes)))
        census = {}
        lines = str(r.domainCounts).split("\n")
        for domain, count in zip(lines[0::2], lines[1::2]):
            census[domain] = int(count)
        return self._names(r.rest), _ints("i", r.restHash), out, Census(
            int(r.listedTotal), census, int(r.serverDomains), tuple(int(n) for n in r.patternSizes),
            _ints("I", r.restPattern), _ints("i", r.restClass), _ints("i", r.restKeyHash),
            tuple(str(c) for c in r.classNames), _ints("i", r.restClassIndex))

    def read_members(self, conns: Any, members: Any, positions: Sequence[int] | None, attribute: str,
                     deadline: float | None, stall: float) -> tuple[list, Any, int]:
        jp = self.jpype.JArray(self.jpype.JInt)(positions) if positions is not None else None
        r = self.h.readMembers(conns, members, jp, attribute, _deadline_ms(deadline), int(stall * 1000))
        self._check(r)
        count = len(positions) if positions is not None else int(members.size())
        return convert.split_records(str(r.text), count), r.complex, int(r.roundTrips)

    def start_reads(self, conns: Any, members: Sequence[Any], attribute: str, plan: Any, deadline: float | None,
                    stall: float) -> Any:
        """Background.start: `attribute` of every member of each of `members`, then `plan` (None:
        nothing), read on pool threads while the caller goes on; finish_reads() collects them."""
        jp = self.jpype
        return self.Background.start(conns, jp.JArray(jp.JObject)(list(members)), attribute, plan,
                                     _deadline_ms(deadline), int(stall * 1000))

    def finish_reads(self, started: Any, counts: Sequence[int]) -> Iterator[tuple[Any, Any, int, float]]:
        """(records, complex values, round trips, seconds) of each read start_reads() began, in
        its order, each as soon as it is read (counts: how many records each has; records are
        split when called); BatchFailure at the first that failed, with its round trips."""
        for k, count in enumerate(counts):
            r = started.get(k)
            if r is None:  # nothing to read there
                yield list, (), 0, 0.0
                continue
            if r.failure is not None:
                raise BatchFailure(r.failure, int(r.failedConnection), int(r.roundTrips))
            yield ((lambda r=r, count=count: convert.split_records(str(r.text), count)), r.complex,
                   int(r.roundTrips), int(r.nanos) / 1e9)

    def query_members(self, mbsc: Any, pattern: str, query: Any, families: Sequence[Any], stall: float) -> list[array]:
        fams = self.jpype.JArray(self.jpype.JObject)(list(families))
        return [_ints("I", hits) for hits in self.h.queryMembers(mbsc, pattern, query, fams, int(stall * 1000))]

    def start_queries(self, conns: Any, lanes: Any, asks: Sequence[tuple[str, Any, Sequence[Any], int]],
                      answer_most: int, stall: float) -> Any:
        """Together.start: each ask (pattern, QueryExp, families' handles, names expected) asked
        on pool threads while the caller goes on, one per permit of `lanes` (Together.lanes);
        query_answer() collects each. An ask's families None: named when its answer is taken."""
        jp = self.jpype
        return self.Together.start(conns, lanes, jp.JArray(self.String)([a[0] for a in asks]),
                                   jp.JArray(self.QueryExp)([a[1] for a in asks]),
                                   jp.JArray(jp.JArray(jp.JObject))([None if a[2] is None else jp.JArray(jp.JObject)(list(a[2]))
                                                                     for a in asks]),
                                   jp.JArray(jp.JInt)([a[3] for a in asks]), answer_most, int(stall * 1000))

    def query_lanes(self, connections: int) -> Any:
        return self.Together.lanes(connections)

    def query_answer(self, started: Any, k: int, families: Sequence[Any] | None = None) -> tuple[list[array], float]:
        """The k-th answer of start_queries() (as query_members() gives it) and its seconds;
        `families`: the handles its answer is about, when it was started with none."""
        hits = started.get(k, None if families is None else self.jpype.JArray(self.jpype.JObject)(list(families)))
        return [_ints("I", h) for h in hits], int(started.nanos[k]) / 1e9

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
