"""Partition states from the two text forms operators have: JSON Lines (the `health` command's
input, docs/health.md) and saved `kafka-topics.sh --describe` output of any released Kafka version.

Readers yield `Parsed(line_no, state, source)` for good lines and `Rejected(line_no, reason, kind)`
for bad ones and never stop early: one malformed line must not hide the rest. Besides malformed
lines they reject states Kafka cannot be in: a list of more than MAX_IDS broker ids, a broker
listed twice among a partition's replicas or in its ISR. An ISR member that the replica list does
not name is accepted: while a partition moves, an assignment and an ISR read at different moments
(a describe from ZooKeeper reads them one after the other) can show one.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from itertools import chain
from typing import Iterable, Iterator, NamedTuple

from kafka_jmx_sidecar.mbeans.bounded_lines import Unread
from kafka_jmx_sidecar.mbeans.health import NO_LEADER, PartitionState

# No partition lists more broker ids than this: the largest replication factor Kafka's CreateTopics
# API can ask for (an int16), which is also far more brokers than any cluster registers (a
# partition's replicas are distinct brokers). It bounds live_brokers too.
MAX_IDS = 32_767

# What kind of problem a rejected line has (the backfill's reject reasons).
UNPARSABLE = "unparsable-line"  # neither a topic header nor a partition line, or a malformed field
IMPOSSIBLE = "impossible-state"  # read, but a state Kafka cannot be in (too many ids, a broker twice)


class Parsed(NamedTuple):
    line_no: int
    state: PartitionState
    text: str  # the input line as read (JSON Lines) or "" (describe text)


class Rejected(NamedTuple):
    line_no: int
    reason: str
    kind: str = UNPARSABLE  # UNPARSABLE, IMPOSSIBLE, or an Unread line's kind (bounded_lines)


class InputError(ValueError):
    kind = UNPARSABLE


class ImpossibleState(InputError):
    kind = IMPOSSIBLE


def _unread(line_no: int, line: Unread) -> Rejected:
    return Rejected(line_no, line.reason, line.kind)


def _too_many(field: str, n: int) -> ImpossibleState:
    return ImpossibleState(f"{field} lists {n:,} broker ids; no partition has more than {MAX_IDS:,} "
                           "(the largest replication factor Kafka accepts)")


def check_ids(field: str, ids: tuple[int, ...], distinct: bool) -> None:
    """ImpossibleState for more than MAX_IDS ids, or (`distinct`) a broker id listed twice.
    Negative ids are placeholders for replicas not yet created, not brokers: they may repeat."""
    if len(ids) > MAX_IDS:
        raise _too_many(field, len(ids))
    if distinct and len(set(ids)) != len(ids):
        twice = sorted(i for i, n in Counter(i for i in ids if i >= 0).items() if n > 1)
        if twice:
            raise ImpossibleState(f"{field} lists broker {', '.join(map(str, twice[:5]))} more than once: "
                                  "a broker holds one replica of a partition")


# --- JSON Lines ---------------------------------------------------------------------------------

_OPTIONAL_LISTS = ("adding_replicas", "removing_replicas")
# KIP-966's lists, optional: absent means not known (the ELR figures are then absent too)
ELR_KEYS = ("eligible_leader_replicas", "last_known_elr")
_KNOWN = {"topic", "partition", "leader", "replicas", "isr", "min_isr", "live_brokers", *_OPTIONAL_LISTS, *ELR_KEYS}


def _ids(obj: dict, key: str, *, required: bool) -> tuple[int, ...]:
    value = obj.get(key)
    if value is None:
        if required:
            raise InputError(f'"{key}" is missing (a list of broker ids)')
        return ()
    if type(value) is not list or any(type(v) is not int for v in value):
        raise InputError(f'"{key}" must be a list of integer broker ids, got {_shown(json.dumps(value))}')
    return tuple(value)


def _shown(text: str, most: int = 100) -> str:
    """`text`, cut for a reject message (a line can be megabytes long)."""
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"


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
                and "live_brokers" not in obj and "eligible_leader_replicas" not in obj and "last_known_elr" not in obj
                and len(replicas) + len(isr) + len(adding) + len(removing) <= MAX_IDS):
            replicas, isr = tuple(replicas), tuple(isr)
            if (replicas in _DISTINCT or _distinct(replicas)) and (isr in _DISTINCT or _distinct(isr)):
                return _new_state(PartitionState, (
                    topic, partition, None if leader is None or leader == NO_LEADER else leader,
                    replicas, isr, tuple(adding), tuple(removing), min_isr, None, None, None))
    return _explain_invalid(obj)


# Id lists known to hold no id twice: a fleet repeats few (brokers x replication factor), so each
# is checked once (short ones kept; forgotten all at once when there are many)
_DISTINCT: set[tuple[int, ...]] = set()


def _distinct(ids: tuple[int, ...]) -> bool:
    if len({*ids}) != len(ids):
        return False
    if len(ids) <= 16:
        if len(_DISTINCT) >= 100_000:
            _DISTINCT.clear()
        _DISTINCT.add(ids)
    return True


def _explain_invalid(obj: object) -> PartitionState:
    if type(obj) is not dict:
        raise InputError("expected a JSON object, one partition per line")
    topic = obj.get("topic")
    if type(topic) is not str or not topic:
        raise InputError('"topic" must be a non-empty string')
    partition = obj.get("partition")
    if type(partition) is not int or partition < 0:
        raise InputError(f'"partition" must be a non-negative integer, got {_shown(json.dumps(partition))}')
    if "leader" not in obj:
        raise InputError('"leader" is missing (a broker id, or -1 / null for none)')
    leader = obj["leader"]
    if leader is not None and (type(leader) is not int or leader < NO_LEADER):
        raise InputError(f'"leader" must be a broker id, -1 or null, got {_shown(json.dumps(leader))}')
    replicas = _ids(obj, "replicas", required=True)
    if not replicas and leader is not None and leader != NO_LEADER:
        # no replicas is a partition whose assignment is not known yet (Kafka lists it without a
        # leader): judged as Kafka judges it, unavailable; a leader of no replica is not a state
        raise InputError('"replicas" is empty but "leader" names a broker: a led partition has at least one replica')
    check_ids('"replicas"', replicas, distinct=True)
    isr = _ids(obj, "isr", required=True)
    if any(r < 0 for r in isr):
        raise InputError(f'"isr" holds a placeholder id ({min(isr)}): placeholders are never in sync')
    check_ids('"isr"', isr, distinct=True)
    for key in (*_OPTIONAL_LISTS, "live_brokers"):
        check_ids(f'"{key}"', _ids(obj, key, required=False), distinct=False)
    min_isr = obj.get("min_isr", 1)
    if type(min_isr) is not int or min_isr < 1:
        raise InputError(f'"min_isr" must be an integer >= 1, got {_shown(json.dumps(min_isr))}')
    live = obj.get("live_brokers")
    elr, last_known = (None if obj.get(k) is None else _ids(obj, k, required=False) for k in ELR_KEYS)
    for key, ids in zip(ELR_KEYS, (elr, last_known)):
        if ids and min(ids) < 0:
            raise InputError(f'"{key}" holds a placeholder id ({min(ids)}): placeholders are never leader candidates')
        check_ids(f'"{key}"', ids or (), distinct=True)
    return PartitionState(
        topic, partition, None if leader is None or leader == NO_LEADER else leader, replicas, isr,
        _ids(obj, "adding_replicas", required=False), _ids(obj, "removing_replicas", required=False),
        min_isr, None if live is None else frozenset(_ids(obj, "live_brokers", required=False)),
        elr, last_known,
    )


def read_jsonl(lines: Iterable[str], first_line_no: int = 1) -> Iterator[Parsed | Rejected]:
    loads = json.loads
    for line_no, line in enumerate(lines, first_line_no):
        if not line.strip():
            if line.__class__ is Unread:
                yield _unread(line_no, line)
            continue
        try:
            obj = loads(line)
        except ValueError as e:
            yield Rejected(line_no, f"not valid JSON: {e}")
            continue
        try:
            yield _new_state(Parsed, (line_no, state_from_object(obj), line))
        except InputError as e:
            yield Rejected(line_no, str(e), e.kind)


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
    if len(text) > _SHORT_TAIL and text.count(",") >= MAX_IDS:  # counted before a million ints are made
        raise _too_many(column + ":", text.count(",") + 1)
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise InputError(f"{column}: {_shown(repr(text))} is not a comma-separated list of broker ids") from None


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
                    raise InputError(f"Configs: min.insync.replicas={_shown(repr(value))} is not an integer") from None
    return None


# The common partition line of every release, as its head (topic, partition) and its tail (leader,
# replicas, ISR, ...); anything else (Offline:, odd spacing, a malformed field) goes through the
# general field splitter, which also explains errors. A fleet repeats few tails (brokers x
# replication factor), so each distinct tail is parsed once per batch of lines.
# (Ids of at most 10 digits, as an int32 has: a longer one goes to the general path, which says so.)
_PARTITION_HEAD = re.compile(r"\s*Topic: ?([\w.-]+)\tPartition: ?(\d{1,10})")
_PARTITION_TAIL = re.compile(
    r"\tLeader: ?(none|-?\d{1,10})\tReplicas: ?(-?\d{1,10}(?:,-?\d{1,10})*)"
    r"\tIsr: ?((?:\d{1,10}(?:,\d{1,10})*)?)(?:\tAdding Replicas: ?((?:-?\d{1,10}(?:,-?\d{1,10})*)?)"
    r"\tRemoving Replicas: ?((?:-?\d{1,10}(?:,-?\d{1,10})*)?))?"
    r"(?:\tElr: ?(N/A|(?:\d{1,10}(?:,\d{1,10})*)?)\tLastKnownElr: ?(N/A|(?:\d{1,10}(?:,\d{1,10})*)?))?"
    r"(?:\tMarkedForDeletion: true)?\s*$")
_TAILS_KEPT = 100_000  # distinct tails remembered per call before starting over
_TAIL_CACHED = 1024  # longer tails are parsed each time rather than remembered
# A list of more than MAX_IDS ids has more than this many characters (one digit and a comma each),
# so a tail at most this long holds no list that is too long
_SHORT_TAIL = 2 * MAX_IDS


def _tail(text: str) -> tuple | None:
    """(leader, replicas, isr, adding, removing, elr, last known elr) of a common partition
    line's tail, else None
    (also for a state Kafka cannot be in: the general path says what is wrong)."""
    if len(text) > _SHORT_TAIL:
        return None
    m = _PARTITION_TAIL.match(text)
    if m is None:
        return None
    leader, replicas, isr, adding, removing, elr, last_known = m.groups()
    replicas, isr = _ints(replicas), _ints(isr)
    elr, last_known = _elr_ints(elr), _elr_ints(last_known)
    if len({*replicas}) != len(replicas) or len({*isr}) != len(isr) or (elr and len({*elr}) != len(elr)):
        return None
    return (None if leader == "none" or leader == "-1" else int(leader), replicas, isr, _ints(adding), _ints(removing),
            elr, last_known)


def _ints(text: str | None) -> tuple[int, ...]:
    return tuple(map(int, text.split(","))) if text else ()


def _elr_ints(text: str | None) -> tuple[int, ...] | None:
    """An `Elr:`/`LastKnownElr:` value: None when the tool did not know it (the column absent, or
    `N/A`: TopicCommand's word when the broker answered without DescribeTopicPartitions)."""
    return None if text is None or text == "N/A" else _ints(text)


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
                  min_isr_of: dict[str, int] | None = None,
                  tails: dict[str, tuple | None] | None = None) -> Iterator[Parsed | Rejected]:
    """Topic header lines set the min ISR of the partition lines that follow (a filtered describe
    prints no headers: `default_min_isr` applies, as the broker default would). `min_isr_of`
    carries headers read before `lines` began; `tails`, the parsed line tails of an earlier call
    on the same input (kept in it)."""
    min_isr_of = dict(min_isr_of or {})
    tails = {} if tails is None else tails
    for line_no, line in enumerate(lines, first_line_no):
        m = _PARTITION_HEAD.match(line)
        if m:
            text = line[m.end():]
            tail = tails.get(text, False)
            if tail is False:
                if len(tails) >= _TAILS_KEPT:
                    tails.clear()
                tail = _tail(text)
                if len(text) <= _TAIL_CACHED:
                    tails[text] = tail
            if tail is not None:
                topic = m.group(1)
                leader, replicas, isr, adding, removing, elr, last_known = tail
                yield _new_state(Parsed, (line_no, _new_state(PartitionState, (
                    topic, int(m.group(2)), leader, replicas, isr, adding, removing,
                    min_isr_of.get(topic, default_min_isr), None, elr, last_known)), ""))
                continue
        if not line.strip():
            if line.__class__ is Unread:
                yield _unread(line_no, line)
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
            yield Rejected(line_no, str(e), e.kind)


