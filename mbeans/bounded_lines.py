"""Lines of a text input, read in bounded pieces: what `health` and the backfill's describe dumps
read partition states from. A line longer than any real one is skipped to its newline without ever
being held whole, and a line that is not UTF-8 is replaced: each by an `Unread` in its place, so
the lines after it keep their numbers and the readers reject it with its number and reason.

The bound, MAX_LINE_BYTES, is the longest line a real input can hold, with a margin:
- a partition line lists at most six sets of broker ids (Replicas, Isr, Adding and Removing
  Replicas, Elr, LastKnownElr), each at most partition_states.MAX_IDS (32,767) ids of at most 10
  digits and a comma: 6 x 32,767 x 11 = 2.2 MB, besides a topic name of at most 249 characters; a
  JSON line, five such lists (live_brokers too): 2 MB;
- a topic header's `Configs:` are a topic's configuration, which Kafka stores in one metadata
  record: a KRaft controller writes records in batches of at most 8 MiB, and ZooKeeper keeps a
  node under 1 MB by default.
16 MiB is twice the largest of these.
"""
from __future__ import annotations

from typing import IO, Iterator

MAX_LINE_BYTES = 16 * 1024 * 1024
CHUNK = 1 << 20  # read at a time; at most MAX_LINE_BYTES, so a chunk's own lines are never too long
HEAD = 200  # characters of an unread line kept for reports

TOO_LONG = "too-long-line"
NOT_TEXT = "not-text"


class Unread(str):
    """The empty string, standing for a line that was not read as text: `kind` (TOO_LONG or
    NOT_TEXT), `reason` (for people) and `head` (its first characters, for reports)."""

    def __new__(cls, kind: str, reason: str, head: str) -> Unread:
        s = super().__new__(cls, "")
        s.kind, s.reason, s.head = kind, reason, head
        return s


def too_long(size: int, head: str, max_line: int = MAX_LINE_BYTES) -> Unread:
    return Unread(TOO_LONG, f"a line of {size:,} bytes, longer than the {max_line:,} a partition line or "
                            f"topic header can be: skipped unread", head)


def _text(data: bytes | str) -> str:
    return data if data.__class__ is str else data.decode("utf-8", "replace")


def _head(parts: list) -> str:
    """The first HEAD characters of a line held in pieces (without joining them all)."""
    out, n = [], 0
    for piece in parts:
        out.append(piece[:HEAD - n])
        n += len(out[-1])
        if n >= HEAD:
            break
    return _text(parts[0][:0].join(out))


def _decode_one(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return Unread(NOT_TEXT, f"not UTF-8 text ({e.reason} at byte {e.start + 1} of the line)",
                      raw[:HEAD].decode("utf-8", "replace"))


def _decoded(data: bytes | str) -> list[str]:
    """The lines of `data` (complete lines, their newlines removed but the last's)."""
    if data.__class__ is str:
        return data.split("\n")
    try:  # a whole piece in one call; line by line only to find the lines that are not text
        return data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return [_decode_one(raw) for raw in data.split(b"\n")]


class LineReader:
    """The lines of `stream` (binary, else text), newlines removed, as blocks: lists of consecutive
    lines, at most about CHUNK of text each (or one line of up to `max_line`). `torn` turns true
    just before the last block when the input's last line has no newline; that block is that line
    alone. At most `max_line` + CHUNK of the input is held at a time."""

    def __init__(self, stream: IO, max_line: int = MAX_LINE_BYTES, chunk: int = CHUNK):
        # read1: what is there (a pipe gives its output as it comes), one call at most
        self._read = getattr(stream, "read1", None) or stream.read
        self.max_line, self.chunk = max_line, min(chunk, max_line)
        self.torn = False

    def blocks(self) -> Iterator[list[str]]:
        parts: list = []  # the pieces of a line begun in an earlier chunk
        held = 0  # their length
        skipped = None  # the length so far of a line too long to hold (None: not skipping)
        head = ""
        while True:
            data = self._read(self.chunk)
            if not data:
                break
            nl = "\n" if data.__class__ is str else b"\n"
            out: list[str] = []
            start = 0
            if parts or skipped is not None:
                end = data.find(nl)
                if end < 0:  # the line goes on past this chunk
                    if skipped is not None:
                        skipped += len(data)
                    else:
                        parts.append(data)
                        held += len(data)
                        if held > self.max_line:
                            skipped, head, parts = held, _head(parts), []
                    continue
                if skipped is not None:
                    out.append(too_long(skipped + end, head, self.max_line))
                else:
                    line = data[:0].join(parts) + data[:end]
                    out.append(too_long(len(line), _text(line[:HEAD]), self.max_line) if len(line) > self.max_line
                               else _decoded(line)[0])
                parts, held, skipped = [], 0, None
                start = end + 1
            last = data.rfind(nl)
            if last >= start:
                out.extend(_decoded(data[start:last]))
                start = last + 1
            if start < len(data):
                parts, held = [data[start:]], len(data) - start
            if out:
                yield out
        if skipped is not None or parts:
            self.torn = True
            if skipped is not None:
                yield [too_long(skipped, head, self.max_line)]
            else:
                line = parts[0][:0].join(parts)
                yield [too_long(len(line), _text(line[:HEAD]), self.max_line) if len(line) > self.max_line
                       else _decoded(line)[0]]
