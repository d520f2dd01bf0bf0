"""Partition states from the two text forms operators have: JSON Lines (the `health` command's
input, README) and saved `kafka-topics.sh --describe` output of any released Kafka version.

Readers yield `Parsed(line_no, state, source)` for good lines and `Rejected(line_no, reason)` for
bad ones and never stop early: one malformed line must not hide the rest.
"""
from __future__ import annotations

import json
import re
from itertools import chain
from typing import Iterable, Iterator, NamedTuple

from kafka_jmx_sidecar.mbeans.health import NO_LEADER, PartitionState


class Parsed(NamedTuple):
    line_no: int
    state: PartitionState
    text: str  # the input line as read (JSON Lines) or "" (describe text)


class Rejected(NamedTuple):
    line_no: int
    reason: str


class InputError(ValueError):
    pass


# --- JSON Lines ---------------------------------------------------------------------------------

_OPTIONAL_LISTS = ("adding_replicas", "removing_replicas")
_KNOWN = {"topic", "partition", "leader", "replicas", "isr", "min_isr", "live_brokers", *_OPTIONAL_LISTS}


def _ids(obj: dict, key: str, *, required: bool) -> tuple[int, ...]:
    value = obj.get(key)
    if value is None:
        if required:
            raise InputError(f'"{key}" is missing (a list of broker ids)')
        return ()
    if type(value) is not list or any(type(v) is not int for v in value):
        raise InputError(f'"{key}" must be a list of integer broker ids, got {json.dumps(value)}')
    return tuple(value)


_INT = {int}
_new_state = tuple.__new__  # skips NamedTuple's Python-level __new__; every field is given


def _is_ids(value: object) -> bool:
    return value.__class__ is list and _INT.issuperset(map(type, value))


def state_from_object(obj: object) -> PartitionState:
    """Validate one decoded JSON object. Raises InputError saying which field is wrong.

    One combined check covers the common, valid case; the field-by-field checks that explain
    what is wrong run only when it fails (this runs a million times in `health`)."""
    if obj.__class__ is dict:
        get = obj.get
        topic, partition, leader = get("topic"), get("partition"), get("leader", False)
        replicas, isr, min_isr = get("replicas"), get("isr"), get("min_isr", 1)
        adding, removing = get("adding_replicas", ()), get("removing_replicas", ())
        if (topic.__class__ is str and topic and partition.__class__ is int and partition >= 0
                and (leader is None or (leader.__class__ is int and leader >= NO_LEADER))
                and replicas.__class__ is list and (replicas or leader is None or leader == NO_LEADER)
                and isr.__class__ is list
                and (adding == () or adding.__class__ is list) and (removing == () or removing.__class__ is list)
                and _INT.issuperset(map(type, chain(replicas, isr, adding, removing)))
                and (not isr or min(isr) >= 0) and min_isr.__class__ is int and min_isr >= 1
                and "live_brokers" not in obj):
            return _new_state(PartitionState, (
                topic, partition, None if leader is None or leader == NO_LEADER else leader,
                tuple(replicas), tuple(isr), tuple(adding), tuple(removing), min_isr, None))
    return _explain_invalid(obj)


def _explain_invalid(obj: object) -> PartitionState:
    if type(obj) is not dict:
        raise InputError("expected a JSON object, one partition per line")
    topic = obj.get("topic")
    if type(topic) is not str or not topic:
        raise InputError('"topic" must be a non-empty string')
    partition = obj.get("partition")
    if type(partition) is not int or partition < 0:
        raise InputError(f'"partition" must be a non-negative integer, got {json.dumps(partition)}')
    if "leader" not in obj:
        raise InputError('"leader" is missing (a broker id, or -1 / null for none)')
    leader = obj["leader"]
    if leader is not None and (type(leader) is not int or leader < NO_LEADER):
        raise InputError(f'"leader" must be a broker id, -1 or null, got {json.dumps(leader)}')
    replicas = _ids(obj, "replicas", required=True)
    if not replicas and leader is not None and leader != NO_LEADER:
        # no replicas is a partition whose assignment is not known yet (Kafka lists it without a
        # leader): judged as Kafka judges it, unavailable; a leader of no replica is not a state
        raise InputError('"replicas" is empty but "leader" names a broker: a led partition has at least one replica')
    isr = _ids(obj, "isr", required=True)
    if any(r < 0 for r in isr):
        raise InputError(f'"isr" holds a placeholder id ({min(isr)}): placeholders are never in sync')
    min_isr = obj.get("min_isr", 1)
    if type(min_isr) is not int or min_isr < 1:
        raise InputError(f'"min_isr" must be an integer >= 1, got {json.dumps(min_isr)}')
    live = obj.get("live_brokers")
    return PartitionState(
        topic, partition, None if leader is None or leader == NO_LEADER else leader, replicas, isr,
        _ids(obj, "adding_replicas", required=False), _ids(obj, "removing_replicas", required=False),
        min_isr, None if live is None else frozenset(_ids(obj, "live_brokers", required=False)),
    )


