"""The release's own command-line tools against a running cluster, run on its classpath as its shell
scripts run them: TopicCommand, ReassignPartitionsCommand, ProducerPerformance, and several runs of
one tool in one JVM (ToolRuns.java), and --describe and --verify served by one JVM per cluster and
tool that runs the tool on each request (ToolServer). KafkaCluster has these as methods, and holds
its tool servers in `_tool_servers`."""
from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

from harness import processes, programs
from harness.kafka_release import JVM_FLAGS, KafkaError, java

TOOL_RUNS = Path(__file__).with_name("ToolRuns.java")


def _tool_runs_classes() -> Path:
    """ToolRuns.java compiled once into the programs cache (keyed by its source)."""
    return processes.compiled(TOOL_RUNS, programs.cache_root(), javac=str(Path(java()).resolve().parent / "javac"))


class ToolServer:
    """One JVM running one command-line class on each request (`ToolRuns --serve`), started on the
    first; what a lone run would print to stdout and its exit code come back as a finished process.
    Its stderr goes to a file, of which each request returns what was written while it ran."""

    def __init__(self, command: list[str], stderr: Path):
        self.command, self.stderr = command, stderr
        self.process: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()
        self.lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        with self.stderr.open("ab") as err:
            self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                            text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=_pump, args=(self.process.stdout, self.lines), daemon=True,
                         name="kafka-tool-server").start()
        return self.process

    def run(self, args: list[str], timeout: float) -> subprocess.CompletedProcess:
        if any("\t" in a or "\n" in a for a in args):
            raise KafkaError(f"a served tool run takes no tab or newline in its arguments: {args}")
        with self.lock:
            proc = self.process if self.process and self.process.poll() is None else self._start()
            seen = self.stderr.stat().st_size
            proc.stdin.write("\t".join(args) + "\n")
            proc.stdin.flush()
            out, deadline = [], time.monotonic() + timeout
            while True:
                try:
                    line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    self.stop()
                    raise subprocess.TimeoutExpired(self.command + args, timeout) from None
                if line is None:
                    self.process = None
                    raise KafkaError(f"the tool server ({self.command[-1]}) ended: {self._err(seen)[-2000:]}")
                if line.startswith("@@exit "):
                    return subprocess.CompletedProcess(args, int(line.split()[1]), "".join(out), self._err(seen))
                out.append(line)

    def _err(self, since: int) -> str:
        with self.stderr.open("rb") as f:
            f.seek(since)
            return f.read().decode(errors="replace")

    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def stop(self) -> None:
        if self.process:
            processes.stop(self.process, grace=5, hard=True)
            self.process = None


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


