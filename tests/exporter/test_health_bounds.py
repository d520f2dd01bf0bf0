"""What `health` refuses to hold or believe: a line longer than any real one (read in bounded pieces,
never held whole), more broker ids than a partition can have, a broker listed twice; each such line
rejected with its number and reason while the lines around it are judged."""
from __future__ import annotations

import io
import subprocess
import sys

from hypothesis import given, settings, strategies as hs

from kafka_jmx_sidecar.mbeans.bounded_lines import MAX_LINE_BYTES, NOT_TEXT, TOO_LONG, LineReader, Unread
from kafka_jmx_sidecar.mbeans.partition_states import MAX_IDS
from tests.exporter.test_health_command import REPO, by_partition, cli, flags, write

HEADER = b"Topic: big\tTopicId: x\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2\n"


# Runs its arguments as a child and prints the child's peak RSS (KiB). A process of its own: a child
# started straight from pytest would carry pytest's own peak (the memory it was forked from, which
# Linux counts into the exec'd program's high-water mark).
_PEAK_OF_CHILD = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
                  "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")


def _peak_rss(path: str, tmp_path) -> tuple[int, int, str, str]:
    """`health PATH --output jsonl` as a process of its own: exit code, peak RSS in bytes, stdout,
    stderr."""
    p = subprocess.run([sys.executable, "-c", _PEAK_OF_CHILD, sys.executable, "-m",
                        "kafka_jmx_sidecar.exporter.commands.cli", "health", path, "--output", "jsonl"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    err, _, peak = p.stderr.rstrip("\n").rpartition("\n")
    return p.returncode, int(peak) * 1024, p.stdout, err


def test_a_50_mb_line_is_skipped_in_bounded_memory(tmp_path):
    """A 52 MB partition line (a replica list of 26 million ids) between good lines: rejected with
    its number without ever being held whole, so the peak RSS grows by less than the line's size
    over the same command on the good lines alone; the good lines around it are judged."""
    good = tmp_path / "good.txt"
    good.write_bytes(HEADER + b"\tTopic: big\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\n")
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.write(good.read_bytes())
        f.write(b"\tTopic: big\tPartition: 1\tLeader: 1\tReplicas: " + b"1," * 26_214_400 + b"1\tIsr: 1\n")  # line 3
        f.write(b"\tTopic: big\tPartition: 2\tLeader: 1\tReplicas: 1,2,3\tIsr: 1\n")
    line_bytes = 26_214_400 * 2 + len(b"\tTopic: big\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1")
    code, base, _, _ = _peak_rss(str(good), tmp_path)
    assert code == 0
    code, peak, out, err = _peak_rss(str(big), tmp_path)
    assert code == 2
    assert err.splitlines()[0] == (f"{big}:3: a line of {line_bytes:,} bytes, longer than the {MAX_LINE_BYTES:,} a "
                                   "partition line or topic header can be: skipped unread")
    got = by_partition(out)
    assert set(got) == {("big", 0), ("big", 2)} and got[("big", 2)]["min_isr"] == 2
    assert {k: got[("big", 2)][k] for k in ("under_replicated", "under_min_isr")} == {
        "under_replicated": True, "under_min_isr": True}
    # at most one bound's worth of the line is ever held (then it is skipped), plus a chunk
    grown = peak - base
    print(f"peak RSS: {base / 2**20:.1f} MiB on the good lines, {peak / 2**20:.1f} MiB with the 50 MB line")
    assert grown < MAX_LINE_BYTES + 8 * 2**20 < line_bytes, (base, peak)


def _expected(data: bytes, max_line: int) -> tuple[list, bool]:
    """What the reader must give for `data`, from bytes.split: (kind or text per line, torn)."""
    pieces = data.split(b"\n")
    torn = pieces[-1] != b""
    if not torn:
        pieces.pop()
    out = []
    for raw in pieces:
        if len(raw) > max_line:
            out.append((TOO_LONG, len(raw)))
            continue
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            out.append((NOT_TEXT, None))
    return out, torn


def _read(stream, max_line: int, chunk: int) -> tuple[list, bool]:
    reader = LineReader(stream, max_line, chunk)
    got = []
    for block in reader.blocks():
        assert block
        for line in block:
            if line.__class__ is Unread:
                size = int(line.reason.split()[3].replace(",", "")) if line.kind == TOO_LONG else None
                got.append((line.kind, size))
            else:
                got.append(line)
    return got, reader.torn


@settings(max_examples=300, deadline=None)
@given(hs.lists(hs.sampled_from([b"a", b"bc", b"\xc3\xa9", b"\xff", b"\n", b"\n\n", b"0123456789"]), max_size=40),
       hs.integers(1, 12), hs.integers(1, 16))
def test_the_reader_gives_each_line_or_why_not_whatever_the_chunks(pieces, max_line, chunk):
    data = b"".join(pieces)
    assert _read(io.BytesIO(data), max_line, chunk) == _expected(data, max_line)
    if b"\xff" not in data:  # a text stream (stdin in tests): lengths in characters
        text = data.decode()
        lines, torn = _read(io.StringIO(text), max_line, chunk)
        want = text.split("\n")
        if want[-1] == "":
            want.pop()
        assert [line if isinstance(line, str) else line[0] for line in lines] == \
            [w if len(w) <= max_line else TOO_LONG for w in want]
        assert torn == (text != "" and not text.endswith("\n"))


def _ids(n: int, start: int = 1) -> str:
    return ",".join(map(str, range(start, start + n)))


def test_states_kafka_cannot_be_in_are_rejected_and_the_rest_judged(tmp_path):
    too_many = _ids(MAX_IDS + 1)
    describe = [
        HEADER.decode().rstrip("\n"),
        ("\tTopic: big\tPartition: 0\tLeader: 1\tReplicas: 1,2,1\tIsr: 1,2", "Replicas: lists broker 1 more than once"),
        ("\tTopic: big\tPartition: 1\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,1", "Isr: lists broker 1 more than once"),
        (f"\tTopic: big\tPartition: 2\tLeader: 1\tReplicas: {too_many}\tIsr: 1",
         f"Replicas: lists {MAX_IDS + 1:,} broker ids; no partition has more than {MAX_IDS:,}"),
        # the largest list a partition can have is read
        (f"\tTopic: big\tPartition: 3\tLeader: 1\tReplicas: {_ids(MAX_IDS)}\tIsr: 1", None),
        # an ISR member the replica list does not name: an assignment and an ISR read at different
        # moments of a move show it; placeholders are no brokers and may repeat
        ("\tTopic: big\tPartition: 4\tLeader: 4\tReplicas: 1,2,3\tIsr: 4,1", None),
        ("\tTopic: big\tPartition: 5\tLeader: 1\tReplicas: 1,-1,-1\tIsr: 1", None),
    ]
    text = "\n".join(x if isinstance(x, str) else x[0] for x in describe) + "\n"
    p = cli(write(tmp_path, "d.txt", text), "--output", "jsonl")
    assert p.returncode == 2
    _check(p.stderr, str(tmp_path / "d.txt"), describe)
    got = by_partition(p.stdout)
    assert sorted(got) == [("big", 3), ("big", 4), ("big", 5)]
    assert len(got[("big", 3)]["replicas"]) == MAX_IDS
    assert {k: got[("big", 4)][k] for k in ("under_replicated", "at_min_isr")} == {"under_replicated": True,
                                                                                   "at_min_isr": True}
    assert {k: got[("big", 5)][k] for k in ("under_replicated", "under_min_isr")} == {"under_replicated": True,
                                                                                      "under_min_isr": True}

    j = '{"topic": "j", "partition": %d, "leader": 1, "replicas": [%s], "isr": [%s], "min_isr": 2%s}'
    jsonl = [
        (j % (0, "1, 2, 2", "1", ""), '"replicas" lists broker 2 more than once'),
        (j % (1, "1, 2", "2, 2", ""), '"isr" lists broker 2 more than once'),
        (j % (2, too_many, "1", ""), f'"replicas" lists {MAX_IDS + 1:,} broker ids'),
        (j % (3, "1, 2", "1", ', "live_brokers": [%s]' % too_many), f'"live_brokers" lists {MAX_IDS + 1:,}'),
        (j % (4, "1, 2", "1", ', "adding_replicas": [%s]' % too_many), f'"adding_replicas" lists {MAX_IDS + 1:,}'),
        (j % (5, "1, 2, 3", "1, 2, 4", ""), None),
        (j % (6, "1, -1, -1", "1", ""), None),
        (j % (7, _ids(MAX_IDS), _ids(MAX_IDS), ""), None),
    ]
    p = cli(write(tmp_path, "j.jsonl", "\n".join(x for x, _ in jsonl) + "\n"), "--output", "jsonl")
    assert p.returncode == 2
    _check(p.stderr, str(tmp_path / "j.jsonl"), jsonl)
    got = by_partition(p.stdout)
    assert sorted(got) == [("j", 5), ("j", 6), ("j", 7)]
    assert {k: got[("j", 6)][k] for k in ("under_replicated", "at_min_isr")} == {"under_replicated": True,
                                                                                 "at_min_isr": False}


def _check(stderr: str, path: str, table) -> None:
    """Each rejected line reported once, by number, with its reason; no other line reported."""
    reported = [line for line in stderr.splitlines() if line.startswith(path + ":")]
    want = [(n, row[1]) for n, row in enumerate(table, 1) if not isinstance(row, str) and row[1]]
    assert len(reported) == len(want), reported
    for line, (n, reason) in zip(reported, want):
        assert line.startswith(f"{path}:{n}: ") and reason in line, (line, n, reason)


def test_a_line_that_is_not_utf8_is_rejected_alone(tmp_path):
    path = tmp_path / "mixed.txt"
    bad = b"\tTopic: big\tPartition: 1\tLeader: \xff\tReplicas: 1,2\tIsr: 1\n"
    path.write_bytes(HEADER + b"\tTopic: big\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\n" + bad
                     + b"\tTopic: big\tPartition: 2\tLeader: 2\tReplicas: 1,2\tIsr: 1,2\n")
    at = bad.index(b"\xff") + 1
    p = cli(str(path), "--output", "jsonl")
    assert p.returncode == 2
    assert [line for line in p.stderr.splitlines() if line.startswith(str(path))] == [
        f"{path}:3: not UTF-8 text (invalid start byte at byte {at} of the line)"]
    got = by_partition(p.stdout)
    assert sorted(got) == [("big", 0), ("big", 2)]
    assert {k: got[("big", 2)][k] for k in flags("")} == flags("A")
