/*
 * kafka-jmx-sidecar broker simulator: Kafka-shaped MBeans over real JMX/RMI, driven by a cluster model.
 *
 * Compiled by the Python launcher (mbeans/simulator/process.py), every *.java file of this folder
 * at once, into a cache directory, and run as
 *
 *     java -cp <classes>:<py4j jar> Simulator --spec SPEC.json
 *
 * The files, by concern: Simulator (start-up, the py4j Control), Model (the cluster, spec, Kafka's
 * rules), ModelEvents (the events Control applies), ModelTime (the clock: traffic, reassignment
 * copies, the beans that follow hosting and replication), Node (one node's MBeans), SimBean,
 * HealthSpec, YMeter and Inventory (the MBeans and their values), Part (topics and partitions),
 * Endpoint (JMX/RMI and its security), Json. SPEC.json (written by the launcher) holds the cluster, the
 * Kafka version, the health-MBean table of mbeans/catalog.py for that version, the inventory file
 * (inventory-4.4.tsv or inventory-4.1.tsv) and the JMX settings. Once every endpoint serves, stdout gets
 *
 *     READY service:jmx:rmi:///jndi/rmi://127.0.0.1:PORT/jmxrmi     (the broker this process poses as)
 *     NODE <id> <url>                                               (one line per served node)
 *     CONTROL 127.0.0.1 <py4j port>                                 (the control channel)
 *
 * Facts implemented here, from Apache Kafka's source (Partition.scala, ReplicaManager.scala,
 * BrokerTopicStats, ControllerMetricsChanges, the ZooKeeper KafkaController) and Yammer metrics 2.2:
 *  - Partition gauges are non-zero only on the leader; ReplicaManager counts over led partitions.
 *  - URP: before 2.5 isr < replicas (adding replicas count); 2.5+ (KIP-352) replicas.diff(adding) - isr > 0.
 *  - Min ISR: raw min.insync.replicas before 3.7; 3.7+ min(min.insync.replicas, replica count).
 *  - ReplicasCount: replicas before 2.5, replicas.diff(adding) from 2.5.
 *  - Controller gauges: KRaft controllers (active and standby) all report; under ZooKeeper every broker
 *    has them and only the active controller reports non-zero values.
 *  - Meters: Yammer 2.2 Meter (5 s ticks, 1/5/15-minute EWMAs, mean rate since creation).
 *  - Reassignment bytes: In on the adding broker, Out on the leader, both also in ReplicationBytesIn/Out.
 *  - Replication: every live replica but the leader fetches from the live leader; the beans that
 *    creates (the inventory's scopes L, F, P and TotalFetchRequestsPerSec per topic) come and go with it.
 *  - KRaft 4.1+ keeps eligible leader replicas (KIP-966): a stopped last ISR member leaves the ISR
 *    empty and stays eligible, and is elected when it comes back.
 */

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;

import py4j.GatewayServer;

public class Simulator {
    static final boolean DEBUG = System.getenv("KAFKA_JMX_SIDECAR_SIM_DEBUG") != null;

    public static void main(String[] args) {
        try {
            if (args.length != 2 || !args[0].equals("--spec")) {
                throw new UserError("usage: java -cp <classes>:<py4j jar> Simulator --spec FILE "
                        + "(start it with `kafka-jmx-sidecar simulate`, which writes the spec)");
            }
            serve(Paths.get(args[1]));
        } catch (UserError e) {
            System.err.println("error: " + e.getMessage());
            System.exit(2);
        } catch (Throwable t) {
            System.err.println("error: the broker simulator failed: " + t);
            if (DEBUG) t.printStackTrace();
            System.exit(1);
        }
    }

    static void serve(Path specPath) throws Exception {
        String text;
        try {
            text = new String(Files.readAllBytes(specPath), StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw new UserError("spec file " + specPath + " not found");
        }
        long t0 = System.nanoTime();
        Map<String, Object> spec = Json.obj(Json.parse(text), "spec");
        System.setProperty("java.rmi.server.hostname", "127.0.0.1");
        Model model = new Model(spec);
        debugTime("spec parsed and model built", t0);
        Control control = new Control(model);
        GatewayServer.turnLoggingOff();
        GatewayServer gateway = new GatewayServer(control, Json.i(spec.getOrDefault("gateway_port", 0L), "gateway_port"));
        gateway.start();
        synchronized (model) {
            model.startNodes();
        }
        debugTime("MBeans registered and JMX started", t0);
        model.time.startClock();
        StringBuilder out = new StringBuilder();
        out.append("READY ").append(model.posed.endpoint.url()).append('\n');
        for (Node n : model.nodes.values()) {
            if (n.endpoint != null) out.append("NODE ").append(n.id).append(' ').append(n.endpoint.url()).append('\n');
        }
        out.append("CONTROL 127.0.0.1 ").append(gateway.getListeningPort()).append('\n');
        System.out.print(out);
        System.out.flush();
        if (Json.bool(spec.get("exit_on_stdin_eof"), false)) {
            // The launcher keeps our stdin open; when it goes away (even by SIGKILL) so do we.
            InputStream in = System.in;
            byte[] buf = new byte[256];
            while (in.read(buf) >= 0) { /* ignore */ }
            System.exit(0);
        }
        Thread.currentThread().join();
    }

    static void debugTime(String what, long t0) {
        if (DEBUG) System.err.printf("debug: %s after %.2f s (JVM up %.2f s)%n", what, (System.nanoTime() - t0) / 1e9,
                ManagementFactory.getRuntimeMXBean().getUptime() / 1e3);
    }

    /** The py4j entry point: JSON in, JSON out, one lock with the JMX side. */
    public static final class Control {
        private final Model model;

        Control(Model model) {
            this.model = model;
        }

        /** Apply one event ({"op": ..., ...}); returns a JSON result. Errors are IllegalArgumentException. */
        public String apply(String eventJson) {
            try {
                Map<String, Object> event = Json.obj(Json.parse(eventJson), "event");
                synchronized (model) {
                    return Json.write(model.events.apply(event));
                }
            } catch (UserError e) {
                throw new IllegalArgumentException(e.getMessage());
            } catch (Exception e) {
                if (Simulator.DEBUG) e.printStackTrace();
                throw new IllegalStateException("the simulator failed to apply the event: " + e);
            }
        }

        public String partitionStates() {
            synchronized (model) {
                return Json.write(model.partitionStates());
            }
        }

        public String cluster() {
            synchronized (model) {
                return Json.write(model.clusterInfo());
            }
        }

        public long heapUsedBytes() {
            return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        }

        public long gc() {
            System.gc();
            return heapUsedBytes();
        }

        public int mbeanCount(int node) {
            synchronized (model) {
                Node n = model.nodes.get(node);
                return n == null || n.server == null ? -1 : n.server.getMBeanCount();
            }
        }

        public void shutdown() {
            new Thread(() -> {
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ignored) {
                }
                System.exit(0);
            }).start();
        }
    }
}
