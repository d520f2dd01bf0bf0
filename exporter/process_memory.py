"""The C heap of the sidecar process (glibc's malloc), which Python's large objects, zlib and the
JVM inside the process all allocate from. Elsewhere than glibc both calls do nothing.

- `limit_arenas()`: glibc gives a thread that finds the heap busy an arena of its own, up to 8 per
  CPU, and an arena keeps what was freed in it. `serve` runs a thread per scrape and the JVM its
  own threads, so freed memory spread over a dozen arenas and RSS crept up poll after poll (at
  40,000 partitions with Strimzi's rules, from 220 MB after the first poll to 316 MB three polls
  later; with two arenas it stayed at ~255 MB). Called before any other thread starts.
- `trim()`: hands the heap's free pages back to the system (after a poll's transient objects).
"""
from __future__ import annotations

from typing import Any

_M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h
ARENAS = 2


def _libc() -> Any:
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 - glibc only: fail here, not at the call
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most `arenas` malloc arenas for the process from now on; True when glibc took it."""
    return _LIBC is not None and _LIBC.mallopt(_M_ARENA_MAX, arenas) == 1


def trim() -> None:
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
