"""`kafka-jmx-sidecar health` (README, "Partition health"), run for real:
`python3 -m kafka_jmx_sidecar.exporter.commands.cli health ...` in a subprocess, and `cli.main([...])`
in-process with stdout/stderr captured. Expected verdicts are written by hand (from the KIPs).
"""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as hs

from kafka_jmx_sidecar.exporter.commands.cli import main
from kafka_jmx_sidecar.mbeans.health import PartitionState
from kafka_jmx_sidecar.mbeans.partition_states import Parsed, read_states
from tests.exporter.describe_samples import (
    FILTERED_4_1, REAL_0_11_DEAD_CONTROLLER, REAL_0_11_LIVE_BROKERS, REAL_0_11_UNAVAILABLE, SAMPLES,
)

REPO = Path(__file__).resolve().parents[2]
FLAG_FIELDS = ("reassigning", "under_replicated", "under_min_isr", "at_min_isr", "unavailable")
LETTER = {"R": "reassigning", "U": "under_replicated", "B": "under_min_isr", "A": "at_min_isr",
          "X": "unavailable"}
PROFILES = ("kafka-3.7", "kafka-2.5", "legacy", "topic-command")


def flags(letters: str) -> dict[str, bool]:
    return {name: letter in letters for letter, name in LETTER.items()}