class KafkaTools:
    """The tools of `self.release` against this cluster (`self.bootstrap`, `self.zookeeper_connect`)."""

    def tool(self, main_class: str, *args: str, timeout: float = 120.0, check: bool = True,
             served: bool = False) -> str:
        """Runs one of the release's command-line classes (`served`: by its ToolServer); returns its stdout."""
        proc = self._tool_server(main_class).run(list(args), timeout) if served \
            else self.tool_process(main_class, *args, timeout=timeout)
        if check and proc.returncode != 0:
            raise KafkaError(f"{main_class.rsplit('.', 1)[-1]} {' '.join(args)} failed "
                             f"({proc.returncode}): {(proc.stderr or proc.stdout).strip()[-2000:]}")
        return proc.stdout

    def tool_process(self, main_class: str, *args: str, timeout: float = 120.0,
                     extra_classpath: Path | None = None) -> subprocess.CompletedProcess:
        """Runs one of the release's command-line classes (or a class of `extra_classpath`);
        returns the finished process (exit code, stdout, stderr) whatever it exits with."""
        return subprocess.run(self._tool_command(main_class, *args, extra_classpath=extra_classpath),
                              capture_output=True, text=True, timeout=timeout)

    def _tool_command(self, main_class: str, *args: str, extra_classpath: Path | None = None) -> list[str]:
        cp = f"{extra_classpath}:{self.classpath}/*" if extra_classpath else f"{self.classpath}/*"
        return [java(), "-Xmx256m", *JVM_FLAGS, *self._logging_flags(self.workdir / "tools.log"), "-cp", cp,
                main_class, *args]

    def _tool_server(self, main_class: str) -> ToolServer:
        if main_class not in self._tool_servers:
            cmd = self._tool_command("ToolRuns", "--serve", main_class, extra_classpath=_tool_runs_classes())
            err = self.workdir / f"tool-server-{main_class.rsplit('.', 1)[-1]}.err"
            self._tool_servers[main_class] = ToolServer(cmd, err)
        return self._tool_servers[main_class]

    def tool_server_pids(self) -> list[int]:
        return [pid for s in self._tool_servers.values() if (pid := s.pid()) is not None]

    def stop_tool_servers(self) -> None:
        for server in self._tool_servers.values():
            server.stop()

    def tool_runs(self, main_class: str, *runs: list[str], timeout: float = 180.0) -> list[tuple[int, str]]:
        """Runs one of the release's command-line classes once per argument list, all in one JVM
        (ToolRuns.java: one JVM start instead of several); returns each run's exit code and stdout."""
        flat: list[str] = []
        for i, args in enumerate(runs):
            flat += (["--"] if i else []) + list(args)
        proc = self.tool_process("ToolRuns", main_class, *flat, timeout=timeout,
                                 extra_classpath=_tool_runs_classes())
        parts = re.split(r"^@@run \d+\n", proc.stdout, flags=re.M)[1:]
        if proc.returncode != 0 or len(parts) != len(runs):
            raise KafkaError(f"ToolRuns {main_class.rsplit('.', 1)[-1]} failed ({proc.returncode}): "
                             f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
        results = []
        for part in parts:
            text, _, code = part.rpartition("@@exit ")
            results.append((int(code.split()[0]), text))
        return results

    def topic_command_process(self, *args: str) -> subprocess.CompletedProcess:
        """The release's TopicCommand with `args` and this cluster's --bootstrap-server or
        --zookeeper, whatever it exits with."""
        return self.tool_process(self.release.topic_command, *args, *self._topic_target())

    def topic_target(self) -> list[str]:
        """TopicCommand's connection arguments for this cluster (--bootstrap-server or --zookeeper)."""
        return self._topic_target()

    def _topic_target(self) -> list[str]:
        if self.release.topics_via_zookeeper:
            return ["--zookeeper", self.zookeeper_connect]
        return ["--bootstrap-server", self.bootstrap]

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1,
                     min_isr: int | None = None, assignment: list[list[int]] | None = None,
                     config: dict[str, str] | None = None) -> None:
        """`assignment`: the replicas of each partition, leader first (instead of a count and RF)."""
        self.create_topics({name: dict(partitions=partitions, replication_factor=replication_factor,
                                       min_isr=min_isr, assignment=assignment, config=config)})

    def create_topics(self, topics: dict[str, dict]) -> str:
        """Topic name -> create_topic's keyword arguments: every topic created in one JVM
        (TopicCommand once per topic), then until --describe shows a leader for each partition;
        returns that --describe output (of every topic, when more than one was created)."""
        creates, counts = [], {}
        for name, spec in topics.items():
            assignment = spec.get("assignment")
            args = ["--create", "--topic", name, *self._topic_target()]
            if assignment:
                args += ["--replica-assignment", ",".join(":".join(map(str, r)) for r in assignment)]
            else:
                args += ["--partitions", str(spec.get("partitions", 1)),
                         "--replication-factor", str(spec.get("replication_factor", 1))]
            settings = dict(spec.get("config") or {})
            if spec.get("min_isr") is not None:
                settings["min.insync.replicas"] = str(spec["min_isr"])
            for k, v in settings.items():
                args += ["--config", f"{k}={v}"]
            creates.append(args)
            counts[name] = len(assignment) if assignment else spec.get("partitions", 1)
        for (code, out), args in zip(self.tool_runs(self.release.topic_command, *creates), creates):
            if code != 0:
                raise KafkaError(f"TopicCommand {' '.join(args)} failed ({code}): {out.strip()[-2000:]}")
        shown: list[str] = []
        self.wait_for(lambda: self._leaders_known(counts, shown), f"topics {', '.join(topics)} with leaders", 60)
        return shown[-1]

    def _leaders_known(self, counts: dict[str, int], shown: list[str]) -> bool:
        """Whether --describe (appended to `shown`) shows `counts[topic]` partitions with a
        leader, for every topic."""
        try:
            text = self.describe(next(iter(counts)) if len(counts) == 1 else None)
        except KafkaError:  # a topic just created may not be in the metadata the tool asks yet
            return False
        shown.append(text)
        led: dict[str, int] = {}
        for line in text.splitlines():
            m = re.search(r"Topic:\s*(\S+)\s+Partition:\s*\d", line)
            if m and m.group(1) in counts and not re.search(r"Leader:\s*(-1|none)", line):
                led[m.group(1)] = led.get(m.group(1), 0) + 1
        return led == counts

    def describe(self, topic: str | None = None, *filters: str) -> str:
        """`kafka-topics.sh --describe` output (`filters`: e.g. "--under-replicated-partitions")."""
        args = ["--describe", *self._topic_target(), *filters]
        if topic:
            args += ["--topic", topic]
        return self.tool(self.release.topic_command, *args, served=True)

    def produce(self, topic: str, records: int = 1000, record_size: int = 100, acks: str = "1") -> None:
        self.tool(self.release.producer_performance, "--topic", topic, "--num-records", str(records),
                  "--record-size", str(record_size), "--throughput", "-1", "--producer-props",
                  f"bootstrap.servers={self.bootstrap}", f"acks={acks}", "linger.ms=5", timeout=300)

    def _reassign_target(self) -> list[str]:
        if self.release.reassign_via_zookeeper:
            return ["--zookeeper", self.zookeeper_connect]
        return ["--bootstrap-server", self.bootstrap]

    def reassign(self, moves: dict[tuple[str, int], list[int]], throttle: int | None = None) -> None:
        """Starts moving each (topic, partition) to its new replica list, throttled to `throttle`
        bytes/s when given (the tool's --throttle, which also marks the throttled replicas)."""
        plan = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                             for (t, p), r in sorted(moves.items())]}
        self._reassignment = self.workdir / f"reassign-{int(time.time() * 1000)}.json"
        self._reassignment.write_text(json.dumps(plan))
        args = ["--execute", "--reassignment-json-file", str(self._reassignment), *self._reassign_target()]
        if throttle is not None:
            args += ["--throttle", str(throttle)]
        self.tool(self.release.reassign_command, *args)

    def finish_reassignment(self, timeout: float = 180.0) -> None:
        """Lifts the throttle and waits until `--verify` says every move is complete (which also
        removes the throttle configs, as the tool does)."""
        assert self._reassignment, "no reassignment started"
        args = ["--execute", "--reassignment-json-file", str(self._reassignment), *self._reassign_target(),
                "--throttle", str(1 << 30)]
        if self.release.version_tuple >= (2, 5):
            args.append("--additional")
        self.tool(self.release.reassign_command, *args, check=False)
        self.wait_for(self._reassignment_complete, "the reassignment to complete", timeout, interval=1.0)

    def _reassignment_complete(self) -> bool:
        out = self.tool(self.release.reassign_command, "--verify", "--reassignment-json-file",
                        str(self._reassignment), *self._reassign_target(), check=False, served=True)
        lines = [l for l in out.splitlines() if "eassignment of partition" in l]
        return bool(lines) and all(re.search(r"complete|completed successfully", l) for l in lines) \
            and not any("progress" in l for l in lines)

    def wait_for(self, ready, what: str, timeout: float = 60.0, interval: float = 0.5) -> None:
        processes.wait_until(what, ready, timeout, interval=interval)
