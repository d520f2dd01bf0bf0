"""The archive's records: what one line of an archive file holds, as typed values, and the one
encoding and decoding of each (docs/archive-format.md documents the same thing for users).

Encoding: JSON Lines, one record per line, written whole with its newline. JSON because every
tool (and Spark's text and JSON readers) reads it, and because a line is self-delimiting: a crash
in the middle of a write leaves one unterminated last line, which a reader recognises and skips,
and the writer terminates before appending again. Keys are short and fixed, values plain JSON
(NaN and infinities as Python's `json` writes them: NaN, Infinity, -Infinity).

A file is a sequence of segments, each opened by a `Header` (the schema version lives there), and
a segment a sequence of polls: a `Poll` line, the poll's records, an `End` line. A keyframe poll
holds every fact known at that poll; any other poll holds only what changed since the previous
poll of the segment (a removed fact is written with `gone`).

Schema 2 (written now; schema 1 is still read) opens a segment with every keyframe, and seals each
*block* (a header line; a poll from its `Poll` line to its `End` line) with a checksum in its last
line: `,"crc":N}` closes it, N the CRC-32 (zlib's) of every byte of the block before `,"crc":`. A
damaged byte then fails its block's check instead of being read as data, and reading resumes at
the next keyframe, at most one keyframe interval later. Records of one poll:

    Count   one hosted partition's per-partition gauges as the broker showed them
            (InSyncReplicasCount, ReplicasCount: led where ReplicasCount > 0)
    Counts  schema 2 keyframes: the same for one topic's hosted partitions, as columns (a keyframe
            of a big broker is mostly these: one line a topic, not one a partition)
    State   one partition's lists from the Admin API (cluster-wide; written when sidecar.admin is set)
    MinIsr  a topic's min.insync.replicas and where it came from (exporter/source/admin/fallback.py origins)
    Cluster the Admin API's live brokers and whether reassignments are known
    Leaf    one numeric attribute of one MBean (`object` is the ObjectName as Kafka prints it)
    Leaves  keyframes only: one attribute of the members of a per-partition family for one topic,
            columns of partitions and values (a member is `object` + ",topic=T,partition=P")
"""
from __future__ import annotations

import json
import zlib
from typing import Any, NamedTuple, Union

SCHEMA = 2  # the schema written
SCHEMAS = (1, 2)  # the schemas read
CHECKSUM = b',"crc":'  # in a block's last line: the CRC-32 of the block's bytes before it follows
FORMAT = "kafka-jmx-sidecar-archive"
SUFFIX = ".jsonl"


class Header(NamedTuple):
    schema: int
    broker: str | None  # the broker's id (app-info), when known
    sidecar: str  # the sidecar's version that wrote the segment
    opened: float  # seconds since the epoch


class Poll(NamedTuple):
    t: float  # the poll's time (the snapshot's), seconds since the epoch
    keyframe: bool
    version: str | None  # the broker's release (app-info Version), None: not known this poll
    admin: bool  # the Admin API was read for this poll (else its facts are the last known)


class Count(NamedTuple):
    topic: str
    partition: int
    isr: int | None  # InSyncReplicasCount; None: gone (no longer hosted)
    replicas: int | None  # ReplicasCount (0: not the leader)

    @property
    def gone(self) -> bool:
        return self.isr is None


class Counts(NamedTuple):
    topic: str
    partitions: tuple[int, ...]
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


class State(NamedTuple):
    topic: str
    partition: int
    leader: int | None  # None: no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    gone: bool = False
    elr: tuple[int, ...] | None = None  # eligible leader replicas (KIP-966); None: not known (key absent)


class MinIsr(NamedTuple):
    topic: str
    value: int | None  # None: gone
    origin: str | None = None


class Cluster(NamedTuple):
    live: tuple[int, ...]  # live broker ids
    reassignments: str = "known"  # "known", else why not (source.admin.view.Reason values)


class Leaf(NamedTuple):
    object: str
    attribute: str
    value: int | float | bool | None  # None: gone


class Leaves(NamedTuple):
    object: str  # the family's ObjectName without topic and partition
    attribute: str
    topic: str
    partitions: tuple[int, ...]
    values: tuple[int | float | bool, ...]


class End(NamedTuple):
    records: int  # records of the poll between its Poll and this line


Record = Union[Header, Poll, Count, Counts, State, MinIsr, Cluster, Leaf, Leaves, End]


