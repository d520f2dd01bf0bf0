"""The C heap of the sidecar process (glibc's malloc), which Python's large objects, zlib and the
JVM inside the process all allocate from. Elsewhere than glibc both calls do nothing.

- `limit_arenas()`: glibc gives a thread that finds the heap busy an arena of its own, up to 8 per
  CPU, and an arena keeps what was freed in it. `serve` runs a thread per scrape and the JVM its
  own threads, so freed memory spread over a dozen arenas and RSS crept up poll after poll (at
  40,000 partitions with Strimzi's rules, from 220 MB after the first poll to 316 MB three polls
  later; with two arenas it stayed at ~255 MB). Called before any other thread starts.
- `limit_arenas()` also fixes the size from which an allocation gets pages of its own (mmap) at
  glibc's starting value. glibc raises it to the size of each such block freed, up to 32 MB, so
  after a few polls (and the gzip response rebuilt every second) the megabyte-sized texts and
  bytes of a render came from the arenas, whose freed pages RSS counts until the trim at the
  poll's end; with the size fixed they go back to the system when they are freed.
- `trim()`: hands the heap's free pages back to the system (after a poll's transient objects).
"""
from __future__ import annotations

from typing import Any

_M_ARENA_MAX = -8  # mallopt's parameter numbers, from glibc's malloc.h
_M_MMAP_THRESHOLD = -3
ARENAS = 2
MMAP_THRESHOLD = 128 * 1024  # glibc's own starting value (bytes)


def _libc() -> Any:
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 - glibc only: fail here, not at the call
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def limit_arenas(arenas: int = ARENAS, mmap_threshold: int | None = MMAP_THRESHOLD) -> bool:
    """At most `arenas` malloc arenas for the process from now on, and blocks of `mmap_threshold`
    bytes or more mapped on their own (None: glibc's moving threshold); True when glibc took it."""
    if _LIBC is None:
        return False
    ok = _LIBC.mallopt(_M_ARENA_MAX, arenas) == 1
    if mmap_threshold is not None:
        ok &= _LIBC.mallopt(_M_MMAP_THRESHOLD, mmap_threshold) == 1
    return ok


def trim() -> None:
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
