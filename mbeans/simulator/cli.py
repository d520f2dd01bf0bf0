"""`kafka-jmx-sidecar simulate`: run the broker simulator (also `python -m mbeans.simulator`).

Output protocol on stdout, once every JMX endpoint serves:

    READY service:jmx:rmi:///jndi/rmi://127.0.0.1:PORT/jmxrmi     the broker it poses as (--broker)
    NODE <id> <url>                                               one line per served node
    CONTROL 127.0.0.1 <port>                                      the py4j control channel

The first line is the contract; readers that want the other brokers' URLs (--serve all) read on
until the CONTROL line. Then it serves until SIGTERM/SIGINT. Bad input exits 2 with one line on
stderr saying what to fix.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from kafka_jmx_sidecar.mbeans.simulator import cluster as clusters
from kafka_jmx_sidecar.mbeans.simulator import scenario as scenarios
from kafka_jmx_sidecar.mbeans.simulator.control import SimulatorError
from kafka_jmx_sidecar.mbeans.simulator.process import JmxSecurity, Simulator

DEFAULT_JMX_PORT = 9999


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Run the broker simulator: Kafka-shaped MBeans over JMX/RMI on 127.0.0.1, computed "
                          "from a cluster model the way the given Kafka version does. Prints "
                          "'READY <JMX service URL>' once it serves.")
    g = parser.add_argument_group("cluster")
    g.add_argument("--cluster", metavar="FILE",
                   help="JSON or YAML cluster: {brokers, controllers, topics: [{name, config, partitions}]} "
                        "(default: the captured Kafka 4.1 node: node 1, topics refbin-test and refbin-underminisr)")
    g.add_argument("--partitions", type=int, metavar="N",
                   help="a synthetic healthy cluster of N partitions instead (3 brokers, RF 3, min ISR 2)")
    g.add_argument("--broker", type=int, metavar="ID", help="the node this process poses as (default: the first broker)")
    g.add_argument("--kafka-version", metavar="V",
                   help="the Kafka release whose MBeans and rules to follow, e.g. 2.4, 3.6, 4.1 (default: 4.1, "
                        "or the scenario's)")
    g.add_argument("--scenario", metavar="NAME|FILE",
                   help=f"play a scenario (YAML timeline); built-in: {', '.join(scenarios.builtin_names())}")
    g.add_argument("--serve", default="posed", metavar="posed|all|IDS",
                   help="whose JMX to serve: the posed broker (default), all nodes (each on its own port, "
                        "--jmx-port and the following ones), or a comma-separated list of node ids")
    g.add_argument("--clock", choices=("realtime", "manual"), default="realtime",
                   help="realtime (default): meters and reassignments move with the wall clock; manual: only "
                        "when advanced through the control API")
    j = parser.add_argument_group("JMX")
    j.add_argument("--jmx-port", type=int, default=DEFAULT_JMX_PORT, metavar="PORT",
                   help=f"JMX (RMI registry and connector) port of the posed broker on 127.0.0.1 "
                        f"(default {DEFAULT_JMX_PORT}; 0 picks free ports); a failed broker's port stays "
                        f"held, refusing connections, until it is restored")
    j.add_argument("--jmx-password-file", metavar="FILE",
                   help="require JMX authentication (JDK format: 'user password' per line; chmod 600)")
    j.add_argument("--jmx-access-file", metavar="FILE", help="JDK access file: 'user readonly|readwrite' per line")
    j.add_argument("--jmx-ssl", action="store_true", help="TLS on the JMX connector and the RMI registry")
    j.add_argument("--no-jmx-registry-ssl", dest="jmx_registry_ssl", action="store_false",
                   help="with --jmx-ssl, keep the RMI registry in plain text (registry.ssl=false)")
    j.add_argument("--jmx-keystore", metavar="FILE", help="key store (PKCS12 or JKS) for --jmx-ssl")
    j.add_argument("--jmx-keystore-password-env", metavar="NAME", default="SIMULATOR_KEYSTORE_PASSWORD",
                   help="environment variable holding its password (default SIMULATOR_KEYSTORE_PASSWORD; "
                        "secrets never go on the command line)")
    parser.add_argument("--heap", default="2g", metavar="SIZE", help="simulator JVM maximum heap (default 2g)")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (SimulatorError, clusters.ClusterError, scenarios.ScenarioError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    scenario = scenarios.load(args.scenario) if args.scenario else None
    version = args.kafka_version or (scenario.kafka_version if scenario else None) or "4.1"
    source = "cluster"
    partitions = None
    if args.cluster and args.partitions is not None:
        raise SimulatorError("give either --cluster or --partitions, not both")
    if args.cluster:
        cluster = clusters.load(args.cluster)
        source = args.cluster
    elif args.partitions is not None:
        if args.partitions < 1:
            raise SimulatorError("--partitions: need at least 1 partition")
        cluster, partitions = None, args.partitions
    elif scenario and scenario.cluster:
        cluster, source = scenario.cluster, f"{scenario.source}: cluster"
    else:
        cluster, source = clusters.reference_4_1(), "default cluster"
    serve: str | list[int] = args.serve
    if serve not in ("posed", "all"):
        try:
            serve = [int(x) for x in serve.split(",") if x.strip()]
        except ValueError:
            raise SimulatorError(f"--serve: expected posed, all or node ids such as 1,2 (got {args.serve!r})") from None
    security = JmxSecurity(password_file=args.jmx_password_file, access_file=args.jmx_access_file,
                           ssl=args.jmx_ssl, registry_ssl=args.jmx_registry_ssl, keystore=args.jmx_keystore,
                           keystore_password=os.environ.get(args.jmx_keystore_password_env))
    sim = Simulator.start(cluster, kafka_version=version, broker=args.broker, serve=serve, jmx_port=args.jmx_port,
                          clock=args.clock, security=security, heap=args.heap, partitions=partitions,
                          echo_stderr=True, source=source)
    stop = threading.Event()

    def on_signal(signum, frame):  # noqa: ARG001
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        print(sim.ready_line)
        for node, url in sim.urls.items():
            print(f"NODE {node} {url}")
        print(f"CONTROL 127.0.0.1 {sim.control_port}")
        sys.stdout.flush()
        if scenario:
            def note(step: scenarios.Step) -> None:
                print(f"scenario {scenario.name}: t={step.at:g}s {step.op} "
                      f"{step.args if step.args else ''}{' - ' + step.note if step.note else ''}", file=sys.stderr)

            scenarios.run(sim, scenario, realtime=args.clock == "realtime", on_step=note, stop=stop.is_set)
        while not stop.wait(0.5):
            if not sim.alive():
                print(f"error: the simulator JVM exited (code {sim.proc.returncode}): "
                      f"{'; '.join(sim.stderr_tail[-3:])}", file=sys.stderr)
                return 1
        return 0
    finally:
        sim.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-jmx-sidecar simulate")
    add_arguments(parser)
    return run(parser.parse_args(argv))