class Malformed(ValueError):
    """A line that is JSON but not a record of this schema; `reason` is a short fixed label."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


# --- encoding -----------------------------------------------------------------------------------

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def encode(record: Record) -> str:
    """One record as its line, newline included."""
    return _dumps(_object(record)) + "\n"


def sealed(record: Header | End, crc: int = 0) -> bytes:
    """A block's last line with its checksum: `crc` is the CRC-32 of the block's lines before it
    (0 for a header, a block of one line)."""
    head = _dumps(_object(record))[:-1].encode() + CHECKSUM
    return b"%s%d}\n" % (head, zlib.crc32(head, crc))


def sound(line: bytes, crc: int = 0) -> bool:
    """Whether a block's last line (newline included) carries the checksum of the block: `crc` is
    the CRC-32 of the block's lines before it."""
    head, mark, tail = line.rpartition(CHECKSUM)
    digits = tail[:-2]
    if not mark or tail[-2:] != b"}\n" or not digits.isdigit() or len(digits) > 10:
        return False
    return zlib.crc32(mark, zlib.crc32(head, crc)) == int(digits)


def _object(r: Record) -> dict[str, Any]:
    kind = r.__class__
    if kind is Count:
        if r.isr is None:
            return {"k": "count", "topic": r.topic, "partition": r.partition, "gone": True}
        return {"k": "count", "topic": r.topic, "partition": r.partition, "isr": r.isr, "replicas": r.replicas}
    if kind is Leaf:
        if r.value is None:
            return {"k": "leaf", "object": r.object, "attribute": r.attribute, "gone": True}
        return {"k": "leaf", "object": r.object, "attribute": r.attribute, "value": r.value}
    if kind is State:
        if r.gone:
            return {"k": "state", "topic": r.topic, "partition": r.partition, "gone": True}
        out = {"k": "state", "topic": r.topic, "partition": r.partition, "leader": r.leader,
               "replicas": list(r.replicas), "isr": list(r.isr)}
        if r.adding:
            out["adding"] = list(r.adding)
        if r.removing:
            out["removing"] = list(r.removing)
        if r.elr is not None:
            out["elr"] = list(r.elr)
        return out
    if kind is MinIsr:
        if r.value is None:
            return {"k": "minisr", "topic": r.topic, "gone": True}
        return {"k": "minisr", "topic": r.topic, "value": r.value, "origin": r.origin}
    if kind is Poll:
        return {"k": "poll", "t": r.t, "keyframe": r.keyframe, "version": r.version, "admin": r.admin}
    if kind is End:
        return {"k": "end", "records": r.records}
    if kind is Counts:
        return {"k": "counts", "topic": r.topic, "partitions": list(r.partitions), "isr": list(r.isr),
                "replicas": list(r.replicas)}
    if kind is Leaves:
        return {"k": "leaves", "object": r.object, "attribute": r.attribute, "topic": r.topic,
                "partitions": list(r.partitions), "values": list(r.values)}
    if kind is Cluster:
        return {"k": "cluster", "live": list(r.live), "reassignments": r.reassignments}
    if kind is Header:
        return {"k": "archive", "format": FORMAT, "schema": r.schema, "broker": r.broker, "sidecar": r.sidecar,
                "opened": r.opened}
    raise TypeError(f"not an archive record: {r!r}")


# --- decoding -----------------------------------------------------------------------------------

def _str(obj: dict, key: str) -> str:
    v = obj.get(key)
    if v.__class__ is not str or not v:
        raise Malformed("malformed record", f'"{key}" must be a non-empty string, got {json.dumps(v)}')
    return v


def _int(obj: dict, key: str, *, minimum: int = 0, optional: bool = False) -> int | None:
    v = obj.get(key)
    if v is None and optional:
        return None
    if v.__class__ is not int or v < minimum:
        raise Malformed("malformed record", f'"{key}" must be an integer >= {minimum}, got {json.dumps(v)}')
    return v


def _ids(obj: dict, key: str, *, optional: bool = False) -> tuple[int, ...]:
    v = obj.get(key)
    if v is None and optional:
        return ()
    if v.__class__ is not list or any(x.__class__ is not int for x in v):
        raise Malformed("malformed record", f'"{key}" must be a list of broker ids, got {json.dumps(v)}')
    return tuple(v)


