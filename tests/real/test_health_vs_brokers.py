"""`health` on real `kafka-topics.sh --describe` output agrees with the real brokers.

For every Kafka release that runs here (4.4 and 3.6 under KRaft; 2.4, 2.2 and 0.11 under
ZooKeeper), one 3-broker cluster plays one scenario, and in each state it passes through

    healthy -> reassigning (throttled) -> reassigned -> broker 3 down -> brokers 2 and 3 down

the release's own TopicCommand `--describe` output is saved and judged by `health` under the
profile that models the release (`profile_for_version`: kafka-3.7 for 4.4, kafka-2.5 for 3.6,
legacy for 2.4, 2.2, 0.11), told the live brokers as TopicCommand knows them (`--live-brokers`).
The describe and the release's filters run in one JVM, then every `kafka-jmx-sidecar serve` next
to a node (polling each second) is read at its next poll; the readings are taken again until they
agree or a time limit passes, which fails showing all of them. They agree when:

- per leader, the sums of the verdicts equal each live broker's ReplicaManager gauges:
  LeaderCount, UnderReplicatedPartitions, UnderMinIsrPartitionCount (1.0+),
  AtMinIsrPartitionCount (2.3+), ReassigningPartitions (2.5+); a gauge the release lacks is absent;
- every kafka.cluster:type=Partition flag (UnderReplicated; UnderMinIsr 1.0+; AtMinIsr 2.3+) and
  count (InSyncReplicasCount, ReplicasCount) equals the verdict on the leader and is 0 elsewhere;
- the controller's OfflinePartitionsCount equals the count of unavailable partitions;
- the topic-command profile's verdicts equal what the release's TopicCommand prints for each
  filter it has (`--under-replicated-partitions`, `--unavailable-partitions`; from 2.3 also
  `--under-min-isr-partitions`, `--at-min-isr-partitions`); the ones it lacks it rejects;
- and health read every partition line as this test reads it.

The topics make the states show what the profiles disagree on: `strict` (RF 2, min ISR 3) is
AtMinIsr under kafka-3.7 and UnderMinIsr before; `moving` (RF 1, min ISR 2) is moved 1 -> 2 and
grown 2 -> 2,3, so the reassignment is under-replicated before KIP-352 (2.4 included: its brokers
still count the adding replicas) and not from 2.5, and under kafka-3.7 UnderMinIsr while the
adding replica counts in the effective min ISR. With broker 3 down `orders` is at its min ISR and
`pairs` under it; with brokers 2 and 3 down `orders` is under and `relaxed` at, and `single`,
`pairs` and `moving` partitions lose every replica. Broker numbers here are roles: under ZooKeeper
the active controller plays broker 2, so it dies as the last replica's leader and 0.11's describe
(read from ZooKeeper) keeps naming it the leader: only --live-brokers tells health it is dead.
"""
from __future__ import annotations

import io
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.commands import health as health_report
from kafka_jmx_sidecar.mbeans.health import PROFILES, PartitionState, counts_of, profile_for_version
from harness import processes
from harness.kafka import CONTROLLER_ID, KafkaCluster
from harness.sidecar import Serve, config_text

RELEASES = ("4.4", "3.6", "2.4", "2.2", "0.11")
# The profile the README's table names for each release (checked against profile_for_version).
MODELLED_BY = {"4.4": "kafka-3.7", "3.6": "kafka-2.5", "2.4": "legacy", "2.2": "legacy", "0.11": "legacy"}
STATES = ("healthy", "reassigning", "reassigned", "broker_3_down", "brokers_2_and_3_down")

# topic -> (replica assignment, leader first; min.insync.replicas or None for the broker default, 1)
TOPICS = {
    "orders": ([[1, 2, 3], [2, 3, 1], [3, 1, 2]], 2),
    "relaxed": ([[2, 3, 1], [3, 1, 2], [1, 2, 3]], None),
    "pairs": ([[1, 2], [2, 3], [3, 1]], 2),
    "strict": ([[1, 2]], 3),
    "single": ([[1], [3]], None),
    "moving": ([[1], [2]], 2),
}
MOVES = {("moving", 0): [2], ("moving", 1): [2, 3]}
# Enough data, throttled enough, that the adding replicas stay out of the ISR for minutes. The
# quota is a rate over an 11 s window checked before each fetch, so a follower fetching the
# default 1 MiB per partition moves ~1 MiB per window whatever the throttle; small fetches make
# the throttle hold (~130 KB per window).
MOVING_RECORDS, RECORD_SIZE, THROTTLE = 50_000, 100, 10_000
BROKER_CONFIG = {
    "replica.fetch.max.bytes": "16384",
    # A ZooKeeper broker whose partitions cannot all move away (their other replicas are down)
    # retries its controlled shutdown 3 times, 5 s apart by default, then stops anyway.
    "controlled.shutdown.retry.backoff.ms": "200",
}