def read_jsonl(lines: Iterable[str], first_line_no: int = 1) -> Iterator[Parsed | Rejected]:
    loads = json.loads
    for line_no, line in enumerate(lines, first_line_no):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except ValueError as e:
            yield Rejected(line_no, f"not valid JSON: {e}")
            continue
        try:
            yield _new_state(Parsed, (line_no, state_from_object(obj), line))
        except InputError as e:
            yield Rejected(line_no, str(e))


# --- kafka-topics.sh --describe -----------------------------------------------------------------

_CONFIG_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]*=")


def _fields(line: str) -> dict[str, str]:
    """'\\tTopic: a\\tPartition: 0\\tLeader: 1' -> {'Topic': 'a', ...}. Old releases print no
    space after the colon (`Topic:a`); both read the same."""
    out = {}
    for part in line.strip().split("\t"):
        key, sep, value = part.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _id_list(text: str, column: str) -> tuple[int, ...]:
    text = text.strip()
    if not text or text == "N/A":
        return ()
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise InputError(f"{column}: {text!r} is not a comma-separated list of broker ids") from None


def _min_isr_from_configs(configs: str) -> int | None:
    # Values may themselves hold commas (leader.replication.throttled.replicas=0:1,1:2), so a
    # piece without `key=` continues the previous value.
    for piece in configs.split(","):
        if _CONFIG_KEY.match(piece):
            key, _, value = piece.partition("=")
            if key == "min.insync.replicas":
                try:
                    return int(value)
                except ValueError:
                    raise InputError(f"Configs: min.insync.replicas={value!r} is not an integer") from None
    return None


# The common partition line of every release, as its head (topic, partition) and its tail (leader,
# replicas, ISR, ...); anything else (Offline:, odd spacing, a malformed field) goes through the
# general field splitter, which also explains errors. A fleet repeats few tails (brokers x
# replication factor), so each distinct tail is parsed once per batch of lines.
_PARTITION_HEAD = re.compile(r"\s*Topic: ?([\w.-]+)\tPartition: ?(\d+)")
_PARTITION_TAIL = re.compile(
    r"\tLeader: ?(none|-?\d+)\tReplicas: ?(-?\d+(?:,-?\d+)*)"
    r"\tIsr: ?((?:\d+(?:,\d+)*)?)(?:\tAdding Replicas: ?((?:-?\d+(?:,-?\d+)*)?)"
    r"\tRemoving Replicas: ?((?:-?\d+(?:,-?\d+)*)?))?(?:\tElr: [^\t]*\tLastKnownElr: [^\t]*)?"
    r"(?:\tMarkedForDeletion: true)?\s*$")
_TAILS_KEPT = 100_000  # distinct tails remembered per call before starting over


def _tail(text: str) -> tuple | None:
    """(leader, replicas, isr, adding, removing) of a common partition line's tail, else None."""
    m = _PARTITION_TAIL.match(text)
    if m is None:
        return None
    leader, replicas, isr, adding, removing = m.groups()
    return (None if leader == "none" or leader == "-1" else int(leader),
            _ints(replicas), _ints(isr), _ints(adding), _ints(removing))


def _ints(text: str | None) -> tuple[int, ...]:
    return tuple(map(int, text.split(","))) if text else ()


def is_describe_header(line: str) -> bool:
    """A topic header line (`Topic: X ... PartitionCount: N ... Configs: ...`), not a partition line."""
    return "Topic:" in line and "Leader:" not in line