def _number(v: Any, where: str) -> int | float | bool:
    if v.__class__ not in (int, float, bool):
        raise Malformed("malformed record", f'{where} must be a number, got {json.dumps(v)}')
    return v


def _gone(obj: dict) -> bool:
    return obj.get("gone") is True


def decode_header(obj: dict) -> Header:
    """An `archive` line; the caller has checked `schema` (unknown versions are not decoded)."""
    broker = obj.get("broker")
    opened = obj.get("opened")
    if broker is not None and broker.__class__ is not str:
        raise Malformed("malformed record", f'"broker" must be a string or null, got {json.dumps(broker)}')
    if opened.__class__ not in (int, float):
        raise Malformed("malformed record", f'"opened" must be a time in seconds, got {json.dumps(opened)}')
    return Header(obj["schema"], broker, str(obj.get("sidecar", "")), float(opened))


def decode(obj: Any) -> Record:
    """A decoded JSON line of a schema-1 segment as its record. Raises Malformed."""
    if obj.__class__ is not dict:
        raise Malformed("malformed record", "a line must be a JSON object")
    kind = obj.get("k")
    if kind == "count":
        topic, partition = _str(obj, "topic"), _int(obj, "partition")
        if _gone(obj):
            return Count(topic, partition, None, None)
        return Count(topic, partition, _int(obj, "isr"), _int(obj, "replicas"))
    if kind == "leaf":
        name, attribute = _str(obj, "object"), _str(obj, "attribute")
        if _gone(obj):
            return Leaf(name, attribute, None)
        return Leaf(name, attribute, _number(obj.get("value"), '"value"'))
    if kind == "state":
        topic, partition = _str(obj, "topic"), _int(obj, "partition")
        if _gone(obj):
            return State(topic, partition, None, (), (), gone=True)
        return State(topic, partition, _int(obj, "leader", optional=True), _ids(obj, "replicas"), _ids(obj, "isr"),
                     _ids(obj, "adding", optional=True), _ids(obj, "removing", optional=True),
                     elr=_ids(obj, "elr") if "elr" in obj else None)
    if kind == "minisr":
        topic = _str(obj, "topic")
        if _gone(obj):
            return MinIsr(topic, None, None)
        origin = obj.get("origin")
        return MinIsr(topic, _int(obj, "value", minimum=1), origin if origin.__class__ is str else None)
    if kind == "poll":
        t, version = obj.get("t"), obj.get("version")
        if t.__class__ not in (int, float):
            raise Malformed("malformed record", f'"t" must be a time in seconds, got {json.dumps(t)}')
        if version is not None and version.__class__ is not str:
            raise Malformed("malformed record", f'"version" must be a string or null, got {json.dumps(version)}')
        return Poll(float(t), obj.get("keyframe") is True, version, obj.get("admin") is True)
    if kind == "end":
        return End(_int(obj, "records"))
    if kind == "counts":
        columns = [obj.get(key) for key in ("partitions", "isr", "replicas")]
        if (any(c.__class__ is not list or len(c) != len(columns[0]) for c in columns)
                or any(x.__class__ is not int or x < 0 for c in columns for x in c)):
            raise Malformed("malformed record", '"partitions", "isr" and "replicas" must be lists of as many '
                            "integers >= 0")
        return Counts(_str(obj, "topic"), *map(tuple, columns))
    if kind == "leaves":
        partitions, values = obj.get("partitions"), obj.get("values")
        if (partitions.__class__ is not list or values.__class__ is not list or len(partitions) != len(values)
                or any(p.__class__ is not int for p in partitions)):
            raise Malformed("malformed record", '"partitions" and "values" must be lists of the same length')
        for v in values:
            _number(v, '"values"')
        return Leaves(_str(obj, "object"), _str(obj, "attribute"), _str(obj, "topic"), tuple(partitions),
                      tuple(values))
    if kind == "cluster":
        reassignments = obj.get("reassignments", "known")
        return Cluster(_ids(obj, "live"), reassignments if reassignments.__class__ is str else "known")
    if kind == "archive":
        raise Malformed("malformed record", "a header is read by the reader, not decoded here")
    raise Malformed("unknown record kind", f'"k" is {json.dumps(kind)}')


def member_object(family: str, topic: str, partition: int) -> str:
    """The ObjectName of a per-partition family's member, as `Leaves` lines abbreviate it."""
    return f"{family},topic={topic},partition={partition}"