# ReplicaManager gauges summed per leader: gauge -> (verdict field, first release that has it)
SUMMED = {
    "UnderReplicatedPartitions": ("under_replicated", (0, 8)),
    "UnderMinIsrPartitionCount": ("under_min_isr", (1, 0)),
    "AtMinIsrPartitionCount": ("at_min_isr", (2, 3)),
    "ReassigningPartitions": ("reassigning", (2, 5)),
}
# kafka.cluster:type=Partition flags: name -> (verdict field, since)
PARTITION_FLAGS = {
    "UnderReplicated": ("under_replicated", (0, 8)),
    "UnderMinIsr": ("under_min_isr", (1, 0)),
    "AtMinIsr": ("at_min_isr", (2, 3)),
}
# TopicCommand filters: option -> (verdict field, since)
FILTERS = {
    "--under-replicated-partitions": ("under_replicated", (0, 8)),
    "--unavailable-partitions": ("unavailable", (0, 8)),
    "--under-min-isr-partitions": ("under_min_isr", (2, 3)),
    "--at-min-isr-partitions": ("at_min_isr", (2, 3)),
}

# `kafka-jmx-sidecar serve` next to every node, polling each second and re-reading the MBean names
# each poll (partitions appear on brokers as they are moved there).
SIDECAR = "  pollIntervalSeconds: 1\n  namesRefreshSeconds: 1\n"
RULES = r"""includeObjectNames:
  - "kafka.server:type=ReplicaManager,*"
  - "kafka.cluster:type=Partition,*"
  - "kafka.controller:type=KafkaController,*"
rules:
- pattern: 'kafka.server<type=ReplicaManager, name=(\w+)><>Value'
  name: replicamanager_$1
- pattern: 'kafka.cluster<type=Partition, name=(\w+), topic=(.+), partition=(\d+)><>Value'
  name: partition_$1
  labels: {topic: "$2", partition: "$3"}
- pattern: 'kafka.controller<type=KafkaController, name=(OfflinePartitionsCount|ActiveControllerCount)><>Value'
  name: controller_$1
"""

REACH_TIMEOUT = 120.0   # until --describe shows the state (ISR changes take seconds)
AGREE_TIMEOUT = 60.0    # until every reading agrees (a broker applies the controller's news late)

Key = tuple  # (topic, partition)


# --- reading the real programs' output (independently of the project's parser) ------------------

@dataclass(frozen=True)
class Line:
    """One partition line of `--describe`, as this test reads it."""

    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


def _ids(text: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",")) if text and text.strip() else ()


def read_describe(text: str) -> dict[Key, Line]:
    lines = {}
    for raw in text.splitlines():
        fields = dict(part.split(":", 1) for part in raw.strip().split("\t") if ":" in part)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        if "Partition" not in fields:
            continue
        leader = fields["Leader"]
        lines[(fields["Topic"], int(fields["Partition"]))] = Line(
            None if leader in ("none", "-1") else int(leader), _ids(fields["Replicas"]), _ids(fields["Isr"]),
            _ids(fields.get("Adding Replicas")), _ids(fields.get("Removing Replicas")))
    return lines


@dataclass
class Gauges:
    """One node's /metrics: ReplicaManager and KafkaController values, Partition values by key."""

    text: str
    broker: dict[str, float] = field(default_factory=dict)
    controller: dict[str, float] = field(default_factory=dict)
    partition: dict[tuple[str, str, int], float] = field(default_factory=dict)  # (name, topic, p)


_SAMPLE = re.compile(r"^(\w+?)_(\w+?)(?:\{(.*)\})? (\S+)$")


