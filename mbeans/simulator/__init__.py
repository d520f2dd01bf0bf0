"""The broker simulator: Kafka-shaped MBeans over real JMX/RMI, computed from a cluster model.

A JVM program (the `*.java` files here, compiled by the JDK's javac on first use) serves, for
each simulated broker it is asked to serve, its own MBeanServer and JMX connector on 127.0.0.1:
the health MBeans of mbeans/catalog.py for the chosen Kafka version, computed from the model the
way that version's broker computes them, plus the rest of a real broker's `kafka.*` MBeans
(`inventory-4.4.tsv` for 4.4 and later, `inventory-4.1.tsv` before: process.inventory_for). Python starts it and drives it over py4j:

    from kafka_jmx_sidecar.mbeans.simulator import Simulator, cluster
    with Simulator.start(cluster.reference_4_1(), kafka_version="4.1", serve="all") as sim:
        sim.url                      # the posed broker's JMX service URL
        sim.fail_broker(2); sim.advance(10)
        sim.partition_states()       # [mbeans.health.PartitionState]

`kafka-jmx-sidecar simulate` (cli.py) is the command-line face; scenario.py plays YAML timelines;
tls.py makes key stores for the SSL switch.
"""
from kafka_jmx_sidecar.mbeans.simulator.control import SimulatorError
from kafka_jmx_sidecar.mbeans.simulator.process import JmxSecurity, Simulator

__all__ = ["JmxSecurity", "Simulator", "SimulatorError"]
