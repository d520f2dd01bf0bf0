"""Real Apache Kafka clusters on loopback for the tests and benchmarks.

    with KafkaCluster("4.4", brokers=3) as kafka:       # a release of RELEASES: 4.4 4.1 3.6 2.4 2.2 0.11
        kafka.create_topic("orders", partitions=3, replication_factor=3, min_isr=2)
        kafka.create_topics({"a": dict(assignment=[[1, 2]]), "b": dict(partitions=2)})  # one JVM
        kafka.produce("orders", records=1000)
        kafka.jmx_url(1)                       # remote JMX of broker 1
        kafka.stop_broker(3); kafka.start_broker(3)
        kafka.reassign({("orders", 0): [1, 2]}, throttle=10_000)   # starts it, throttled
        kafka.finish_reassignment()            # lifts the throttle, waits until complete
        kafka.describe()                       # `kafka-topics.sh --describe` output

    # KRaft only: node 1 is broker and controller in one process (no dedicated controller)
    KafkaCluster("4.4", combined=True)

    # KRaft only: a SASL_SSL listener beside PLAINTEXT, ACLs enforced (PLAINTEXT is a super user)
    KafkaCluster("4.4", brokers=3, secure_clients=SecureClients(users={"monitor": "pw"}))
    kafka.secure_bootstrap; kafka.secure_clients.ca_pem  # for SASL PLAIN or SCRAM clients over TLS

Every broker runs `kafka.Kafka` from the release's Maven classpath (harness/programs) with remote
JMX enabled on its own port: plain, or with `jmx="secure"` a password file, read-only access and
the RMI registry and connector over SSL. KRaft releases get one dedicated controller node (so any
broker can be stopped), or with `combined=True` one node that is both; ZooKeeper releases get a
ZooKeeper server from the zookeeper jar on the broker's own classpath, and broker 1 as their
controller (so any other broker can be stopped). The releases are in harness/kafka_release.py, the
tools (the release's own TopicCommand, ReassignPartitionsCommand, ProducerPerformance) in
harness/kafka_tools.py. Everything is stopped by PID, also when a test fails (processes.spawn).
"""
from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from harness import processes, programs, zookeeper
from harness.kafka_release import JVM_FLAGS, RELEASES, KafkaError, java
from harness.kafka_tools import KafkaTools

CONTROLLER_ID = 100  # KRaft: the dedicated controller's node id, apart from the brokers' 1..n
BROKER_HEAP = ("-Xms64m", "-Xmx384m")
_STARTED = re.compile(r"Kafka Server started|\] started \(kafka\.server\.KafkaServer\)|"
                      r"\], started \(kafka\.server\.KafkaServer\)")


def _cluster_id() -> str:
    """A new cluster id as `kafka-storage.sh random-uuid` makes one (16 random bytes, URL-safe
    base64 without padding, never starting with "-"), without a JVM for it."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class Node:
    """One JVM of the cluster: a broker, the KRaft controller or ZooKeeper."""

    node_id: int
    port: int                     # client listener (ZooKeeper: client port)
    jmx_port: int
    directory: Path
    controller_port: int = 0      # KRaft controller listener
    process: subprocess.Popen | None = None
    log_offset: int = 0

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class JmxAccess:
    """How the brokers' remote JMX is secured (`secure`: password file, read-only role, SSL)."""

    secure: bool = False
    user: str = "monitor"
    password: str = field(default_factory=lambda: uuid.uuid4().hex[:16])


