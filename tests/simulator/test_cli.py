"""The `simulate` command (python -m mbeans.simulator = kafka-jmx-sidecar simulate): the READY
contract, serving several brokers, stopping by PID, and bad input reported in one line."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

READY = re.compile(r"^READY service:jmx:rmi:///jndi/rmi://127\.0\.0\.1:(\d+)/jmxrmi$")
ENV = dict(os.environ)


def simulate(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafka_jmx_sidecar.mbeans.simulator", *args]


def start(*args: str) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen(simulate(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("CONTROL "):
            break
    return proc, lines


def stop(proc: subprocess.Popen) -> int:
    os.kill(proc.pid, signal.SIGTERM)
    return proc.wait(timeout=30)


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_ready_line_then_one_line_per_served_node(tmp_path, connect, process_alive):
    cluster = tmp_path / "cluster.yml"
    cluster.write_text("brokers: [1, 2]\ncontrollers: [1]\ntopics:\n  - name: orders\n"
                       "    config: {min.insync.replicas: 2}\n    partitions:\n"
                       "      - {replicas: [1, 2], isr: [1], leader: 1}\n")
    proc, lines = start("--cluster", str(cluster), "--kafka-version", "3.6", "--jmx-port", "0", "--serve", "all",
                        "--broker", "2")
    try:
        m = READY.match(lines[0])
        assert m, lines
        nodes = {int(l.split()[1]): l.split()[2] for l in lines if l.startswith("NODE ")}
        assert set(nodes) == {1, 2} and nodes[2] == lines[0].split()[1]  # READY names the posed broker
        assert connect(nodes[1]).value("kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount") == 1
        assert connect(nodes[2]).names("kafka.controller:*") == []  # KRaft broker-only node
        port = int(m.group(1))
    finally:
        assert stop(proc) == 0
    assert not process_alive(proc.pid)
    assert not port_open(port)  # the JVM went with it


def test_a_scenario_runs_from_the_command_line(connect):
    proc, lines = start("--scenario", "reassignment", "--clock", "manual", "--jmx-port", "0")
    try:
        url = READY.match(lines[0]) and lines[0].split()[1]
        jmx = connect(url)
        deadline = time.monotonic() + 30
        while jmx.value("kafka.server:type=ReplicaManager,name=ReassigningPartitions") != 3:
            assert time.monotonic() < deadline, "the scenario's reassignments never started"
            time.sleep(0.2)
    finally:
        stop(proc)


@pytest.mark.parametrize("args, message", [
    (["--cluster", "/nonexistent.yml"], "/nonexistent.yml: cannot read the cluster file"),
    (["--kafka-version", "four"], "--kafka-version: not a Kafka version: 'four'"),
    (["--kafka-version", "0.8.1"], "serves Kafka 0.8.2 and later"),
    (["--broker", "7"], "--broker 7 is not a node of the cluster"),
    (["--partitions", "10", "--cluster", "x.yml"], "either --cluster or --partitions"),
    (["--scenario", "no-such-thing"], "no such scenario file and no built-in scenario"),
    (["--kafka-version", "4.1", "--cluster", "{bad}"], "cannot read the cluster file"),
])
def test_bad_input_is_one_line_without_a_stack_trace(args, message):
    r = subprocess.run(simulate(*args, "--jmx-port", "0"), capture_output=True, text=True, env=ENV, timeout=60)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and r.stderr.startswith("error: "), r.stderr
    assert message in r.stderr
    assert "Traceback" not in r.stderr and "\tat " not in r.stderr


@pytest.mark.parametrize("text, message", [
    ("brokers: [1]\ntopics:\n  - name: t\n    partitions:\n      - {replicas: [1], isr: [2]}\n",
     "topic t: partitions[0].isr: 2 is not one of the replicas [1]"),
    ("brokers: [1, 2]\ntopics:\n  - name: t\n    partitions:\n      - {replicas: [1, 2], isr: [2], leader: 1}\n",
     "partitions[0].leader: 1 is not in the ISR [2]"),
    ("brokers: [1]\ntopics: [{name: 'bad name', partitions: 1}]\n", "is not a Kafka topic name"),
    ("brokers: [1]\ntopic: []\n", "unknown key(s) topic"),
    ("brokers: [1]\ntopics:\n  - name: t\n    partitions:\n      - {replicas: [1, 1]}\n", "lists a broker twice"),
    ("brokers: [1\n", "not valid YAML"),
    ("brokers: [1, 2]\ncontrollers: [9]\nmetadata: zookeeper\ntopics: []\n", "has no ZooKeeper mode (removed in 4.0)"),
    ("brokers: [1, 2]\ncontrollers: [9]\ntopics: []\n# 2.5\n", "under ZooKeeper the controller is one"),
])
def test_cluster_file_errors_name_the_file_and_the_key(tmp_path, text, message):
    f = tmp_path / "cluster.yml"
    f.write_text(text)
    version = ["--kafka-version", "2.5"] if "# 2.5" in text else []
    r = subprocess.run(simulate("--cluster", str(f), "--jmx-port", "0", *version), capture_output=True, text=True,
                       env=ENV, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"error: {f}") and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_busy_port_is_reported_without_a_java_stack_trace():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = subprocess.run(simulate("--jmx-port", str(port)), capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port} for JMX" in r.stderr and "choose another --jmx-port" in r.stderr
    assert "\tat " not in r.stderr and "Exception in thread" not in r.stderr