def read_gauges(text: str) -> Gauges:
    g = Gauges(text)
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or line.startswith("#"):
            continue
        kind, name, labels, value = m.group(1), m.group(2), m.group(3), float(m.group(4))
        if kind == "replicamanager":
            g.broker[name] = value
        elif kind == "controller":
            g.controller[name] = value
        elif kind == "partition":
            lab = dict(re.findall(r'(\w+)="([^"]*)"', labels or ""))
            g.partition[(name, lab["topic"], int(lab["partition"]))] = value
    return g


def judge(path: Path, profile: str, live: list[int]) -> tuple[dict[Key, dict], str]:
    """`health FILE --semantics P --output jsonl --live-brokers L` through its entry point:
    verdicts and stderr. (TopicCommand and the controller know the live brokers; the describe
    text does not show them, and 0.11's can name a dead broker as leader.)"""
    out, err = io.StringIO(), io.StringIO()
    code = health_report.run([str(path)], semantics=profile, output="jsonl", out=out, err=err,
                             live_brokers=",".join(map(str, live)))
    verdicts = {(o["topic"], o["partition"]): o for o in map(json.loads, out.getvalue().splitlines())}
    return verdicts, (f"exit {code}: {err.getvalue()}" if code or err.getvalue() else "")


def _has(version: tuple[int, ...], since: tuple[int, ...]) -> bool:
    return version >= since


def _fmt(keys) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(keys)) or "none"


# --- one reading of everything -----------------------------------------------------------------

@dataclass
class Observation:
    state: str
    describe: str
    path: Path
    lines: dict[Key, Line]
    verdicts: dict[Key, dict]           # health under the release's broker profile
    topic_command: dict[Key, dict]      # health under topic-command
    health_errors: str
    filters: dict[str, str]             # TopicCommand filter option -> its output
    gauges: dict[int, Gauges]           # node id -> scrape (live brokers, and the KRaft controller)

    def report(self) -> str:
        parts = [f"--describe ({self.path}):\n{self.describe}"]
        for opt, text in self.filters.items():
            parts.append(f"--describe {opt}:\n{text or '(nothing)'}")
        for node, g in sorted(self.gauges.items()):
            values = {**g.broker, **g.controller}
            flags = {f"{n}[{t}-{p}]": v for (n, t, p), v in sorted(g.partition.items())
                     if v and n in (*PARTITION_FLAGS, "InSyncReplicasCount", "ReplicasCount")}
            parts.append(f"node {node}: {values}\n  non-zero partition gauges: {flags}")
        return "\n".join(parts)