@dataclass
class SecureClients:
    """A second client listener, SECURE (SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 over
    a self-signed certificate for 127.0.0.1), on every broker of a KRaft cluster, with the
    StandardAuthorizer on: principals on SECURE get what ACLs grant them, while PLAINTEXT (the
    tools, the brokers, the controller: User:ANONYMOUS) and `super_users` may do anything.
    `users` are PLAIN users (name -> password); SCRAM credentials are created through the Admin
    API once the cluster runs (the test's business), so no password is on a command line."""

    users: dict[str, str]
    super_users: tuple[str, ...] = ()

    @property
    def ca_pem(self) -> Path:
        """The listener certificate in PEM (the CA a client trusts: it is self-signed)."""
        import ssl
        from harness.jmx_target import keystores

        crt = Path(keystores().keystore).with_name("server.crt")
        pem = crt.with_suffix(".pem")
        if not pem.exists():
            pem.write_text(ssl.DER_cert_to_PEM_cert(crt.read_bytes()))
        return pem


class KafkaCluster(KafkaTools):
    def __init__(self, release: str, brokers: int = 1, jmx: str = "plain", workdir: Path | None = None,
                 broker_config: dict[str, str] | None = None, start_timeout: float = 120.0,
                 heap: tuple[str, ...] = BROKER_HEAP, secure_clients: SecureClients | None = None,
                 combined: bool = False):
        if release not in RELEASES:
            raise KafkaError(f"unknown Kafka release {release!r}; known: {', '.join(RELEASES)}")
        if not 1 <= brokers <= 4:  # 4: KIP-427's example 3 (RF 4) with a broker left to answer
            raise KafkaError("a test cluster has 1 to 4 brokers")
        if jmx not in ("plain", "secure"):
            raise KafkaError("jmx is 'plain' or 'secure'")
        self.release = RELEASES[release]
        self.classpath = programs.classpath(self.release.program)
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"kafka-{release}-"))
        self.jmx = JmxAccess(secure=jmx == "secure")
        self.broker_config = dict(broker_config or {})
        self.start_timeout = start_timeout
        self.heap = heap  # the brokers' JVM heap options (a few thousand partitions need more)
        if secure_clients is not None and not self.release.kraft:
            raise KafkaError("secure_clients: only KRaft releases (StandardAuthorizer) are set up for it")
        if combined and (not self.release.kraft or brokers != 1 or secure_clients is not None):
            raise KafkaError("combined: one KRaft node that is broker and controller, without secure_clients")
        self.secure_clients = secure_clients
        self.brokers: dict[int, Node] = {
            i: Node(i, processes.free_port(), processes.free_port(), self.workdir / f"broker-{i}",
                    controller_port=0) for i in range(1, brokers + 1)}
        self.secure_ports = {i: processes.free_port() for i in self.brokers} if secure_clients else {}
        self.controller: Node | None = None
        self.zookeeper: Node | None = None
        if combined:
            self.brokers[1].controller_port = processes.free_port()
        elif self.release.kraft:
            self.controller = Node(CONTROLLER_ID, 0, processes.free_port(), self.workdir / "controller",
                                   controller_port=processes.free_port())
        else:
            self.zookeeper = Node(0, processes.free_port(), 0, self.workdir / "zookeeper")
        self._reassignment: Path | None = None
        self._tool_servers: dict = {}  # main class -> its ToolServer (kafka_tools.py), started on first use

    # -- addresses ---------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers.values())

    @property
    def secure_bootstrap(self) -> str:
        assert self.secure_clients, "the cluster has no SECURE listener (secure_clients)"
        return ",".join(f"127.0.0.1:{self.secure_ports[i]}" for i in self.brokers)

    @property
    def zookeeper_connect(self) -> str:
        assert self.zookeeper, "a KRaft cluster has no ZooKeeper"
        return f"127.0.0.1:{self.zookeeper.port}"

    def jmx_host_port(self, node_id: int) -> str:
        node = self.controller if node_id == CONTROLLER_ID else self.brokers[node_id]
        return f"127.0.0.1:{node.jmx_port}"

    def jmx_url(self, node_id: int) -> str:
        return f"service:jmx:rmi:///jndi/rmi://{self.jmx_host_port(node_id)}/jmxrmi"

    # -- start and stop ----------------------------------------------------------------------

    def start(self) -> "KafkaCluster":
        """Every node's JVM at once (a KRaft broker waits for its controller by itself, a ZooKeeper
        one for ZooKeeper), then until each says it started and the metadata lists every broker."""
        try:
            for node in self._all_nodes():
                node.directory.mkdir(parents=True, exist_ok=True)
            if self.release.kraft:
                self._format_kraft()
                if self.controller:
                    self._start_node(self.controller, wait=False)
            else:
                self._start_zookeeper()
                self._start_zookeeper_controller()
            for node in self.brokers.values():
                if not node.running:
                    self._start_node(node, wait=False)
            for node in [self.controller, *self.brokers.values()]:
                if node is not None:
                    self._wait_started(node)
            self._wait_for_brokers(len(self.brokers))
        except BaseException:
            self.stop(hard=True)
            raise
        return self

    def stop(self, hard: bool = False) -> None:
        """Stops every process by PID: the brokers together first (SIGTERM: so their controlled
        shutdowns can finish; SIGKILL when `hard`), then the controller or ZooKeeper."""
        errors = []
        self.stop_tool_servers()
        for group in ([n for n in self.brokers.values()], [n for n in (self.controller, self.zookeeper) if n]):
            errors += processes.stop_all([n.process for n in group], grace=20, hard=hard)
            for node in group:
                node.process = None
        if errors:
            raise KafkaError("; ".join(errors))

    def remove(self) -> None:
        """Every process killed (SIGKILL: the cluster's data goes with it, so nothing is owed a
        clean shutdown) and the working directory deleted."""
        self.stop(hard=True)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "KafkaCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.remove()

    def pids(self) -> list[int]:
        return [n.process.pid for n in self._all_nodes() if n.process is not None] + self.tool_server_pids()

    def stop_broker(self, node_id: int, hard: bool = False) -> None:
        """SIGTERM (a controlled shutdown) or, with `hard`, SIGKILL; returns when the PID is gone."""
        node = self.brokers[node_id]
        processes.stop(node.process, grace=60, hard=hard)
        node.process = None

    def start_broker(self, node_id: int, wait: bool = True) -> None:
        node = self.brokers[node_id]
        if node.running:
            raise KafkaError(f"broker {node_id} is running")
        self._start_node(node, wait=wait)

    # -- internals ---------------------------------------------------------------------------

    def _all_nodes(self) -> list[Node]:
        return [n for n in (self.zookeeper, self.controller, *self.brokers.values()) if n is not None]

    def _logging_flags(self, log: Path) -> list[str]:
        if self.release.log4j2:
            conf = log.with_suffix(".log4j2.properties")
            conf.write_text("status = error\nappender.f.type = File\nappender.f.name = F\n"
                            f"appender.f.fileName = {log}\nappender.f.layout.type = PatternLayout\n"
                            "appender.f.layout.pattern = [%d] %p %m (%c)%n\n"
                            "rootLogger.level = INFO\nrootLogger.appenderRef.f.ref = F\n")
            return [f"-Dlog4j2.configurationFile={conf}"]
        conf = log.with_suffix(".log4j.properties")
        conf.write_text("log4j.rootLogger=INFO, F\nlog4j.appender.F=org.apache.log4j.FileAppender\n"
                        f"log4j.appender.F.File={log}\nlog4j.appender.F.layout=org.apache.log4j.PatternLayout\n"
                        "log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
        return [f"-Dlog4j.configuration=file:{conf}"]

    def _jmx_flags(self, node: Node) -> list[str]:
        p = node.jmx_port
        flags = [f"-Dcom.sun.management.jmxremote.port={p}", f"-Dcom.sun.management.jmxremote.rmi.port={p}",
                 "-Dcom.sun.management.jmxremote.host=127.0.0.1", "-Djava.rmi.server.hostname=127.0.0.1",
                 "-Dcom.sun.management.jmxremote.local.only=false"]
        if not self.jmx.secure:
            return flags + ["-Dcom.sun.management.jmxremote.authenticate=false",
                            "-Dcom.sun.management.jmxremote.ssl=false"]
        from harness.jmx_target import keystores

        pw, acc = node.directory / "jmxremote.password", node.directory / "jmxremote.access"
        pw.write_text(f"{self.jmx.user} {self.jmx.password}\n")
        acc.write_text(f"{self.jmx.user} readonly\n")
        os.chmod(pw, 0o600)
        os.chmod(acc, 0o600)
        ks = keystores()
        return flags + ["-Dcom.sun.management.jmxremote.authenticate=true",
                        f"-Dcom.sun.management.jmxremote.password.file={pw}",
                        f"-Dcom.sun.management.jmxremote.access.file={acc}",
                        "-Dcom.sun.management.jmxremote.ssl=true",
                        "-Dcom.sun.management.jmxremote.registry.ssl=true",
                        f"-Djavax.net.ssl.keyStore={ks.keystore}",
                        f"-Djavax.net.ssl.keyStorePassword={ks.password}",
                        "-Djavax.net.ssl.keyStoreType=PKCS12"]

    def _properties(self, node: Node) -> Path:
        n = len(self.brokers)
        props = {
            "log.dirs": str(node.directory / "data"),
            "offsets.topic.replication.factor": str(n),
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": str(n),
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
        }
        if self.release.kraft:
            quorum = self.controller or self.brokers[1]  # combined: node 1 is the controller
            voters = f"{quorum.node_id}@127.0.0.1:{quorum.controller_port}"
            props.update({"node.id": str(node.node_id), "controller.quorum.voters": voters,
                          "controller.listener.names": "CONTROLLER",
                          "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"})
            if node is self.controller:
                props.update({"process.roles": "controller",
                              "listeners": f"CONTROLLER://127.0.0.1:{node.controller_port}"})
            elif node.controller_port:
                props.update({"process.roles": "broker,controller", "inter.broker.listener.name": "PLAINTEXT",
                              "listeners": f"PLAINTEXT://127.0.0.1:{node.port},"
                                           f"CONTROLLER://127.0.0.1:{node.controller_port}"})
            else:
                props.update({"process.roles": "broker", "listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
                              "inter.broker.listener.name": "PLAINTEXT"})
        else:
            props.update({"broker.id": str(node.node_id), "listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
                          "zookeeper.connect": self.zookeeper_connect,
                          "zookeeper.connection.timeout.ms": "30000"})
        if self.secure_clients:
            props.update(self._secure_properties(node))
        if node is not self.controller:
            props.update(self.broker_config)
        path = node.directory / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def _secure_properties(self, node: Node) -> dict[str, str]:
        secure = self.secure_clients
        supers = ";".join(["User:ANONYMOUS", *(f"User:{u}" for u in secure.super_users)])
        props = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": supers}
        if node is self.controller:
            return props
        from harness.jmx_target import keystores

        ks = keystores()
        plain_users = " ".join(f'user_{u}="{pw}"' for u, pw in secure.users.items())
        props.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},SECURE://127.0.0.1:{self.secure_ports[node.node_id]}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SECURE:SASL_SSL",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.secure.plain.sasl.jaas.config":
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
            "listener.name.secure.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "listener.name.secure.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "listener.name.secure.ssl.keystore.location": str(ks.keystore),
            "listener.name.secure.ssl.keystore.password": ks.password,
            "listener.name.secure.ssl.keystore.type": "PKCS12",
            "listener.name.secure.ssl.key.password": ks.password,
        })
        return props

    def _format_kraft(self) -> None:
        """`kafka-storage.sh format` of every node under one new cluster id, all in one JVM."""
        cluster_id = _cluster_id()
        nodes = [n for n in (self.controller, *self.brokers.values()) if n is not None]
        runs = self.tool_runs("kafka.tools.StorageTool",
                              *[["format", "-t", cluster_id, "-c", str(self._properties(n))] for n in nodes])
        for node, (code, out) in zip(nodes, runs):
            if code != 0:
                raise KafkaError(f"StorageTool format of node {node.node_id} exited {code}: {out.strip()[-2000:]}")

    def _start_zookeeper(self) -> None:
        zk = self.zookeeper
        zk.process = processes.spawn(
            [java(), "-Xmx128m", *JVM_FLAGS, *self._logging_flags(zk.log), "-Dzookeeper.admin.enableServer=false",
             zookeeper.FOUR_LETTER_WORDS,
             "-cp", f"{self.classpath}/*", "org.apache.zookeeper.server.ZooKeeperServerMain",
             str(zk.port), str(zk.directory / "data")], zk.directory / "stdout.log")
        processes.wait_until("ZooKeeper", lambda: processes.port_open(zk.port), self.start_timeout,
                             zk.process, zk.log)

    def _start_zookeeper_controller(self) -> None:
        """Broker 1 alone until it is the active controller, so that stopping any other broker
        stops one that is not, as with KRaft's own controller. A ZooKeeper controller's successor
        leaves the dead broker's replicas in ISRs, and a leader keeps a follower that stopped at
        its log end in the ISR of an idle partition: with 2.2, a broker 3 that was the controller
        re-entered an ISR with its last fetch during its controlled shutdown and stayed there."""
        first = self.brokers[min(self.brokers)]
        self._start_node(first, wait=False)
        # named as every node's start is: a broker that cannot start fails here, as it would there
        processes.wait_until(f"Kafka {self.release.version} node {first.node_id}",
                             lambda: self.zookeeper_controller() == first.node_id, self.start_timeout,
                             first.process, first.log, interval=0.1)

    def zookeeper_controller(self) -> int | None:
        """The active controller's broker id, as ZooKeeper knows it (ZooKeeper releases only)."""
        return zookeeper.controller(self.zookeeper.port)

    def _start_node(self, node: Node, wait: bool = True) -> None:
        props = node.directory / "server.properties"
        if not props.exists() or not self.release.kraft:
            props = self._properties(node)
        node.log_offset = node.log.stat().st_size if node.log.exists() else 0
        node.process = processes.spawn(
            [java(), *self.heap, *JVM_FLAGS, *self._logging_flags(node.log), *self._jmx_flags(node),
             "-cp", f"{self.classpath}/*", "kafka.Kafka", str(props)], node.directory / "stdout.log")
        if wait:
            self._wait_started(node)

    def _wait_started(self, node: Node) -> None:
        what = f"Kafka {self.release.version} node {node.node_id}"
        processes.wait_until(what, lambda: processes.log_has(node.log, _STARTED, node.log_offset),
                             self.start_timeout, node.process, node.log)
        processes.wait_until(f"{what}: JMX port", lambda: processes.port_open(node.jmx_port),
                             30, node.process, node.log)

    def _wait_for_brokers(self, count: int) -> None:
        """Until the cluster's metadata lists `count` brokers (ZooKeeper registration or KRaft
        registration and unfencing take a moment after each broker says it started). No probe topic:
        ZooKeeper's controller deletes one after the command returns, on 0.11 never (delete.topic.enable
        is off) and on 2.2 it stayed listed for minutes, and a probe left on any release is one more
        partition in the totals a scenario compares."""
        processes.wait_until(f"{count} registered brokers", lambda: len(self._brokers_in_metadata()) >= count,
                             self.start_timeout, interval=1.0)

    def _brokers_in_metadata(self) -> set[int]:
        """The broker ids a metadata request to the bootstrap servers lists (registered brokers, and on
        KRaft unfenced ones): BrokerApiVersionsCommand, in every release since 0.10.2, prints one
        entry per broker it learnt of."""
        (code, out), = self.tool_runs(self.release.api_versions_command, ["--bootstrap-server", self.bootstrap])
        return {int(i) for i in re.findall(r"\(id: (\d+) rack", out)} if code == 0 else set()