def proc(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """`python3 -m kafka_jmx_sidecar.exporter.commands.cli health ARGS` in a subprocess."""
    return subprocess.run([sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "health", *args], cwd=REPO,
                          input=stdin, capture_output=True, text=True, timeout=120)


def run_main(*args: str, stdin: str = "") -> tuple[int, str, str]:
    """`cli.main(["health", *args])` in this process, stdin/stdout/stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(["health", *args])
            except SystemExit as e:  # argparse
                code = e.code
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """The command in-process (fast); the same result object as `proc`."""
    code, out, err = run_main(*args, stdin=stdin)
    return subprocess.CompletedProcess(["health", *args], code, out, err)


def pairs(line: str) -> list[tuple[str, object]]:
    """The key/value pairs of one JSON object line in order, duplicates included."""
    return json.loads(line, object_pairs_hook=lambda kv: kv)


def records(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        kv = pairs(line)
        keys = [k for k, _ in kv]
        assert len(keys) == len(set(keys)), f"duplicate keys in {line}"
        out.append(dict(kv))
    return out


def by_partition(text: str) -> dict[tuple[str, int], dict]:
    return {(r["topic"], r["partition"]): r for r in records(text)}


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


# --- JSON Lines in, JSON Lines out ------------------------------------------------------------------

JSONL = "\n".join([
    # KIP-427 example 1, broker 0 fails: URP and at min
    '{"topic": "kip427", "partition": 1, "leader": 1, "replicas": [0, 1, 2], "isr": [1, 2], "min_isr": 2}',
    # fields in an unusual order, an extra field, leader -1: offline
    '{"isr": [2], "leader": -1, "note": "keep me", "min_isr": 1, "replicas": [0, 1, 2], "partition": 2, "topic": "kip427"}',
    # KIP-352: a caught-up adding replica hides a lost original: not URP (2.5+), URP before
    '{"topic": "kip352", "partition": 0, "leader": 1, "replicas": [1, 2, 3, 4], "isr": [1, 3, 4], '
    '"adding_replicas": [4], "removing_replicas": [], "min_isr": 2}',
    # RF 1, min ISR 2: at min under kafka-3.7 (effective min ISR), under min before
    '{"topic": "rf1", "partition": 0, "leader": 1, "replicas": [1], "isr": [1], "min_isr": 2}',
    # a leader that is not live: kafka-topics.sh and the controller call it unavailable, and no
    # live broker's gauge sees it (a ZooKeeper controller that died as its leader, real 0.11)
    '{"topic": "dead", "partition": 0, "leader": 3, "replicas": [1, 2, 3], "isr": [1, 2, 3], '
    '"min_isr": 2, "live_brokers": [1, 2]}',
    # placeholders: URP until a broker replaces -1; min_isr defaults to 1; leader null
    '{"topic": "placeholder", "partition": 0, "leader": 1, "replicas": [1, 2, -1], "isr": [1, 2]}',
    '{"topic": "nulls", "partition": 0, "leader": null, "replicas": [5], "isr": []}',
]) + "\n"
JSONL_FLAGS = {
    "kafka-3.7": {("kip427", 1): "UA", ("kip427", 2): "X", ("kip352", 0): "R", ("rf1", 0): "A",
                  ("dead", 0): "X", ("placeholder", 0): "U", ("nulls", 0): "X"},
    "kafka-2.5": {("kip427", 1): "UA", ("kip427", 2): "X", ("kip352", 0): "R", ("rf1", 0): "B",
                  ("dead", 0): "X", ("placeholder", 0): "U", ("nulls", 0): "X"},
    "legacy": {("kip427", 1): "UA", ("kip427", 2): "X", ("kip352", 0): "RU", ("rf1", 0): "B",
               ("dead", 0): "X", ("placeholder", 0): "U", ("nulls", 0): "X"},
    # kip427-2: 3-1>0 URP, no leader: under min, 1 == 1 at min, unavailable.
    # nulls-0: 1-0>0 URP, under min, 0 != 1, unavailable.
    "topic-command": {("kip427", 1): "UA", ("kip427", 2): "UBAX", ("kip352", 0): "R", ("rf1", 0): "B",
                      ("dead", 0): "X", ("placeholder", 0): "U", ("nulls", 0): "UBX"},
}


@pytest.mark.parametrize("runner", ["in-process", "subprocess"])
@pytest.mark.parametrize("profile", PROFILES)
def test_jsonl_verdicts_per_profile(profile, runner, tmp_path):
    p = (proc if runner == "subprocess" else cli)(write(tmp_path, "in.jsonl", JSONL), "--output", "jsonl", "--semantics", profile)
    assert (p.returncode, p.stderr) == (0, "")
    got = by_partition(p.stdout)
    assert set(got) == set(JSONL_FLAGS[profile])
    for key, letters in JSONL_FLAGS[profile].items():
        assert {k: got[key][k] for k in FLAG_FIELDS} == flags(letters), key


def test_jsonl_output_is_the_input_object_plus_five_booleans_in_order(tmp_path):
    p = cli(write(tmp_path, "in.jsonl", JSONL), "--output", "jsonl")
    assert p.returncode == 0
    out_lines = p.stdout.splitlines()
    in_lines = JSONL.splitlines()
    assert len(out_lines) == len(in_lines)  # printed in input order
    for line_in, line_out in zip(in_lines, out_lines):
        kv_in, kv_out = pairs(line_in), pairs(line_out)
        assert kv_out[:len(kv_in)] == kv_in  # same fields, same order, same values
        assert [k for k, _ in kv_out[len(kv_in):]] == list(FLAG_FIELDS)
        assert all(type(v) is bool for _, v in kv_out[len(kv_in):])
    unusual = pairs(out_lines[1])
    assert [k for k, _ in unusual][:7] == ["isr", "leader", "note", "min_isr", "replicas", "partition", "topic"]
    assert dict(unusual)["leader"] == -1 and dict(unusual)["note"] == "keep me"


def test_jsonl_output_fed_back_as_input_has_each_boolean_once(tmp_path):
    # `health --output jsonl` output is JSON Lines again; judging it anew must replace the
    # booleans, not add a second copy of each key.
    first = proc(write(tmp_path, "in.jsonl", JSONL), "--output", "jsonl", "--semantics", "legacy")
    again = proc("--output", "jsonl", "-", stdin=first.stdout)
    assert again.returncode == 0, again.stderr
    got = by_partition(again.stdout)  # records() fails on a duplicate key
    for key, letters in JSONL_FLAGS["kafka-3.7"].items():
        assert {k: got[key][k] for k in FLAG_FIELDS} == flags(letters), key
    assert got[("kip427", 2)]["note"] == "keep me"


def test_jsonl_crlf_and_blank_lines(tmp_path):
    text = "\r\n\r\n" + JSONL.replace("\n", "\r\n") + "\r\n"
    p = cli(write(tmp_path, "crlf.jsonl", text), "--output", "jsonl")
    assert (p.returncode, p.stderr) == (0, "")
    assert len(by_partition(p.stdout)) == 7


# --- describe output of several releases ------------------------------------------------------------

@pytest.mark.parametrize("release", sorted(SAMPLES))
@pytest.mark.parametrize("profile", PROFILES)
def test_describe_output(release, profile, tmp_path):
    text, expected_states, expected_flags = SAMPLES[release]
    p = (proc if profile == "kafka-3.7" else cli)(write(tmp_path, "describe.txt", text), "--output", "jsonl", "--semantics", profile)
    assert (p.returncode, p.stderr) == (0, "")
    got = by_partition(p.stdout)
    assert set(got) == set(expected_states)
    for key, (leader, replicas, isr, adding, removing, min_isr) in expected_states.items():
        r = got[key]
        assert (r["leader"], r["replicas"], r["isr"], r["adding_replicas"], r["removing_replicas"],
                r["min_isr"]) == (leader, replicas, isr, adding, removing, min_isr), key
        assert {k: r[k] for k in FLAG_FIELDS} == flags(expected_flags[profile][key]), key
    assert list(r)[-5:] == list(FLAG_FIELDS)


def test_describe_of_all_releases_in_one_stream():
    # Headers of one release do not leak into another's topics; everything on stdin.
    text = "".join(s[0] for s in SAMPLES.values())
    p = cli("--output", "jsonl", "--semantics", "topic-command", stdin=text)
    assert (p.returncode, p.stderr) == (0, "")
    got = by_partition(p.stdout)
    for _, states, fl in SAMPLES.values():
        for key, state in states.items():
            assert got[key]["min_isr"] == state[5], key
            assert {k: got[key][k] for k in FLAG_FIELDS} == flags(fl["topic-command"][key]), key


@pytest.mark.parametrize("default_min_isr, expected", [
    # orders-1: 2 of 3 in sync; doomed-0: 1 of 2; refbin-test-0: none of 1, no leader.
    (None, {("orders", 1): "U", ("doomed", 0): "UA", ("refbin-test", 0): "X"}),
    ("1", {("orders", 1): "U", ("doomed", 0): "UA", ("refbin-test", 0): "X"}),
    ("2", {("orders", 1): "UA", ("doomed", 0): "UB", ("refbin-test", 0): "X"}),
])
def test_filtered_describe_has_no_header_so_the_default_min_isr_applies(default_min_isr, expected, tmp_path):
    args = ["--output", "jsonl", write(tmp_path, "urp.txt", FILTERED_4_1)]
    if default_min_isr:
        args += ["--default-min-isr", default_min_isr]
    p = cli(*args)
    assert (p.returncode, p.stderr) == (0, "")
    got = by_partition(p.stdout)
    assert {key: {k: r[k] for k in FLAG_FIELDS} for key, r in got.items()} == \
        {key: flags(v) for key, v in expected.items()}
    assert {r["min_isr"] for r in got.values()} == {int(default_min_isr or 1)}


def test_real_41_elr_line_is_listed_like_kafka_topics_did():
    # "kafka-topics.sh listed it as under-replicated, under min ISR and unavailable"
    line = "\tTopic: refbin-test\tPartition: 0\tLeader: none\tReplicas: 2\tIsr: \tElr: 2\tLastKnownElr: 2\n"
    for kind in ("under-replicated", "under-min-isr", "unavailable"):
        p = proc("--semantics", "topic-command", "--only", kind, "--output", "jsonl", stdin=line)
        assert len(records(p.stdout)) == 1, kind
    p = proc("--semantics", "topic-command", "--only", "at-min-isr", "--output", "jsonl", stdin=line)
    assert (p.returncode, p.stdout) == (0, "")


# Real Kafka 4.4 `kafka-topics.sh --describe` output, as printed (3 brokers, min.insync.replicas=2 at
# the cluster level, ELR on): brokers 3 and 2 stopped, then min.insync.replicas of `cleared` set to 1
# while it was offline, which cleared its ELR and LastKnownElr (tests/real/test_elr_vs_brokers.py,
# state min_isr_changed, whose sidecar agreed with these verdicts).
REAL_4_4_ELR = (
    "Topic: cleared\tTopicId: BNh4IGmnSTmNZxRiLvuBIw\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: min.insync.replicas=1\n"
    "\tTopic: cleared\tPartition: 0\tLeader: none\tReplicas: 3,2\tIsr: \tElr: \tLastKnownElr: \n"
    "Topic: orders\tTopicId: Pr3GDmMFRP6VHaKg7wYvLA\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2\n"
    "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1\tElr: 2\tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 2,3,1\tIsr: 1\tElr: 2\tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 2\tLeader: 1\tReplicas: 3,1,2\tIsr: 1\tElr: 2\tLastKnownElr: \n"
    "Topic: pairs\tTopicId: Sqt5w0OwREeCf9AtfYY0hA\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: min.insync.replicas=2\n"
    "\tTopic: pairs\tPartition: 0\tLeader: none\tReplicas: 2,3\tIsr: \tElr: 2,3\tLastKnownElr: 2\n"
)


def test_real_44_describe_with_elr_fields_under_kafka_4_1(tmp_path):
    p = cli("--semantics", "kafka-4.1", "--output", "jsonl", write(tmp_path, "d.txt", REAL_4_4_ELR))
    assert (p.returncode, p.stderr) == (0, "")
    got = by_partition(p.stdout)
    elr = ("elr_under_min_isr", "elr_offline_clean", "elr_offline_unclean")
    assert {key: tuple(r[k] for k in elr) for key, r in got.items()} == {
        ("cleared", 0): (False, False, True),   # leaderless, ISR and ELR empty: no clean leader
        ("orders", 0): (True, False, False),    # ISR 1 < 2, ELR [2]: a clean candidate left
        ("orders", 1): (True, False, False),
        ("orders", 2): (True, False, False),
        ("pairs", 0): (False, True, False),     # leaderless, ELR [2, 3]: clean once 2 or 3 is back
    }
    assert got[("pairs", 0)]["eligible_leader_replicas"] == [2, 3] and got[("pairs", 0)]["last_known_elr"] == [2]
    assert got[("cleared", 0)]["eligible_leader_replicas"] == []
    p = cli("--semantics", "kafka-4.1", "--only", "elr-offline-clean,elr-offline-unclean",
            write(tmp_path, "d.txt", REAL_4_4_ELR))
    assert [line.split()[:2] for line in p.stdout.splitlines()[1:]] == [["cleared", "0"], ["pairs", "0"]]
    # kafka-3.7 prints no ELR figure (the lists still pass through in JSON Lines)
    p = cli("--output", "jsonl", write(tmp_path, "d.txt", REAL_4_4_ELR))
    assert not any(k.startswith("elr_") for r in records(p.stdout) for k in r)


def test_elr_not_known_prints_no_figure():
    # `Elr: N/A` (a tool that asked Metadata) and no Elr: column at all: not known, not false
    lines = ("\tTopic: a\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tElr: N/A\tLastKnownElr: N/A\n"
             "\tTopic: a\tPartition: 1\tLeader: 1\tReplicas: 1,2\tIsr: 1\n")
    p = proc("--semantics", "kafka-4.1", "--output", "jsonl", "--default-min-isr", "2", stdin=lines)
    assert p.returncode == 0
    for r in records(p.stdout):
        assert r["under_min_isr"] and not any(k.startswith("elr") or k == "last_known_elr" for k in r)


# --- --only, --semantics, --output table --------------------------------------------------------

@pytest.mark.parametrize("only, expected", [
    ("under-replicated", {("kip427", 1), ("placeholder", 0)}),
    ("under-min-isr", set()),
    ("at-min-isr", {("kip427", 1), ("rf1", 0)}),
    ("unavailable", {("kip427", 2), ("nulls", 0), ("dead", 0)}),
    ("under-min-isr,unavailable", {("kip427", 2), ("nulls", 0), ("dead", 0)}),
    ("at-min-isr,unavailable", {("kip427", 1), ("rf1", 0), ("kip427", 2), ("nulls", 0), ("dead", 0)}),
    ("under-replicated,at-min-isr", {("kip427", 1), ("placeholder", 0), ("rf1", 0)}),
    ("under-replicated,under-min-isr,at-min-isr,unavailable",
     {("kip427", 1), ("placeholder", 0), ("rf1", 0), ("kip427", 2), ("nulls", 0), ("dead", 0)}),
])
def test_only_kinds_are_ored(only, expected, tmp_path):
    # kafka-3.7 verdicts of JSONL_FLAGS; kip352-0 (reassigning only) never matches.
    p = cli(write(tmp_path, "in.jsonl", JSONL), "--output", "jsonl", "--only", only)
    assert (p.returncode, p.stderr) == (0, "")
    assert set(by_partition(p.stdout)) == expected


def test_only_with_topic_command_semantics(tmp_path):
    p = cli(write(tmp_path, "in.jsonl", JSONL), "--output", "jsonl", "--semantics", "topic-command",
            "--only", "under-min-isr")
    assert set(by_partition(p.stdout)) == {("kip427", 2), ("rf1", 0), ("nulls", 0)}


def test_only_rejects_an_unknown_kind(tmp_path):
    p = cli(write(tmp_path, "in.jsonl", JSONL), "--only", "under-replicated,offline")
    assert p.returncode == 2
    assert "offline" in p.stderr
    assert p.stdout == ""


def test_semantics_rejects_an_unknown_profile(tmp_path):
    p = proc(write(tmp_path, "in.jsonl", JSONL), "--semantics", "kafka-9")
    assert p.returncode == 2
    assert "kafka-9" in p.stderr


def test_default_semantics_is_kafka_3_7():
    line = '{"topic": "rf1", "partition": 0, "leader": 1, "replicas": [1], "isr": [1], "min_isr": 2}\n'
    p = cli("--output", "jsonl", stdin=line)
    assert {k: records(p.stdout)[0][k] for k in FLAG_FIELDS} == flags("A")


def table_rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_table_output(tmp_path):
    text, _, _ = SAMPLES["4.1"]
    p = cli(write(tmp_path, "describe.txt", text))  # table is the default
    assert (p.returncode, p.stderr) == (0, "")
    rows = table_rows(p.stdout)
    header = rows[0]
    for column in ("TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "MIN_ISR"):
        assert column in header
    body = {(r[header.index("TOPIC")], r[header.index("PARTITION")]): r for r in rows[1:]}
    assert set(body) == {("orders", "0"), ("orders", "1"), ("orders", "2"), ("refbin-test", "0"),
                         ("compacted", "0"), ("doomed", "0")}
    last = {key: set(r[-1].split(",")) for key, r in body.items()}
    assert last[("orders", "1")] == {"under-replicated", "at-min-isr"}
    assert last[("doomed", "0")] == {"under-replicated", "under-min-isr"}
    assert last[("compacted", "0")] == {"at-min-isr"}
    assert last[("refbin-test", "0")] == {"unavailable"}
    assert "reassigning" in last[("orders", "2")]
    assert not last[("orders", "2")] & {"under-replicated", "under-min-isr", "at-min-isr", "unavailable"}
    assert not last[("orders", "0")] & {"under-replicated", "under-min-isr", "at-min-isr", "unavailable"}
    r = body[("orders", "1")]
    assert (r[header.index("LEADER")], r[header.index("REPLICAS")], r[header.index("ISR")],
            r[header.index("MIN_ISR")]) == ("2", "2,3,1", "2,3", "2")
    assert body[("refbin-test", "0")][header.index("LEADER")] == "none"


def test_table_output_with_only_and_semantics(tmp_path):
    text, _, _ = SAMPLES["4.1"]
    p = cli(write(tmp_path, "describe.txt", text), "--output", "table", "--semantics", "kafka-2.5",
            "--only", "under-min-isr")
    rows = table_rows(p.stdout)
    assert {(r[0], r[1]) for r in rows[1:]} == {("compacted", "0"), ("doomed", "0")}


# --- malformed input ------------------------------------------------------------------------------

BAD_JSONL = [
    # (line, None for a good line or what the reason must mention)
    ('{"topic": "good", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1], "min_isr": 2}', None),
    ('{"topic": "a", "partition": 1, ', "JSON"),
    ('{"topic": "a", "partition": "1", "leader": 1, "replicas": [1], "isr": [1]}', '"partition"'),
    ('{"topic": "a", "partition": 2, "leader": 1, "isr": [1]}', '"replicas"'),
    ("", None),  # blank lines are skipped and still counted
    ('{"topic": "a", "partition": 3, "leader": 1, "replicas": [1, "2"], "isr": [1]}', '"replicas"'),
    ('{"topic": "a", "partition": 4, "replicas": [1], "isr": [1]}', '"leader"'),
    ("[1, 2]", "object"),
    ('{"topic": "a", "partition": 5, "leader": 1, "replicas": [1, 2], "isr": [1], "min_isr": 0}', '"min_isr"'),
    ('{"topic": "good", "partition": 1, "leader": -1, "replicas": [1, 2], "isr": [2], "min_isr": 2}', None),
    ('{"topic": "a", "partition": 6, "leader": 1, "replicas": [1, -1], "isr": [1, -1]}', '"isr"'),
    ('{"topic": "a", "partition": 7, "leader": true, "replicas": [1], "isr": [1]}', '"leader"'),
    ('{"topic": "a", "partition": 8, "leader": 1, "replicas": [], "isr": []}', '"replicas"'),
    ('{"topic": "a", "partition": 9, "leader": 1, "replicas": [1], "isr": [1], "live_brokers": "1"}',
     '"live_brokers"'),
    ('{"topic": 7, "partition": 10, "leader": 1, "replicas": [1], "isr": [1]}', '"topic"'),
    ('{"topic": "a", "partition": 11, "leader": -2, "replicas": [1, -2], "isr": [1]}', '"leader"'),
    ('{"topic": "a", "partition": 12, "leader": 1, "replicas": [1], "isr": [1], "adding_replicas": 3}',
     '"adding_replicas"'),
    ('{"topic": "a", "partition": 13, "leader": 1, "replicas": [1], "isr": [1], "min_isr": "2"}', '"min_isr"'),
    ('{"topic": "a", "partition": 14, "leader": 1.0, "replicas": [1], "isr": [1]}', '"leader"'),
    ('{"topic": "good", "partition": 2, "leader": 2, "replicas": [1, 2], "isr": [2]}', None),
]


def _check_rejections(stderr: str, source: str, table) -> None:
    lines = stderr.splitlines()
    for line_no, (_, reason) in enumerate(table, 1):
        prefix = f"{source}:{line_no}: "
        hits = [l for l in lines if l.startswith(prefix)]
        if reason is None:
            assert not hits, (line_no, hits)
        else:
            assert len(hits) == 1, (line_no, lines)
            assert reason.lower() in hits[0].lower(), hits[0]
    expected = sum(1 for _, reason in table if reason)
    assert sum(1 for l in lines if l.startswith(f"{source}:")) == expected


def test_malformed_jsonl_lines_are_reported_and_good_lines_judged(tmp_path):
    path = write(tmp_path, "bad.jsonl", "\n".join(line for line, _ in BAD_JSONL) + "\n")
    p = cli(path, "--output", "jsonl")
    assert p.returncode == 2
    _check_rejections(p.stderr, path, BAD_JSONL)
    got = by_partition(p.stdout)
    assert set(got) == {("good", 0), ("good", 1), ("good", 2)}
    assert {k: got[("good", 0)][k] for k in FLAG_FIELDS} == flags("UB")
    assert {k: got[("good", 1)][k] for k in FLAG_FIELDS} == flags("X")
    assert {k: got[("good", 2)][k] for k in FLAG_FIELDS} == flags("UA")


def test_malformed_jsonl_in_process_and_on_stdin():
    text = "\n".join(line for line, _ in BAD_JSONL) + "\n"
    code, out, err = run_main("--output", "jsonl", "-", stdin=text)
    assert code == 2
    _check_rejections(err, "<stdin>", BAD_JSONL)
    assert set(by_partition(out)) == {("good", 0), ("good", 1), ("good", 2)}


BAD_DESCRIBE = [
    ("Topic: x\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 9\tReplicationFactor: 2\t"
     "Configs: min.insync.replicas=2", None),
    ("\tTopic: x\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\tElr: N/A\tLastKnownElr: N/A", None),
    ("\tTopic: x\tPartition: zero\tLeader: 1\tReplicas: 1,2\tIsr: 1,2", "Partition"),
    ("\tTopic: x\tPartition: 2\tLeader: one\tReplicas: 1,2\tIsr: 1,2", "Leader"),
    ("\tTopic: x\tPartition: 3\tLeader: 1\tReplicas: 1,a\tIsr: 1", "Replicas"),
    ("\tTopic: x\tPartition: 4\tLeader: 1\tReplicas: 1,2", "Isr"),
    ("", None),
    ("this is not describe output", "partition line"),
    ("\tTopic: x\tPartition: 5\tLeader: 1\tReplicas: \tIsr: ", "Replicas"),
    ("\tTopic: x\tPartition: 6\tLeader: 1\tReplicas: 1,2\tIsr: 1,x", "Isr"),
    ("\tTopic: x\tPartition: 7\tLeader: 1\tReplicas: 1,2\tIsr: 1\tAdding Replicas: 3,?\tRemoving Replicas: ", "Adding"),
    # a placeholder (a negative id) is never in sync, as the JSON Lines reader also insists
    ("\tTopic: x\tPartition: 9\tLeader: 1\tReplicas: 1,-1\tIsr: 1,-1", "Isr"),
    ("Topic: y\tTopicId: BBBBBBBBBBBBBBBBBBBBBB\tPartitionCount: 1\tReplicationFactor: 1\t"
     "Configs: min.insync.replicas=two", "min.insync.replicas"),
    ("\tTopic: x\tPartition: 8\tLeader: 2\tReplicas: 1,2\tIsr: 2\tElr: N/A\tLastKnownElr: N/A", None),
]


def test_malformed_describe_lines_are_reported_and_good_lines_judged(tmp_path):
    path = write(tmp_path, "bad.txt", "\n".join(line for line, _ in BAD_DESCRIBE) + "\n")
    p = cli(path, "--output", "jsonl")
    assert p.returncode == 2
    _check_rejections(p.stderr, path, BAD_DESCRIBE)
    got = by_partition(p.stdout)
    assert set(got) == {("x", 0), ("x", 8)}
    assert got[("x", 0)]["min_isr"] == got[("x", 8)]["min_isr"] == 2
    assert {k: got[("x", 0)][k] for k in FLAG_FIELDS} == flags("A")
    assert {k: got[("x", 8)][k] for k in FLAG_FIELDS} == flags("UB")


def test_a_missing_file_is_reported_and_the_others_judged(tmp_path):
    good = write(tmp_path, "good.jsonl", JSONL)
    missing = str(tmp_path / "missing.jsonl")
    p = cli(missing, good, "--output", "jsonl")
    assert p.returncode == 2
    assert missing in p.stderr
    assert len(records(p.stdout)) == 7


def test_several_files_line_numbers_are_per_file(tmp_path):
    a = write(tmp_path, "a.jsonl", JSONL + "oops\n")  # line 8
    b = write(tmp_path, "b.txt", "garbage\n" + SAMPLES["2.8"][0])  # line 1
    p = cli(a, b, "--output", "jsonl")
    assert p.returncode == 2
    reported = [l for l in p.stderr.splitlines() if l.startswith((a + ":", b + ":"))]
    assert len(reported) == 2
    assert reported[0].startswith(f"{a}:8: ") and reported[1].startswith(f"{b}:1: ")
    got = by_partition(p.stdout)
    assert len(got) == 7 + 4
    # the 2.8 header after the garbage line still sets min ISR 2
    assert got[("events", 0)]["min_isr"] == 2


def test_no_file_and_dash_read_stdin():
    for args in ((), ("-",)):
        p = proc("--output", "jsonl", *args, stdin=JSONL)
        assert (p.returncode, p.stderr) == (0, "")
        assert len(records(p.stdout)) == 7


@pytest.mark.parametrize("text", ["", "\n", "\n\n   \n\t\n"])
@pytest.mark.parametrize("output", ["jsonl", "table"])
def test_empty_input(text, output, tmp_path):
    p = cli(write(tmp_path, "empty", text), "--output", output)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    p = cli("--output", output, stdin=text)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


# --- in-process: main() writes where stdout/stderr are at call time ----------------------------------

def test_main_in_process_twice_writes_to_the_current_streams(tmp_path):
    path = write(tmp_path, "in.jsonl", JSONL)
    for _ in range(2):
        code, out, err = run_main(path, "--output", "jsonl")
        assert (code, err) == (0, "")
        assert len(records(out)) == 7


def test_main_in_process_with_capsys(capsys, tmp_path):
    path = write(tmp_path, "bad.jsonl", JSONL + "{nope\n")
    assert main(["health", path, "--output", "jsonl", "--only", "unavailable"]) == 2
    captured = capsys.readouterr()
    assert set(by_partition(captured.out)) == {("kip427", 2), ("nulls", 0), ("dead", 0)}
    assert f"{path}:8: " in captured.err


# --- --live-brokers: what saved describe output cannot say -----------------------------------------

def test_real_0_11_describe_names_the_dead_controller_as_leader(tmp_path):
    """Real Kafka 0.11 (describe_samples.REAL_0_11_DEAD_CONTROLLER): ZooKeeper keeps broker 2, the
    controller that died as their last replica, as the leader of moving-0, moving-1 and pairs-1.
    The real TopicCommand knew broker 2 was gone and listed them as unavailable; the text alone
    cannot say it, so --live-brokers tells health which brokers were registered."""
    path = write(tmp_path, "describe.txt", REAL_0_11_DEAD_CONTROLLER)
    unknown = cli(path, "--semantics", "topic-command", "--output", "jsonl", "--only", "unavailable")
    assert set(by_partition(unknown.stdout)) == {("single", 1)}  # every named leader taken as live
    known = cli(path, "--semantics", "topic-command", "--output", "jsonl", "--only", "unavailable",
                "--live-brokers", REAL_0_11_LIVE_BROKERS)
    assert (known.returncode, known.stderr) == (0, "")
    assert set(by_partition(known.stdout)) == REAL_0_11_UNAVAILABLE
    # 0.11's broker gauges (legacy): the controller's OfflinePartitionsCount read 4, broker 1 read
    # UnderReplicatedPartitions 10 and LeaderCount 11; dead broker 2 reports nothing.
    legacy = by_partition(cli(path, "--semantics", "legacy", "--output", "jsonl",
                              "--live-brokers", REAL_0_11_LIVE_BROKERS).stdout)
    assert {k for k, v in legacy.items() if v["unavailable"]} == REAL_0_11_UNAVAILABLE
    led_by_1 = [v for v in legacy.values() if v["leader"] == 1]
    assert (len(led_by_1), sum(v["under_replicated"] for v in led_by_1)) == (11, 10)
    assert not any(v["under_replicated"] or v["under_min_isr"] or v["at_min_isr"]
                   for v in legacy.values() if v["leader"] == 2)
    assert legacy[("moving", 0)]["live_brokers"] == [1]


def test_live_brokers_fill_in_only_where_a_line_does_not_say(tmp_path):
    # A JSON line's own live_brokers wins; the option serves the others.
    text = ('{"topic": "a", "partition": 0, "leader": 3, "replicas": [3], "isr": [3]}\n'
            '{"topic": "b", "partition": 0, "leader": 3, "replicas": [3], "isr": [3], "live_brokers": [3]}\n')
    p = cli(write(tmp_path, "in.jsonl", text), "--output", "jsonl", "--live-brokers", "1,2")
    got = by_partition(p.stdout)
    assert (got[("a", 0)]["unavailable"], got[("b", 0)]["unavailable"]) == (True, False)


def test_live_brokers_must_be_broker_ids(tmp_path):
    p = cli(write(tmp_path, "in.jsonl", JSONL), "--live-brokers", "1,two")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == "error: --live-brokers: '1,two' is not a comma-separated list of broker ids\n"


# --- big input: judged in batches, possibly on several processes ------------------------------------

def test_big_describe_keeps_header_min_isr_and_line_numbers_across_batches(tmp_path):
    n = 45_000
    lines = ["Topic: big\tTopicId: CCCCCCCCCCCCCCCCCCCCCC\tPartitionCount: %d\tReplicationFactor: 2\t"
             "Configs: min.insync.replicas=2" % n]
    for i in range(n):
        lines.append(f"\tTopic: big\tPartition: {i}\tLeader: 1\tReplicas: 1,2\tIsr: 1")
    lines[30_001] = "\tTopic: big\tPartition: broken\tLeader: 1\tReplicas: 1,2\tIsr: 1"  # line 30002
    path = write(tmp_path, "big.txt", "\n".join(lines) + "\n")
    p = proc(path, "--output", "jsonl")
    assert p.returncode == 2
    assert [l for l in p.stderr.splitlines() if l.startswith(path)] == \
        [l for l in p.stderr.splitlines() if l.startswith(f"{path}:30002: ")]
    assert f"{path}:30002: " in p.stderr
    got = records(p.stdout)
    assert len(got) == n - 1
    assert [r["partition"] for r in got] == [i for i in range(n) if i != 30_000]  # input order
    # every partition: 1 of 2 in sync with min ISR 2 from the header: URP and under min ISR
    assert {r["min_isr"] for r in got} == {2}
    assert all({k: r[k] for k in FLAG_FIELDS} == flags("UB") for r in got)


def test_big_jsonl_line_numbers_across_batches(tmp_path):
    n = 41_000
    good = '{"topic": "big", "partition": %d, "leader": 1, "replicas": [1, 2, 3], "isr": [1, 2], "min_isr": 2}'
    lines = [good % i for i in range(n)]
    lines[20_000] = "not json"  # line 20001
    lines[40_500] = '{"topic": "big", "partition": -1, "leader": 1, "replicas": [1], "isr": [1]}'  # 40501
    path = write(tmp_path, "big.jsonl", "\n".join(lines) + "\n")
    p = proc(path, "--output", "jsonl", "--only", "at-min-isr")
    assert p.returncode == 2
    err = [l for l in p.stderr.splitlines() if l.startswith(path)]
    assert len(err) == 2
    assert err[0].startswith(f"{path}:20001: ") and err[1].startswith(f"{path}:40501: ")
    assert len(p.stdout.splitlines()) == n - 2


def test_input_after_a_batch_of_blank_lines_is_still_judged():
    # More blank lines than one batch holds before the first partition: the form is detected from
    # the first non-blank line wherever it is, and line numbers still count every line.
    blank = "\n" * 25_000
    good = '{"topic": "late", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1], "min_isr": 2}\n'
    p = proc("--output", "jsonl", stdin=blank + good + "{broken\n")
    assert p.returncode == 2
    assert [(r["topic"], r["partition"]) for r in records(p.stdout)] == [("late", 0)]
    assert "<stdin>:25002: " in p.stderr
    p = proc("--output", "jsonl", stdin=blank + SAMPLES["2.8"][0])
    assert (p.returncode, p.stderr) == (0, "")
    assert by_partition(p.stdout)[("events", 0)]["min_isr"] == 2


# --- the readers, round trip: what a line says is what is judged ------------------------------------

TOPIC = hs.text("abcxyz09._-", min_size=1, max_size=12)


@hs.composite
def partition_states(draw, placeholders=False):
    ids = hs.integers(min_value=-3 if placeholders else 0, max_value=20)
    replicas = draw(hs.lists(ids, min_size=1, max_size=5, unique=True))
    real = [r for r in replicas if r >= 0]
    isr = draw(hs.lists(hs.sampled_from(real), unique=True)) if real else []
    adding = draw(hs.lists(hs.sampled_from(replicas), unique=True, max_size=2))
    removing = draw(hs.lists(hs.sampled_from(replicas), unique=True, max_size=2))
    leader = draw(hs.one_of(hs.none(), hs.sampled_from(real))) if real else None
    return PartitionState(draw(TOPIC), draw(hs.integers(0, 5000)), leader, tuple(replicas), tuple(isr),
                          tuple(adding), tuple(removing), draw(hs.integers(1, 4)), None)


def _ids_text(ids):
    return ",".join(map(str, ids))


def describe_text(states, release: str) -> str:
    """Render states as `kafka-topics.sh --describe` of a release, one topic header each."""
    out = []
    for s in states:
        configs = f"min.insync.replicas={s.min_isr}" if s.min_isr != 1 else ""
        if release == "zk":
            out.append(f"Topic:{s.topic}\tPartitionCount:1\tReplicationFactor:{len(s.replicas)}\tConfigs:{configs}")
        elif release == "2.8":
            out.append(f"Topic: {s.topic}\tPartitionCount: 1\tReplicationFactor: {len(s.replicas)}\t"
                       f"Configs: {configs}")
        else:
            out.append(f"Topic: {s.topic}\tTopicId: AAAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 1\t"
                       f"ReplicationFactor: {len(s.replicas)}\tConfigs: {configs}")
        leader = ("-1" if release == "zk" else "none") if s.leader is None else str(s.leader)
        line = (f"\tTopic: {s.topic}\tPartition: {s.partition}\tLeader: {leader}\t"
                f"Replicas: {_ids_text(s.replicas)}\tIsr: {_ids_text(s.isr)}")
        if s.adding_replicas or s.removing_replicas:
            line += (f"\tAdding Replicas: {_ids_text(s.adding_replicas)}"
                     f"\tRemoving Replicas: {_ids_text(s.removing_replicas)}")
        if release == "4.1":
            line += "\tElr: N/A\tLastKnownElr: N/A"
        elif release == "zk" and set(s.replicas) - set(s.isr):
            line += f"\tOffline: {_ids_text(sorted(set(s.replicas) - set(s.isr)))}"
        out.append(line)
    return "".join(line + "\n" for line in out)


@settings(max_examples=60, deadline=None)
@given(hs.lists(partition_states(placeholders=True), min_size=1, max_size=6),
       hs.sampled_from(["4.1", "2.8", "zk"]))
def test_describe_lines_read_back_as_written(states, release):
    items = list(read_states(describe_text(states, release).splitlines(keepends=True)))
    assert all(type(i) is Parsed for i in items), items
    assert [tuple(i.state) for i in items] == [tuple(s) for s in states]
    assert [i.line_no for i in items] == list(range(2, 2 * len(states) + 1, 2))


@settings(max_examples=40, deadline=None)
@given(hs.lists(partition_states(placeholders=True), min_size=1, max_size=4),
       hs.lists(hs.tuples(TOPIC, hs.integers(0, 5000), hs.integers(0, 3)), min_size=1, max_size=30))
def test_describe_lines_sharing_a_tail_are_each_judged_and_printed_as_their_own(shapes, uses):
    """Describe input is judged once per distinct state shape (all but topic and partition):
    lines sharing a shape under other topics, partitions and min ISRs must each print exactly what
    the same state alone would (json.dumps of it plus its own verdict)."""
    from kafka_jmx_sidecar.exporter.commands.health import Job, judge_batch, state_as_object
    from kafka_jmx_sidecar.mbeans.health import PROFILES, counts_of, judge_counts

    states = [shapes[k % len(shapes)]._replace(topic=t, partition=p, min_isr=1 + k % 3) for t, p, k in uses]
    text = describe_text(states, "4.1")
    result = judge_batch(Job("kafka-3.7", (), "jsonl", 1), text.splitlines(keepends=True), 1, False, None)
    assert result.rejected == [] and result.judged == len(states)
    got = [json.loads(line) for line in result.text.splitlines()]
    want = [{**state_as_object(s), **judge_counts(counts_of(s), PROFILES["kafka-3.7"])._asdict()} for s in states]
    assert got == want
    assert [list(g) for g in got] == [list(w) for w in want]  # the key order too


@settings(max_examples=60, deadline=None)
@given(partition_states(placeholders=True), hs.randoms(use_true_random=False),
       hs.one_of(hs.none(), hs.frozensets(hs.integers(0, 20))), hs.booleans())
def test_json_lines_read_back_as_written(s, rnd, live, minus_one):
    obj = {"topic": s.topic, "partition": s.partition,
           "leader": (-1 if minus_one else None) if s.leader is None else s.leader,
           "replicas": list(s.replicas), "isr": list(s.isr)}
    if s.adding_replicas or rnd.random() < 0.5:
        obj["adding_replicas"] = list(s.adding_replicas)
    if s.removing_replicas or rnd.random() < 0.5:
        obj["removing_replicas"] = list(s.removing_replicas)
    if s.min_isr != 1 or rnd.random() < 0.5:
        obj["min_isr"] = s.min_isr
    if live is not None:
        obj["live_brokers"] = sorted(live)
    keys = list(obj)
    rnd.shuffle(keys)
    line = json.dumps({k: obj[k] for k in keys})
    (item,) = read_states([line + "\n"])
    assert type(item) is Parsed, item
    assert tuple(item.state) == tuple(s._replace(live_brokers=live))


def test_a_byte_order_mark_does_not_hide_json_lines(tmp_path):
    # Editors on Windows save UTF-8 with a BOM; it must not turn JSON Lines into "describe text".
    line = '{"topic": "a", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1], "min_isr": 1}\n'
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + line.encode())
    code, out, err = run_main(str(path), "--output", "jsonl")
    assert (code, err) == (0, "")
    assert json.loads(out)["under_replicated"] is True
    code, out, err = run_main("-", "--output", "jsonl", stdin="\ufeff" + line)
    assert code == 0 and json.loads(out)["under_replicated"] is True