class Scenario:
    """One release's cluster and the states played on it, in order."""

    def __init__(self, cluster: KafkaCluster, directory: Path):
        self.cluster = cluster
        self.release = cluster.release
        self.version = self.release.version_tuple
        self.profile = profile_for_version(self.release.version).name
        self.directory = directory
        self.done = -1  # index in STATES of the last state acted out
        self.sidecars: dict[int, Serve] = {}
        self.stopping = False  # set when the module is done: sidecars still starting give up
        self.min_isr = {t: m or 1 for t, (_, m) in TOPICS.items()}
        # The broker playing each role of TOPICS and MOVES (1 stays up, 3 stops first, 2 second):
        # under ZooKeeper role 2 is the active controller, so that it dies with the last replicas
        # of some partitions in every run (see _act_healthy).
        self.role = {1: 1, 2: 2, 3: 3}
        self.dead_controller: int | None = None

    @property
    def live(self) -> list[int]:
        return [i for i, n in self.cluster.brokers.items() if n.running]

    @property
    def filters(self) -> list[str]:
        return [opt for opt, (_, since) in FILTERS.items() if _has(self.version, since)]

    # -- acting ------------------------------------------------------------------------------

    def reach(self, state: str) -> Observation:
        target = STATES.index(state)
        assert self.done <= target, f"states run in order: {state} is behind {STATES[self.done]}"
        while self.done < target:
            self.done += 1
            getattr(self, "_act_" + STATES[self.done])()
        return self._agreeing(state)

    def ids(self, roles: list[int]) -> list[int]:
        return [self.role[r] for r in roles]

    def assignment(self, topic: str) -> list[list[int]]:
        return [self.ids(r) for r in TOPICS[topic][0]]

    def moves(self) -> dict[Key, list[int]]:
        return {key: self.ids(target) for key, target in MOVES.items()}

    def _act_healthy(self) -> None:
        c = self.cluster
        if not self.release.kraft:
            controller = self.controller()
            first, last = sorted(set(c.brokers) - {controller})
            self.role = {1: first, 2: controller, 3: last}
        creates = []
        for topic, (_, min_isr) in TOPICS.items():
            assignment = self.assignment(topic)
            creates.append(["--create", "--topic", topic, *c.topic_target(), "--replica-assignment",
                            ",".join(":".join(map(str, r)) for r in assignment),
                            *(["--config", f"min.insync.replicas={min_isr}"] if min_isr else [])])
        for (code, out), args in zip(c.tool_runs(self.release.topic_command, *creates), creates):
            assert code == 0, f"TopicCommand {' '.join(args)} exited {code}: {out}"
        self._wait_for("healthy")  # every partition has its leader before anything is produced
        c.produce("moving", records=MOVING_RECORDS, record_size=RECORD_SIZE)

    def _act_reassigning(self) -> None:
        self.cluster.reassign(self.moves(), throttle=THROTTLE)

    def _act_reassigned(self) -> None:
        self.cluster.finish_reassignment()

    def _act_broker_3_down(self) -> None:
        self._stop_broker(self.role[3])

    def _act_brokers_2_and_3_down(self) -> None:
        self._stop_broker(self.role[2])

    def _stop_broker(self, node: int) -> None:
        if not self.release.kraft and node == self.controller():
            self.dead_controller = node
        self.sidecars.pop(node).stop()
        self.cluster.stop_broker(node)

    def controller(self) -> int:
        """The ZooKeeper cluster's active controller (the broker whose ActiveControllerCount is 1;
        read again while an election leaves none or two)."""
        deadline = time.monotonic() + 60
        while True:
            after = time.time()
            active = [n for n, s in self.sidecars.items()
                      if read_gauges(s.wait_for_poll_after(after)).controller.get("ActiveControllerCount") == 1]
            if len(active) == 1:
                return active[0]
            assert time.monotonic() < deadline, f"brokers with ActiveControllerCount 1 for 60 s: {active}"
            time.sleep(1.0)

    # -- the sidecars ------------------------------------------------------------------------

    def start_sidecars(self) -> None:
        """One sidecar per node, all started at once (while the cluster starts: each waits for
        its first good poll)."""
        nodes = [*self.cluster.brokers, *([CONTROLLER_ID] if self.release.kraft else [])]
        for node in nodes:
            if self.stopping:
                return
            path = self.directory / f"sidecar-{node}.yml"
            path.write_text(config_text(self.cluster.jmx_host_port(node), RULES, SIDECAR))
            self.sidecars[node] = Serve(path).start(ready=False)
        for node, s in list(self.sidecars.items()):
            processes.wait_until(f"the sidecar of node {node}: a first good poll",
                                 lambda: self.stopping or s.status("/-/ready") == 200, 240, s.process, s.log)

    def stop_sidecars(self) -> None:
        while self.sidecars:
            self.sidecars.popitem()[1].stop()

    # -- when --describe shows the state ------------------------------------------------------

    def _not_yet(self, state: str, lines: dict[Key, Line]) -> str | None:
        """What --describe still lacks of `state` (None once it shows it): the moved partitions'
        replicas as the state has them, every partition led by a live broker and in sync on
        exactly its live replicas (but for the throttled adding ones), and the partitions whose
        replicas are all down without a leader (or, read from ZooKeeper, led by the dead controller)."""
        live = set(self.live)
        lagging: dict[Key, set[int]] = {}
        if state == "reassigning":
            lagging = {key: set(target) - set(self.assignment(key[0])[key[1]]) for key, target in self.moves().items()}
        for key, target in self.moves().items():
            original = self.assignment(key[0])[key[1]]
            want = set(original) | set(target) if state == "reassigning" else \
                set(original) if state == "healthy" else set(target)
            if key in lines and set(lines[key].replicas) != want:
                return f"{key[0]}-{key[1]} has replicas {lines[key].replicas}, expected {sorted(want)}"
        for topic in TOPICS:
            for p in range(len(TOPICS[topic][0])):
                if (topic, p) not in lines:
                    return f"{topic}-{p} not listed"
        for (topic, p), line in sorted(lines.items()):
            alive = set(line.replicas) & live
            if not alive:
                # A ZooKeeper controller that dies as the last replica's leader leaves itself the
                # leader in ZooKeeper: its successor elects no one and rewrites nothing
                # (KafkaController.onControllerFailover). Only a describe that reads ZooKeeper
                # (0.11's --zookeeper) prints it; the Admin API answers "none".
                kept = self.release.topics_via_zookeeper and line.leader == self.dead_controller
                if line.leader is not None and not kept:
                    return f"{topic}-{p} is led by {line.leader} though all its replicas are down"
                continue
            if line.leader not in live:
                return f"{topic}-{p} is led by {line.leader}; live brokers {sorted(live)}"
            want = alive - lagging.get((topic, p), set())
            if set(line.isr) != want:
                return f"{topic}-{p} has ISR {line.isr}, expected {sorted(want)}"
        return None

    def _wait_for(self, state: str) -> None:
        deadline = time.monotonic() + REACH_TIMEOUT
        while True:
            text = self.cluster.describe()
            missing = self._not_yet(state, read_describe(text))
            if missing is None:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"Kafka {self.release.version} never showed state {state} within "
                            f"{REACH_TIMEOUT:.0f} s: {missing}. The last --describe:\n{text}")
            time.sleep(1.0)

    # -- reading and comparing ---------------------------------------------------------------

    def observe(self, state: str, attempt: int) -> Observation:
        """--describe and the release's filters (one JVM), then each sidecar's first poll after
        them: seconds apart, so a state still moving shows as a disagreement and is read again."""
        c = self.cluster
        runs = c.tool_runs(self.release.topic_command, ["--describe", *c.topic_target()],
                           *[["--describe", *c.topic_target(), opt] for opt in self.filters])
        for (code, out), what in zip(runs, ["", *self.filters]):
            assert code == 0, f"TopicCommand --describe {what} exited {code}: {out}"
        after = time.time()
        with ThreadPoolExecutor(max_workers=len(self.sidecars)) as pool:
            polls = {n: pool.submit(s.wait_for_poll_after, after) for n, s in self.sidecars.items()}
            gauges = {n: read_gauges(f.result()) for n, f in polls.items()}
        text = runs[0][1]
        path = self.directory / f"{state}-{attempt}.describe.txt"
        path.write_text(text)
        verdicts, errors = judge(path, self.profile, self.live)
        topic_command, tc_errors = judge(path, "topic-command", self.live)
        return Observation(state, text, path, read_describe(text), verdicts, topic_command, errors + tc_errors,
                           {opt: out for opt, (_, out) in zip(self.filters, runs[1:])}, gauges)

    def _agreeing(self, state: str) -> Observation:
        """Readings until --describe shows `state` (REACH_TIMEOUT), then until everything agrees
        (AGREE_TIMEOUT more); a reading where the state is gone again counts as a disagreement."""
        reach_by, agree_by = time.monotonic() + REACH_TIMEOUT, None
        attempt = 0
        while True:
            attempt += 1
            obs = self.observe(state, attempt)
            missing = self._not_yet(state, obs.lines)
            if agree_by is None and missing:
                if time.monotonic() > reach_by:
                    pytest.fail(f"Kafka {self.release.version} never showed state {state} within "
                                f"{REACH_TIMEOUT:.0f} s: {missing}. The last --describe:\n{obs.describe}")
                time.sleep(1.0)
                continue
            agree_by = agree_by or time.monotonic() + AGREE_TIMEOUT
            problems = ([f"--describe no longer shows state {state}: {missing}"] if missing else []) \
                + self.problems(obs)
            if not problems:
                return obs
            if time.monotonic() > agree_by:
                pytest.fail(f"Kafka {self.release.version}, state {state}, profile {self.profile}: "
                            f"after {attempt} readings, {AGREE_TIMEOUT:.0f} s after the state showed, still\n  "
                            + "\n  ".join(problems) + "\n\nThe last reading:\n" + obs.report())
            time.sleep(2.0)

    def problems(self, obs: Observation) -> list[str]:
        out: list[str] = []
        if obs.health_errors:
            out.append(f"health rejected the real --describe output: {obs.health_errors}")
        out += self._parsed_alike(obs)
        out += self._replica_manager(obs)
        out += self._partition_gauges(obs)
        out += self._offline(obs)
        out += self._topic_command(obs)
        return out

    def _parsed_alike(self, obs: Observation) -> list[str]:
        """health read every partition line as this test reads it (and the header's min ISR)."""
        out = []
        if set(obs.verdicts) != set(obs.lines):
            out.append(f"health judged {_fmt(obs.verdicts)}; --describe lists {_fmt(obs.lines)}")
        for key, line in obs.lines.items():
            v = obs.verdicts.get(key)
            if v is None:
                continue
            read = Line(v["leader"], tuple(v["replicas"]), tuple(v["isr"]), tuple(v["adding_replicas"]),
                        tuple(v["removing_replicas"]))
            if read != line:
                out.append(f"health read {key[0]}-{key[1]} as {read}, the line says {line}")
            if key[0] in self.min_isr and v["min_isr"] != self.min_isr[key[0]]:
                out.append(f"health read min ISR {v['min_isr']} for {key[0]}, its config is {self.min_isr[key[0]]}")
        return out

    def _led_by(self, obs: Observation, broker: int, flag: str | None = None) -> list[Key]:
        return [k for k, v in obs.verdicts.items() if v["leader"] == broker and (flag is None or v[flag])]

    def _replica_manager(self, obs: Observation) -> list[str]:
        out = []
        for b in self.live:
            rm = obs.gauges[b].broker
            led = self._led_by(obs, b)
            if rm.get("LeaderCount") != len(led):
                out.append(f"broker {b}: LeaderCount {rm.get('LeaderCount')}, --describe shows it leading {len(led)}")
            for gauge, (flag, since) in SUMMED.items():
                if not _has(self.version, since):
                    if gauge in rm:
                        out.append(f"broker {b}: {gauge} exists, but Kafka {self.release.version} predates it")
                    continue
                if gauge not in rm:
                    out.append(f"broker {b}: no {gauge} gauge (Kafka has it since {'.'.join(map(str, since))})")
                    continue
                keys = self._led_by(obs, b, flag)
                if rm[gauge] != len(keys):
                    out.append(f"broker {b}: {gauge} = {rm[gauge]:g}, health ({self.profile}) finds "
                               f"{len(keys)} of the partitions it leads {flag}: {_fmt(keys)}")
        return out

    def _partition_gauges(self, obs: Observation) -> list[str]:
        out = []
        profile = PROFILES[self.profile]
        for b in self.live:
            series = obs.gauges[b].partition
            for name, (flag, since) in PARTITION_FLAGS.items():
                if not _has(self.version, since) and any(n == name for n, _, _ in series):
                    out.append(f"broker {b}: Partition {name} gauges exist, but Kafka {self.release.version} predates them")
            for key, v in obs.verdicts.items():
                leads = v["leader"] == b
                expected = {name: int(leads and v[flag]) for name, (flag, since) in PARTITION_FLAGS.items()
                            if _has(self.version, since)}
                state = PartitionState(key[0], key[1], v["leader"], tuple(v["replicas"]), tuple(v["isr"]),
                                       tuple(v["adding_replicas"]), tuple(v["removing_replicas"]), v["min_isr"])
                expected["InSyncReplicasCount"] = len(v["isr"]) if leads else 0
                expected["ReplicasCount"] = profile.replicas_count(counts_of(state)) if leads else 0
                for name, want in expected.items():
                    got = series.get((name, *key))
                    if got is None and not leads:
                        continue  # a broker that hosts no replica of it has no Partition MBeans
                    if got != want:
                        out.append(f"broker {b}: Partition {name} of {key[0]}-{key[1]} = {got}, expected {want}"
                                   f" ({'leader' if leads else 'not the leader'}; health {self.profile})")
        return out

    def _offline(self, obs: Observation) -> list[str]:
        """The controller's OfflinePartitionsCount (KRaft: the controller node; ZooKeeper: only the
        active controller, one of the brokers, reports it) is what the profile calls unavailable."""
        unavailable = [k for k, v in obs.verdicts.items() if v["unavailable"]]
        if self.release.kraft:
            offline = obs.gauges[CONTROLLER_ID].controller.get("OfflinePartitionsCount")
        else:
            active = sum(obs.gauges[b].controller.get("ActiveControllerCount", 0) for b in self.live)
            if active != 1:
                return [f"{active:g} active controllers among brokers {self.live}"]
            offline = sum(obs.gauges[b].controller.get("OfflinePartitionsCount", 0) for b in self.live)
        if offline != len(unavailable):
            return [f"OfflinePartitionsCount {offline}, health ({self.profile}) finds "
                    f"{len(unavailable)} unavailable: {_fmt(unavailable)}"]
        return []

    def _topic_command(self, obs: Observation) -> list[str]:
        out = []
        for opt in self.filters:
            flag = FILTERS[opt][0]
            printed = read_describe(obs.filters[opt])
            judged = {k for k, v in obs.topic_command.items() if v[flag]}
            if set(printed) != judged:
                out.append(f"TopicCommand {opt} lists {_fmt(printed)}; health (topic-command) finds "
                           f"{flag}: {_fmt(judged)}")
            for key, line in printed.items():
                if obs.lines.get(key) != line:
                    out.append(f"TopicCommand {opt} printed {key[0]}-{key[1]} as {line}, --describe as "
                               f"{obs.lines.get(key)} (the state moved between the two runs)")
        return out


