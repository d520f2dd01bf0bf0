"""Rendered families kept between polls: what did not change since the last poll is neither
rendered nor compressed again.

A snapshot's body in one format is a sequence of gzip members (members concatenate into one valid
gzip stream): one per chunk of consecutive families (a family of CHUNK_SERIES series or more makes
a chunk of its own). A chunk whose families hold what the last poll's chunk starting with the same
family held keeps that chunk's member as it is. On a healthy broker with the health rules nothing
changes from one poll to the next, and the body is taken whole from the last poll.

What "held the same" means, part by part of a family (its name, type and HELP alike):
- a Sample list: the same Samples (the rule engine hands back the last poll's Sample object when
  a value did not change, so this is mostly a test of identity);
- a table's series (TableSeries, MergedTables): the same rule outcome and member columns (objects
  replaced when the names change), and the same member positions, values and presence, compared
  by a 128-bit BLAKE2 digest of their bytes (not the bytes: a 40,000-member table's values are
  320 KB; a digest collision, 2^-64 after four billion polls, is not a concern here).
"""
from __future__ import annotations

import hashlib
import zlib
from typing import Any, Callable, Iterable, Iterator, Sequence

from kafka_jmx_sidecar.exporter.base.families import Family, MergedTables, TableSeries

CHUNK_SERIES = 4096  # series per chunk at least, but for the last; a family this big is a chunk alone
_GZIP = 31  # zlib window bits for a gzip wrapper


def gzip_member(chunks: Iterable[str]) -> tuple[bytes, int]:
    """One gzip member of the UTF-8 text `chunks`, and the uncompressed size. Level 1: a 50 MB
    body compresses ~10x in well under a second; higher levels gain little."""
    z = zlib.compressobj(1, zlib.DEFLATED, _GZIP)
    out = []
    size = 0
    for chunk in chunks:
        data = chunk.encode("utf-8")
        size += len(data)
        out.append(z.compress(data))
    out.append(z.flush())
    return b"".join(out), size


def _digest(*arrays: Any) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        h.update(a)
    return h.digest()


def _table_key(part: TableSeries) -> tuple:
    t = part.table
    return (part.template, t.topics, t.topic, t.partition, t.rank, t.integral,
            _digest(part.positions, t.values, t.present))


def _part_key(part: Any) -> Any:
    if isinstance(part, TableSeries):
        return _table_key(part)
    if isinstance(part, MergedTables):
        return (tuple(_table_key(p) for p in part.parts), _digest(part.order))
    return part  # a Sample list, compared element by element (identity first)


def family_key(f: Family) -> tuple:
    return (f.name, f.type, f.help, tuple(_part_key(p) for p in f.parts))


def chunks(families: Sequence[Family]) -> list[list[Family]]:
    """Consecutive families, CHUNK_SERIES series or more to a chunk."""
    out: list[list[Family]] = []
    current: list[Family] = []
    series = 0
    for f in families:
        n = len(f)
        if n >= CHUNK_SERIES and current:  # a big family starts a chunk of its own
            out.append(current)
            current, series = [], 0
        current.append(f)
        series += n
        if series >= CHUNK_SERIES:
            out.append(current)
            current, series = [], 0
    if current:
        out.append(current)
    return out


class Kept:
    """One format's chunks of the last poll: first family's name -> (the chunk's family keys, its
    gzip member, its uncompressed size)."""

    __slots__ = ("chunks", "reused", "rendered")

    def __init__(self) -> None:
        self.chunks: dict[str, tuple[list, bytes, int]] = {}
        self.reused = 0  # chunks taken from the previous poll's (this poll)
        self.rendered = 0


def members(families: Sequence[Family], render: Callable[[Sequence[Family]], Iterator[str]],
            previous: Kept | None, memo: dict[int, tuple]) -> tuple[list[bytes], int, Kept]:
    """The body of `families` as gzip members, one per chunk, those held alike in `previous`
    taken from it; their uncompressed size; and what the next poll can take from. `memo`: the
    families' keys by id(), shared by the formats of one snapshot."""
    kept = Kept()
    out: list[bytes] = []
    size = 0
    for chunk in chunks(families):
        keys = []
        for f in chunk:
            key = memo.get(id(f))
            if key is None:
                key = memo[id(f)] = family_key(f)
            keys.append(key)
        was = previous.chunks.get(chunk[0].name) if previous is not None else None
        if was is not None and was[0] == keys:
            member, n = was[1], was[2]
            kept.reused += 1
        else:
            member, n = gzip_member(render(chunk))
            kept.rendered += 1
        kept.chunks[chunk[0].name] = (keys, member, n)
        out.append(member)
        size += n
    return out, size, kept