def _describe_partition(f: dict[str, str], min_isr_of: dict[str, int], default_min_isr: int) -> PartitionState:
    topic = f.get("Topic", "")
    if not topic:
        raise InputError("partition line without Topic:")
    try:
        partition = int(f["Partition"])
    except ValueError:
        raise InputError(f"Partition: {_shown(repr(f['Partition']))} is not a number") from None
    leader_text = f["Leader"]
    if leader_text in ("none", "-1", ""):
        leader = None
    else:
        try:
            leader = int(leader_text)
        except ValueError:
            raise InputError(f"Leader: {_shown(repr(leader_text))} is not a broker id or 'none'") from None
    if "Replicas" not in f or "Isr" not in f:
        raise InputError("partition line without Replicas: or Isr:")
    replicas = _id_list(f["Replicas"], "Replicas")
    if not replicas and leader is not None:
        raise InputError("Replicas: is empty but Leader: names a broker (a partition whose assignment is not "
                         "known yet has no leader)")
    check_ids("Replicas:", replicas, distinct=True)
    isr = _id_list(f["Isr"], "Isr")
    if any(r < 0 for r in isr):
        raise InputError(f"Isr: holds a placeholder id ({min(isr)}): placeholders are never in sync")
    check_ids("Isr:", isr, distinct=True)
    elr, last_known = (None if f.get(k, "N/A") == "N/A" else _id_list(f[k], k) for k in ("Elr", "LastKnownElr"))
    check_ids("Elr:", elr or (), distinct=True)
    return PartitionState(
        topic, partition, leader, replicas, isr,
        _id_list(f.get("Adding Replicas", ""), "Adding Replicas"),
        _id_list(f.get("Removing Replicas", ""), "Removing Replicas"),
        min_isr_of.get(topic, default_min_isr), None, elr, last_known,
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