# --- the tests ---------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=RELEASES)
def scenario(request, tmp_path_factory):
    """A 3-broker cluster of its own per release (the scenario stops brokers), stopped by PID."""
    cluster = KafkaCluster(request.param, brokers=3, broker_config=BROKER_CONFIG)
    scenario = Scenario(cluster, tmp_path_factory.mktemp(f"health-vs-kafka-{request.param}"))
    pids: list[int] = []
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        sidecars = pool.submit(scenario.start_sidecars)  # their start overlaps the cluster's
        cluster.start()
        sidecars.result()
        pids = cluster.pids() + [s.process.pid for s in scenario.sidecars.values()]
        yield scenario
    finally:
        scenario.stopping = True
        pool.shutdown(wait=True)
        scenario.stop_sidecars()
        cluster.remove()
        alive = [p for p in pids if processes.pid_alive(p)]
        assert not alive, f"Kafka processes still running after stop: {alive}"


def test_the_release_is_modelled_by_the_profile_the_readme_names(scenario):
    assert scenario.profile == MODELLED_BY[scenario.release.name]


@pytest.mark.parametrize("state", STATES)
def test_health_agrees_with_the_brokers_and_topic_command(scenario, state):
    obs = scenario.reach(state)
    flagged = {f: {k for k, v in obs.verdicts.items() if v[f]} for f in
               ("under_replicated", "under_min_isr", "at_min_isr", "unavailable", "reassigning")}
    # The state shows what it is played for (else agreeing would prove little).
    if state == "healthy":
        assert not flagged["under_replicated"] and not flagged["unavailable"], obs.report()
    if state == "reassigning":
        moved = set(MOVES)
        if scenario.version >= (2, 5):  # describe lists adding replicas from 2.5 on (KIP-455's API)
            assert flagged["reassigning"] == moved, obs.report()
        else:
            assert moved <= flagged["under_replicated"], obs.report()
    if state in ("broker_3_down", "brokers_2_and_3_down"):
        assert flagged["at_min_isr"] and flagged["under_min_isr"] and flagged["unavailable"], obs.report()


def test_the_release_has_exactly_the_filters_compared(scenario):
    """The filters compared are the ones the release's TopicCommand has: its usage lists them,
    and it rejects the ones it lacks (TopicCommand options are fixed per release)."""
    usage = scenario.cluster.tool_process(scenario.release.topic_command, "--help")
    listed = set(re.findall(r"--(?:[a-z]+-)+partitions\b", usage.stdout + usage.stderr))
    assert listed == set(scenario.filters)
    for opt in sorted(set(FILTERS) - set(scenario.filters)):
        run = scenario.cluster.topic_command_process("--describe", opt)
        assert run.returncode != 0 and f"{opt[2:]} is not a recognized option" in run.stdout + run.stderr
