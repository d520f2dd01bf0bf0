"""Starting and stopping the simulator JVM.

    sim = Simulator.start(cluster.reference_4_1(), kafka_version="4.1")
    sim.url            # service:jmx:rmi:///jndi/rmi://127.0.0.1:PORT/jmxrmi of the posed broker
    sim.fail_broker(1) # ... the event API of control.Controls
    sim.stop()         # by PID

The JVM runs the simulator's Java sources (every *.java file here), compiled by jdk.py with the
JDK's javac into a cache directory (so a JDK, not a JRE, is needed), with py4j's jar on the class
path. This module writes the spec the JVM reads: the checked cluster, the Kafka version, the health
MBeans mbeans/catalog.py lists for that version (the one table of which MBean exists since when),
the inventory file and the JMX settings.
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.health import parse_version
from kafka_jmx_sidecar.mbeans.simulator import cluster as clusters
from kafka_jmx_sidecar.mbeans.simulator.control import Controls, SimulatorError
from kafka_jmx_sidecar.mbeans.simulator.jdk import MAIN_CLASS, compiled_classes, find_java, py4j_jar
from kafka_jmx_sidecar.mbeans.simulator.values import LogValues

HERE = Path(__file__).resolve().parent
# The MBeans other than the health catalog's, as a real node of the release served them (made by
# make_inventory.py from a capture): a version gets the newest capture not newer than itself, the
# oldest for releases before it (their own sets differ more: tests/real compares them).
INVENTORIES = {(4, 4): HERE / "inventory-4.4.tsv", (4, 1): HERE / "inventory-4.1.tsv"}
OLDEST_VERSION = (0, 8, 2)  # topic and partition became ObjectName keys

# py4j logs a lost connection with a full traceback; control.Controls reports it as one SimulatorError.
logging.getLogger("py4j").setLevel(logging.CRITICAL)


@dataclass(frozen=True)
class JmxSecurity:
    """The broker-side JMX switches, as com.sun.management.jmxremote.* would set them.

    `password_file`/`access_file`: the JDK's formats ("user password" / "user readonly|readwrite");
    the password file must be readable by its owner only (the JDK agent refuses it otherwise).
    `ssl`: TLS on the RMI connector with the key store (and, with `registry_ssl`, on the registry)."""

    password_file: str | None = None
    access_file: str | None = None
    ssl: bool = False
    registry_ssl: bool = True
    keystore: str | None = None
    keystore_password: str | None = None

    def check(self) -> None:
        for what, path in (("password file", self.password_file), ("access file", self.access_file)):
            if path is None:
                continue
            p = Path(path)
            if not p.is_file():
                raise SimulatorError(f"JMX {what} {path} does not exist")
            if p.stat().st_mode & 0o077:
                raise SimulatorError(f"JMX {what} {path} must be readable by its owner only, as the JDK requires: "
                                     f"chmod 600 {path}")
        if self.access_file and not self.password_file:
            raise SimulatorError("a JMX access file needs a password file (--jmx-password-file)")
        if self.ssl:
            if not self.keystore or not Path(self.keystore).is_file():
                raise SimulatorError("JMX over SSL needs a key store (--jmx-keystore FILE; make one with "
                                     "mbeans.simulator.tls.generate or keytool -genkeypair -ext san=ip:127.0.0.1)")
            if self.keystore_password is None:
                raise SimulatorError("JMX over SSL needs the key store's password (in the environment variable named by --jmx-keystore-password-env)")


def inventory_for(version: str) -> Path:
    """The inventory the simulator serves for Kafka `version`."""
    v = parse_version(version)
    return next((path for since, path in INVENTORIES.items() if v >= since), INVENTORIES[(4, 1)])


def full_version(version: str) -> str:
    parts = list(parse_version(version))
    while len(parts) < 3:
        parts.append(0)
    return ".".join(str(p) for p in parts)


def build_spec(cluster: dict, *, kafka_version: str, posed: int, served: list[int], jmx_port: int, clock: str,
               security: JmxSecurity, inventory: bool = True, reassignment_bytes_per_sec: int | None = None,
               log_values: LogValues | None = None) -> dict:
    """The JSON the JVM reads. `cluster` is already normalized."""
    nodes = list(dict.fromkeys(cluster["brokers"] + cluster["controllers"]))
    ports = {}
    extra = 0
    for n in [posed] + [n for n in nodes if n != posed and n in served]:
        ports[str(n)] = jmx_port if (n == posed or jmx_port == 0) else jmx_port + (extra := extra + 1)
    health = [{"domain": s.domain, "type": s.type, "name": s.name, "kind": s.kind.name, "scope": s.scope.value,
               "value_class": s.value_class, "event_type": s.event_type}
              for s in catalog.health_mbeans(kafka_version)]
    kinds = {k.name: {"class": k.class_name, "attributes": [list(a) for a in catalog.ATTRIBUTES[k]]}
             for k in catalog.Kind}
    spec = {
        "kafka_version": full_version(kafka_version),
        "version_parts": list(parse_version(kafka_version)),
        "metadata_mode": cluster["metadata"],
        "cluster_id": cluster["cluster_id"],
        "brokers": cluster["brokers"],
        "controllers": cluster["controllers"],
        "offline": cluster["offline"],
        "topics": cluster["topics"],
        "posed": posed,
        "ports": ports,
        "health": health,
        "health_keys": sorted(f"{s.domain}:{s.type}:{s.name}" for s in catalog.HEALTH_MBEANS),
        "kinds": kinds,
        "inventory": str(inventory_for(kafka_version)) if inventory else None,
        "clock": clock,
        "security": {"password_file": security.password_file, "access_file": security.access_file,
                     "ssl": security.ssl, "registry_ssl": security.ssl and security.registry_ssl},
        "gateway_port": 0,
        "exit_on_stdin_eof": True,
    }
    if reassignment_bytes_per_sec is not None:
        spec["reassignment_bytes_per_sec"] = reassignment_bytes_per_sec
    if log_values is not None:
        spec["log_values"] = log_values.spec()
    return spec


_RUNNING: set["Simulator"] = set()


@atexit.register
def _stop_all() -> None:
    for sim in list(_RUNNING):
        sim.stop()


class Simulator(Controls):
    """A running simulator JVM: its PID, JMX URLs and the event API (`control.Controls`)."""

    def __init__(self, proc: subprocess.Popen, lines: list[str], workdir: str, stderr_tail: list[str]):
        self.proc = proc
        self.pid = proc.pid
        self.ready_line = lines[0]
        self.url = lines[0].split(" ", 1)[1]
        self.urls: dict[int, str] = {}
        gateway_port = None
        for line in lines[1:]:
            kind, _, rest = line.partition(" ")
            if kind == "NODE":
                node, url = rest.split(" ", 1)
                self.urls[int(node)] = url
            elif kind == "CONTROL":
                gateway_port = int(rest.split()[1])
        self.control_port: int = gateway_port
        self._workdir = workdir
        self._stderr_tail = stderr_tail
        from py4j.java_gateway import GatewayParameters, JavaGateway

        self._gateway = JavaGateway(gateway_parameters=GatewayParameters(port=gateway_port, auto_convert=False))
        self._entry = self._gateway.entry_point
        info = self.cluster()
        self.posed: int = info["posed"]
        _RUNNING.add(self)

    @classmethod
    def start(cls, cluster: dict | None = None, *, kafka_version: str = "4.1", broker: int | None = None,
              serve: str | Iterable[int] = "posed", jmx_port: int = 0, clock: str = "manual",
              security: JmxSecurity | None = None, heap: str = "2g", inventory: bool = True,
              partitions: int | None = None, reassignment_bytes_per_sec: int | None = None,
              timeout: float = 180.0, echo_stderr: bool = False, source: str = "cluster",
              log_values: LogValues | None = None) -> "Simulator":
        """Start a simulator and wait until it serves.

        `cluster`: a cluster dict (cluster.load/synthetic/reference_4_1), or None with
        `partitions` for a synthetic one. `broker`: the node it poses as (the first broker by
        default). `serve`: "posed" (only that broker's JMX), "all" (every node on its own port),
        or a list of node ids. `jmx_port`: the posed node's port (0 picks free ports; other served
        nodes get the following ports). `clock`: "manual" (time moves only with advance(), for
        tests) or "realtime". `log_values`: realistic per-partition sizes, offsets and lags
        (values.py); without them every log is empty until traffic writes to it."""
        normalized = _checked_cluster(cluster, kafka_version=kafka_version, clock=clock, partitions=partitions,
                                      source=source)
        posed, served = _served_nodes(normalized, broker, serve, jmx_port)
        security = security or JmxSecurity()
        security.check()
        java, jar = find_java(), py4j_jar()
        classes = compiled_classes(java, jar, timeout)

        workdir = tempfile.mkdtemp(prefix="kafka-jmx-sim-")
        spec = build_spec(normalized, kafka_version=kafka_version, posed=posed, served=served, jmx_port=jmx_port,
                          clock=clock, security=security, inventory=inventory,
                          reassignment_bytes_per_sec=reassignment_bytes_per_sec, log_values=log_values)
        spec_path = Path(workdir) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        proc = subprocess.Popen(_command(java, jar, classes, heap, security, spec_path), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                                start_new_session=True)
        try:
            got, stderr_tail = _await_ready(proc, timeout, echo_stderr)
            sim = cls(proc, got, workdir, stderr_tail)
        except BaseException:
            _kill(proc)
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        return sim

    @property
    def stderr_tail(self) -> list[str]:
        return list(self._stderr_tail)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> int | None:
        """Stop the JVM by its PID (closing its stdin first lets it exit on its own)."""
        _RUNNING.discard(self)
        try:
            self._gateway.close(keep_callback_server=False)
        except Exception:
            pass
        code = _kill(self.proc, timeout)
        shutil.rmtree(self._workdir, ignore_errors=True)
        return code

    def __enter__(self) -> "Simulator":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _checked_cluster(cluster: dict | None, *, kafka_version: str, clock: str, partitions: int | None,
                     source: str) -> dict:
    """The normalized cluster to simulate, after the checks of the version, clock and cluster arguments."""
    try:
        v = parse_version(kafka_version)
    except ValueError as e:
        raise SimulatorError(f"--kafka-version: {e}") from None
    if v < OLDEST_VERSION:
        raise SimulatorError(f"--kafka-version {kafka_version}: the simulator serves Kafka 0.8.2 and later "
                             f"(older brokers packed topic and partition into quoted names)")
    if clock not in ("manual", "realtime"):
        raise SimulatorError(f"clock must be 'manual' or 'realtime', got {clock!r}")
    if cluster is None:
        if partitions is None:
            raise SimulatorError("give a cluster or a partition count")
        cluster = clusters.synthetic(partitions)
    elif partitions is not None:
        raise SimulatorError("give either a cluster file or --partitions, not both")
    try:
        return clusters.normalize(cluster, version=kafka_version, source=source)
    except clusters.ClusterError as e:
        raise SimulatorError(str(e)) from None


def _served_nodes(normalized: dict, broker: int | None, serve: str | Iterable[int],
                  jmx_port: int) -> tuple[int, list[int]]:
    """The posed node and the served ones (the posed first), checked against the cluster and the port range."""
    nodes = list(dict.fromkeys(normalized["brokers"] + normalized["controllers"]))
    posed = normalized["brokers"][0] if broker is None else broker
    if posed not in nodes:
        raise SimulatorError(f"--broker {posed} is not a node of the cluster (brokers: {normalized['brokers']}, "
                             f"controllers: {normalized['controllers']})")
    if posed in normalized["offline"]:
        raise SimulatorError(f"--broker {posed} is offline in the cluster file; pose as a running node")
    if serve == "posed":
        served = [posed]
    elif serve == "all":
        served = [n for n in nodes if n not in normalized["offline"]] + \
                 [n for n in nodes if n in normalized["offline"]]
    else:
        served = [int(n) for n in serve]
        bad = [n for n in served if n not in nodes]
        if bad:
            raise SimulatorError(f"cannot serve {bad}: not nodes of the cluster ({nodes})")
        if posed not in served:
            served.insert(0, posed)
    if not 0 <= jmx_port <= 65535 or (jmx_port and jmx_port + len(served) - 1 > 65535):
        raise SimulatorError(f"--jmx-port {jmx_port}: not a usable TCP port")
    return posed, served


def _command(java: str, jar: str, classes: Path, heap: str, security: JmxSecurity, spec_path: Path) -> list[str]:
    cmd = [java, f"-Xmx{heap}", "-XX:+UseParallelGC", "-XX:TieredStopAtLevel=1", "-Djava.rmi.server.hostname=127.0.0.1",
           "-Dsun.rmi.dgc.server.gcInterval=3600000"]
    if security.ssl:
        cmd += [f"-Djavax.net.ssl.keyStore={security.keystore}",
                f"-Djavax.net.ssl.keyStorePassword={security.keystore_password}"]
    return cmd + ["-cp", f"{classes}{os.pathsep}{jar}", MAIN_CLASS, "--spec", str(spec_path)]


def _await_ready(proc: subprocess.Popen, timeout: float, echo_stderr: bool) -> tuple[list[str], list[str]]:
    """The JVM's lines from READY to CONTROL, and the list its stderr's last 50 lines keep arriving in."""
    lines: queue.Queue = queue.Queue()
    stderr_tail: list[str] = []

    def read_stdout() -> None:
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def read_stderr() -> None:
        for line in proc.stderr:
            stderr_tail.append(line.rstrip("\n"))
            del stderr_tail[:-50]
            if echo_stderr and not line.startswith("Note: "):
                sys.stderr.write(line)
                sys.stderr.flush()

    threading.Thread(target=read_stdout, daemon=True).start()
    threading.Thread(target=read_stderr, daemon=True).start()
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise SimulatorError(f"the simulator did not get ready within {timeout:.0f} s") from None
        if line is None:
            proc.wait(timeout=10)
            time.sleep(0.1)  # let the stderr reader finish
            errors = [l for l in stderr_tail if l.startswith("error:")]
            reason = errors[-1][len("error: "):] if errors else \
                ("; ".join(stderr_tail[-5:]) or f"exit code {proc.returncode}")
            raise SimulatorError(reason)
        if not got and not line.startswith("READY "):
            continue  # nothing else is expected before READY; tolerate stray output
        got.append(line)
        if line.startswith("CONTROL "):
            return got, stderr_tail


def _kill(proc: subprocess.Popen, timeout: float = 10.0) -> int | None:
    if proc.poll() is not None:
        return proc.returncode
    try:
        proc.stdin.close()
    except Exception:
        pass
    try:
        return proc.wait(timeout=min(timeout, 3.0))
    except subprocess.TimeoutExpired:
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            return proc.poll()
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            continue
    return proc.poll()
