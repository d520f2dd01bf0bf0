"""The real-program harness itself: resolution errors, a broker that does not start, a cluster's
life cycle (every PID gone after stop), and every release this machine runs actually serving JMX."""
from __future__ import annotations

import re
import shutil

import pytest

from harness import processes, programs
from harness.kafka import KafkaCluster
from harness.kafka_release import RELEASES


def test_a_failed_resolution_names_program_version_and_maven_error(tmp_path, monkeypatch):
    poms = tmp_path / "programs"
    shutil.copytree(programs.POMS / "kafka-0.11", poms / "kafka-0.11")
    pom = poms / "kafka-0.11" / "pom.xml"
    pom.write_text(pom.read_text().replace("<version>0.11.0.3</version>", "<version>0.11.0.99</version>"))
    monkeypatch.setattr(programs, "POMS", poms)
    monkeypatch.setitem(programs.PROGRAMS, "kafka-0.11", programs.Program("kafka-0.11", "Apache Kafka", "0.11.0.99"))
    monkeypatch.setenv("KAFKA_JMX_SIDECAR_CACHE", str(tmp_path / "cache"))
    with pytest.raises(programs.ProgramUnavailable) as failure:
        programs.classpath("kafka-0.11")
    message = str(failure.value)
    assert "\n" not in message
    assert message.startswith("Apache Kafka 0.11.0.99 (kafka-0.11): Maven could not resolve it: ")
    assert "kafka_2.12:jar:0.11.0.99" in message
    assert not list((tmp_path / "cache" / "programs").iterdir()), "a failed resolution left files behind"


def test_fetch_prints_one_error_line_and_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KAFKA_JMX_SIDECAR_CACHE", str(tmp_path / "cache"))
    assert programs.main(["fetch", "kafka-9.9"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: unknown program 'kafka-9.9'")


def test_a_broker_that_does_not_start_fails_with_the_end_of_its_log(own_kafka):
    with pytest.raises(RuntimeError) as failure:
        own_kafka("2.4", broker_config={"num.network.threads": "zero"}, start_timeout=60)
    message = str(failure.value)
    assert "Kafka 2.4.1 node 1: the process exited" in message
    assert "num.network.threads" in message  # the broker's own complaint, from the log's tail


VERSION_RULES = r"""rules:
- pattern: 'kafka.server<type=app-info, id=(\d+)><>[Vv]ersion: (.+)'
  name: kafka_broker_version_info
  value: 1
  labels: {id: "$1", version: "$2"}
- pattern: 'kafka.server<type=ReplicaManager, name=(UnderReplicatedPartitions|PartitionCount)><>Value'
  name: kafka_replicamanager_$1
"""


@pytest.mark.parametrize("release", list(RELEASES))
def test_every_release_starts_and_serves_its_version_over_jmx(release, real_kafka):
    """One broker of each release, shared (4.4's is the one the tests before this module used;
    real_kafka checks every PID is gone when it stops a cluster)."""
    from harness.sidecar import scrape_text

    cluster = real_kafka(release)
    text = scrape_text(cluster.jmx_host_port(1), VERSION_RULES)
    assert f'kafka_broker_version_info{{id="1",version="{cluster.release.version}",}} 1.0' in text.splitlines()
    assert "kafka_replicamanager_UnderReplicatedPartitions 0.0" in text.splitlines()


@pytest.mark.parametrize("release", list(RELEASES))
def test_a_served_describe_prints_and_exits_as_a_lone_run(release, real_kafka):
    """--describe and a reassignment's --verify run in the cluster's tool servers (one JVM per
    tool, a run per request): their stdout and exit code are a lone run's, for a topic that exists
    and for one that does not, and the servers are among the cluster's PIDs (checked gone when the
    cluster is removed)."""
    cluster = real_kafka(release)
    cluster.create_topic("served", partitions=2)
    cluster.reassign({("served", 1): [1]})
    cluster.finish_reassignment()
    # create_topic's --describe and finish_reassignment's --verify were served: their servers run
    for tool in (cluster.release.topic_command, cluster.release.reassign_command):
        assert cluster._tool_server(tool).pid() in cluster.pids()
    verify = ["--verify", "--reassignment-json-file", str(cluster._reassignment), *cluster._reassign_target()]
    runs = [(cluster.release.topic_command, args + cluster.topic_target()) for args in
            (["--describe", "--topic", "served"], ["--describe", "--topic", "no-such-topic"], ["--describe"])]
    printed = []
    for tool, args in [*runs, (cluster.release.reassign_command, verify)]:
        lone = cluster.tool_process(tool, *args)
        served = cluster._tool_server(tool).run(args, 120.0)
        assert (served.returncode, served.stdout) == (lone.returncode, lone.stdout), args
        printed.append(lone.stdout)
    assert "served" in printed[0] and "served" in printed[-1]  # (a missing topic: no line before 3.x)


def test_a_stopped_broker_is_gone_and_comes_back(real_kafka):
    cluster = real_kafka("4.4", brokers=3)
    cluster.create_topic("lifecycle", partitions=1, assignment=[[3, 1]])
    pid = cluster.brokers[3].process.pid
    cluster.stop_broker(3)
    assert not processes.pid_alive(pid)
    cluster.wait_for(lambda: re.search(r"Isr: 1\s", cluster.describe("lifecycle")), "ISR without broker 3")
    cluster.start_broker(3)
    cluster.wait_for(lambda: re.search(r"Isr: (3,1|1,3)\s", cluster.describe("lifecycle")), "broker 3 back in the ISR")