def header_context(header: str | None, default_min_isr: int = 1) -> dict[str, int]:
    """The min ISR a topic header sets, for reading a describe text from its middle (the header
    line itself is reported, if malformed, where it stands)."""
    if not header:
        return {}
    f = _fields(header)
    try:
        found = _min_isr_from_configs(f.get("Configs", ""))
    except InputError:
        return {}
    return {f.get("Topic", ""): default_min_isr if found is None else found}


def read_describe(lines: Iterable[str], default_min_isr: int = 1, first_line_no: int = 1,
                  min_isr_of: dict[str, int] | None = None) -> Iterator[Parsed | Rejected]:
    """Topic header lines set the min ISR of the partition lines that follow (a filtered describe
    prints no headers: `default_min_isr` applies, as the broker default would). `min_isr_of`
    carries headers read before `lines` began."""
    min_isr_of = dict(min_isr_of or {})
    tails: dict[str, tuple | None] = {}
    for line_no, line in enumerate(lines, first_line_no):
        m = _PARTITION_HEAD.match(line)
        if m:
            text = line[m.end():]
            tail = tails.get(text, False)
            if tail is False:
                if len(tails) >= _TAILS_KEPT:
                    tails.clear()
                tail = tails[text] = _tail(text)
            if tail is not None:
                topic = m.group(1)
                leader, replicas, isr, adding, removing = tail
                yield _new_state(Parsed, (line_no, _new_state(PartitionState, (
                    topic, int(m.group(2)), leader, replicas, isr, adding, removing,
                    min_isr_of.get(topic, default_min_isr), None)), ""))
                continue
        if not line.strip():
            continue
        f = _fields(line)
        try:
            if "Partition" in f and "Leader" in f:
                yield Parsed(line_no, _describe_partition(f, min_isr_of, default_min_isr), "")
            elif "Topic" in f and ("PartitionCount" in f or "Configs" in f):
                if not f["Topic"]:
                    raise InputError("topic header without a topic name")
                found = _min_isr_from_configs(f.get("Configs", ""))
                min_isr_of[f["Topic"]] = default_min_isr if found is None else found
            else:
                raise InputError("neither a topic header (Topic: ... PartitionCount: ...) nor a "
                                 "partition line (Topic: ... Partition: ... Leader: ...)")
        except InputError as e:
            yield Rejected(line_no, str(e))


def _describe_partition(f: dict[str, str], min_isr_of: dict[str, int], default_min_isr: int) -> PartitionState:
    topic = f.get("Topic", "")
    if not topic:
        raise InputError("partition line without Topic:")
    try:
        partition = int(f["Partition"])
    except ValueError:
        raise InputError(f"Partition: {f['Partition']!r} is not a number") from None
    leader_text = f["Leader"]
    if leader_text in ("none", "-1", ""):
        leader = None
    else:
        try:
            leader = int(leader_text)
        except ValueError:
            raise InputError(f"Leader: {leader_text!r} is not a broker id or 'none'") from None
    if "Replicas" not in f or "Isr" not in f:
        raise InputError("partition line without Replicas: or Isr:")
    replicas = _id_list(f["Replicas"], "Replicas")
    if not replicas and leader is not None:
        raise InputError("Replicas: is empty but Leader: names a broker (a partition whose assignment is not "
                         "known yet has no leader)")
    isr = _id_list(f["Isr"], "Isr")
    if any(r < 0 for r in isr):
        raise InputError(f"Isr: holds a placeholder id ({min(isr)}): placeholders are never in sync")
    return PartitionState(
        topic, partition, leader, replicas, isr,
        _id_list(f.get("Adding Replicas", ""), "Adding Replicas"),
        _id_list(f.get("Removing Replicas", ""), "Removing Replicas"),
        min_isr_of.get(topic, default_min_isr),
    )


def looks_like_jsonl(first_line: str) -> bool:
    return first_line.lstrip().startswith("{")


def read_states(lines: Iterable[str], default_min_isr: int = 1) -> Iterator[Parsed | Rejected]:
    """Auto-detect the form from the first non-blank line: `{` starts JSON Lines."""
    it = iter(lines)
    skipped = 0
    for first in it:
        if first.strip():
            break
        skipped += 1
    else:
        return
    rest = _chain(first, it)
    if looks_like_jsonl(first):
        yield from read_jsonl(rest, skipped + 1)
    else:
        yield from read_describe(rest, default_min_isr, skipped + 1)


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest
