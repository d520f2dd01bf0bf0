"""The Kafka releases the tests and benchmarks run, and how each is started and driven: its
program in harness/programs, KRaft or ZooKeeper, and the classes and arguments its tools take."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness import programs


@dataclass(frozen=True)
class Release:
    """How one Kafka release is started and driven."""

    name: str                  # "4.1"
    program: str               # harness/programs name
    kraft: bool
    log4j2: bool               # log4j2 (4.x) or log4j 1 / reload4j
    topic_command: str
    reassign_command: str
    topics_via_zookeeper: bool     # TopicCommand needs --zookeeper (before 2.2)
    reassign_via_zookeeper: bool   # ReassignPartitionsCommand needs --zookeeper (before 2.5)
    producer_performance: str = "org.apache.kafka.tools.ProducerPerformance"

    @property
    def version(self) -> str:
        return programs.PROGRAMS[self.program].version

    @property
    def api_versions_command(self) -> str:
        """kafka-broker-api-versions.sh's class: moved to the tools jar with the other tools in 4.0."""
        return ("org.apache.kafka.tools.BrokerApiVersionsCommand" if self.topic_command.startswith("org.apache.kafka.tools")
                else "kafka.admin.BrokerApiVersionsCommand")

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.version.split("."))


RELEASES: dict[str, Release] = {r.name: r for r in (
    Release("4.4", "kafka-4.4", kraft=True, log4j2=True,
            topic_command="org.apache.kafka.tools.TopicCommand",
            reassign_command="org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            topics_via_zookeeper=False, reassign_via_zookeeper=False),
    Release("4.1", "kafka-4.1", kraft=True, log4j2=True,
            topic_command="org.apache.kafka.tools.TopicCommand",
            reassign_command="org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            topics_via_zookeeper=False, reassign_via_zookeeper=False),
    Release("3.6", "kafka-3.6", kraft=True, log4j2=False,
            topic_command="kafka.admin.TopicCommand",
            reassign_command="kafka.admin.ReassignPartitionsCommand",
            topics_via_zookeeper=False, reassign_via_zookeeper=False),
    Release("2.4", "kafka-2.4", kraft=False, log4j2=False,
            topic_command="kafka.admin.TopicCommand", reassign_command="kafka.admin.ReassignPartitionsCommand",
            topics_via_zookeeper=False, reassign_via_zookeeper=True),
    Release("2.2", "kafka-2.2", kraft=False, log4j2=False,
            topic_command="kafka.admin.TopicCommand", reassign_command="kafka.admin.ReassignPartitionsCommand",
            topics_via_zookeeper=False, reassign_via_zookeeper=True),
    Release("0.11", "kafka-0.11", kraft=False, log4j2=False,
            topic_command="kafka.admin.TopicCommand", reassign_command="kafka.admin.ReassignPartitionsCommand",
            topics_via_zookeeper=True, reassign_via_zookeeper=True),
)}

# Every JVM here: the client compiler only (C2's compile threads cost a few CPU seconds per JVM
# start, more than a test's brokers and tools ever win back on a machine of two cores), the serial
# collector, and no perf-data file under /tmp (jps/jcmd are not used).
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData")


class KafkaError(RuntimeError):
    pass


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").exists():
        return str(Path(home, "bin", "java"))
    found = shutil.which("java")
    if not found:
        raise KafkaError("java is not on PATH; install a JDK 17 (apt-get install openjdk-17-jdk-headless)")
    return found
