/*
 * kafka-jmx-sidecar broker simulator: Kafka-shaped MBeans over real JMX/RMI, driven by a cluster model.
 *
 * Run by the Python launcher (mbeans/simulator/process.py) with the JDK's single-file source launcher:
 *
 *     java -cp <py4j jar> Simulator.java --spec SPEC.json
 *
 * so every class lives in this one file. SPEC.json (written by the launcher) holds the cluster, the
 * Kafka version, the health-MBean table of mbeans/catalog.py for that version, the inventory file
 * (inventory-4.1.tsv) and the JMX settings. Once every endpoint serves, stdout gets
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

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.PlatformManagedObject;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.rmi.registry.LocateRegistry;
import java.rmi.registry.Registry;
import java.rmi.server.ExportException;
import java.rmi.server.RMIClientSocketFactory;
import java.rmi.server.RMIServerSocketFactory;
import java.rmi.server.UnicastRemoteObject;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.Descriptor;
import javax.management.DynamicMBean;
import javax.management.ImmutableDescriptor;
import javax.management.InstanceAlreadyExistsException;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanOperationInfo;
import javax.management.MBeanParameterInfo;
import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import javax.management.ReflectionException;
import javax.management.remote.JMXServiceURL;
import javax.management.remote.rmi.RMIConnectorServer;
import javax.management.remote.rmi.RMIJRMPServerImpl;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLServerSocketFactory;
import javax.rmi.ssl.SslRMIClientSocketFactory;

import py4j.GatewayServer;

public class Simulator {
    static final boolean DEBUG = System.getenv("KAFKA_JMX_SIDECAR_SIM_DEBUG") != null;

    public static void main(String[] args) {
        try {
            if (args.length != 2 || !args[0].equals("--spec")) {
                throw new UserError("usage: java -cp <py4j jar> Simulator.java --spec FILE "
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
        model.startClock();
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
                    return Json.write(model.apply(event));
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

/** A problem with the input or a request: reported as one line, never as a stack trace. */
final class UserError extends RuntimeException {
    UserError(String message) {
        super(message);
    }
}

/** Minimal JSON (objects keep key order; integers are Long). */
final class Json {
    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    static Object parse(String text) {
        Json p = new Json(text);
        p.ws();
        Object v = p.value();
        p.ws();
        if (p.i != p.s.length()) throw p.err("trailing characters");
        return v;
    }

    private UserError err(String what) {
        return new UserError("bad JSON at offset " + i + ": " + what);
    }

    private void ws() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
    }

    private Object value() {
        if (i >= s.length()) throw err("unexpected end");
        char c = s.charAt(i);
        switch (c) {
            case '{': {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (peek('}')) return m;
                while (true) {
                    ws();
                    if (i >= s.length() || s.charAt(i) != '"') throw err("expected a key");
                    String k = string();
                    ws();
                    expect(':');
                    ws();
                    m.put(k, value());
                    ws();
                    if (peek('}')) return m;
                    expect(',');
                }
            }
            case '[': {
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                if (peek(']')) return l;
                while (true) {
                    ws();
                    l.add(value());
                    ws();
                    if (peek(']')) return l;
                    expect(',');
                }
            }
            case '"':
                return string();
            case 't':
                lit("true");
                return Boolean.TRUE;
            case 'f':
                lit("false");
                return Boolean.FALSE;
            case 'n':
                lit("null");
                return null;
            default:
                return number();
        }
    }

    private boolean peek(char c) {
        if (i < s.length() && s.charAt(i) == c) {
            i++;
            return true;
        }
        return false;
    }

    private void expect(char c) {
        if (!peek(c)) throw err("expected '" + c + "'");
    }

    private void lit(String w) {
        if (!s.startsWith(w, i)) throw err("unexpected token");
        i += w.length();
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            if (i >= s.length()) throw err("unterminated string");
            char c = s.charAt(i++);
            if (c == '"') return b.toString();
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = s.charAt(i++);
            switch (e) {
                case 'n': b.append('\n'); break;
                case 't': b.append('\t'); break;
                case 'r': b.append('\r'); break;
                case 'b': b.append('\b'); break;
                case 'f': b.append('\f'); break;
                case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                default: b.append(e);
            }
        }
    }

    private Object number() {
        int start = i;
        while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
        String t = s.substring(start, i);
        if (t.isEmpty()) throw err("unexpected character '" + s.charAt(start) + "'");
        try {
            if (t.indexOf('.') < 0 && t.indexOf('e') < 0 && t.indexOf('E') < 0) return Long.parseLong(t);
            return Double.parseDouble(t);
        } catch (NumberFormatException e) {
            throw err("bad number " + t);
        }
    }

    static String write(Object o) {
        StringBuilder b = new StringBuilder();
        write(b, o);
        return b.toString();
    }

    @SuppressWarnings("unchecked")
    private static void write(StringBuilder b, Object o) {
        if (o == null) {
            b.append("null");
        } else if (o instanceof String) {
            b.append('"');
            String t = (String) o;
            for (int k = 0; k < t.length(); k++) {
                char c = t.charAt(k);
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            b.append('"');
        } else if (o instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : ((Map<String, Object>) o).entrySet()) {
                if (!first) b.append(',');
                first = false;
                write(b, e.getKey());
                b.append(':');
                write(b, e.getValue());
            }
            b.append('}');
        } else if (o instanceof Iterable) {
            b.append('[');
            boolean first = true;
            for (Object x : (Iterable<Object>) o) {
                if (!first) b.append(',');
                first = false;
                write(b, x);
            }
            b.append(']');
        } else if (o instanceof int[]) {
            b.append('[');
            int[] a = (int[]) o;
            for (int k = 0; k < a.length; k++) {
                if (k > 0) b.append(',');
                b.append(a[k]);
            }
            b.append(']');
        } else {
            b.append(o);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(Object o, String what) {
        if (!(o instanceof Map)) throw new UserError(what + ": expected an object");
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object o, String what) {
        if (o == null) return Collections.emptyList();
        if (!(o instanceof List)) throw new UserError(what + ": expected a list");
        return (List<Object>) o;
    }

    static long l(Object o, String what) {
        if (o instanceof Long) return (Long) o;
        if (o instanceof Double && ((Double) o) == Math.rint((Double) o)) return ((Double) o).longValue();
        throw new UserError(what + ": expected an integer, got " + o);
    }

    static int i(Object o, String what) {
        long v = l(o, what);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) throw new UserError(what + ": out of range: " + v);
        return (int) v;
    }

    static double d(Object o, String what) {
        if (o instanceof Number) return ((Number) o).doubleValue();
        throw new UserError(what + ": expected a number, got " + o);
    }

    static String str(Object o, String what) {
        if (o instanceof String) return (String) o;
        throw new UserError(what + ": expected a string, got " + o);
    }

    static boolean bool(Object o, boolean dflt) {
        return o == null ? dflt : Boolean.TRUE.equals(o);
    }

    static int[] ints(Object o, String what) {
        List<Object> l = list(o, what);
        int[] a = new int[l.size()];
        for (int k = 0; k < a.length; k++) a[k] = i(l.get(k), what);
        return a;
    }
}

/** The simulated clock: nanoseconds since the simulator started, moved by advance() or in real time. */
final class SimClock {
    long nanos;
    final long startEpochMs = System.currentTimeMillis();

    long epochMs() {
        return startEpochMs + nanos / 1_000_000L;
    }
}

/** Yammer metrics 2.2 Meter semantics on the simulated clock. Accessed under the model lock. */
final class YMeter {
    static final long TICK = TimeUnit.SECONDS.toNanos(5);
    static final double M1 = 1 - Math.exp(-5 / 60.0 / 1);
    static final double M5 = 1 - Math.exp(-5 / 60.0 / 5);
    static final double M15 = 1 - Math.exp(-5 / 60.0 / 15);

    private final SimClock clock;
    private final long start;
    private long lastTick;
    long count;
    private final double[] rate = new double[3];
    private final long[] uncounted = new long[3];
    private boolean initialized;

    YMeter(SimClock clock) {
        this.clock = clock;
        this.start = clock.nanos;
        this.lastTick = start;
    }

    void mark(long n) {
        tickIfNecessary();
        count += n;
        for (int k = 0; k < 3; k++) uncounted[k] += n;
    }

    /**
     * n events spread evenly over (from, clock.nanos], as a broker under steady load marks them:
     * the meter ticks at each 5 s boundary inside the interval with the events before it, exactly
     * as Yammer's tickIfNecessary() would under continuous marking.
     */
    void markOver(long n, long from) {
        long to = clock.nanos;
        if (n <= 0) return;
        if (lastTick < from - TICK) tickTo(from); // idle before the interval: catch up first
        long cur = Math.max(from, lastTick);
        while (to > cur && lastTick + TICK + 1 <= to) {
            long boundary = lastTick + TICK + 1;
            long part = boundary <= cur ? 0 : (long) (n * ((double) (boundary - cur) / (to - cur)));
            count += part;
            for (int k = 0; k < 3; k++) uncounted[k] += part;
            n -= part;
            cur = Math.max(cur, boundary);
            lastTick = boundary;
            tick();
        }
        count += n;
        for (int k = 0; k < 3; k++) uncounted[k] += n;
    }

    private void tickTo(long now) {
        long age = now - lastTick;
        if (age > TICK) {
            lastTick = now;
            long ticks = Math.min(age / TICK, 100_000);
            for (long t = 0; t < ticks; t++) tick();
        }
    }

    private void tickIfNecessary() {
        tickTo(clock.nanos); // (ticks beyond 100,000 change nothing: the rates are 0.0 long before)
    }

    private void tick() {
        double[] alpha = {M1, M5, M15};
        for (int k = 0; k < 3; k++) {
            double instant = uncounted[k] / (double) TICK;
            uncounted[k] = 0;
            if (initialized) rate[k] += alpha[k] * (instant - rate[k]);
            else rate[k] = instant;
        }
        initialized = true;
    }

    double rate(int k) {
        tickIfNecessary();
        return rate[k] * 1e9;
    }

    double meanRate() {
        if (count == 0) return 0.0;
        long elapsed = clock.nanos - start;
        if (elapsed <= 0) return 0.0; // Yammer would divide by zero; a real clock never reads 0 elapsed
        return count / (double) elapsed * 1e9;
    }
}

/** One row of mbeans/catalog.py for this Kafka version. */
final class HealthSpec {
    static final int UNKNOWN = 0, RM_URP = 1, RM_UNDER_MIN = 2, RM_AT_MIN = 3, RM_REASSIGNING = 4, RM_LEADERS = 5,
            RM_PARTITIONS = 6, RM_OFFLINE_REPLICAS = 7, RM_LATE_TXN = 8, RM_PRODUCER_IDS = 9,
            P_URP = 20, P_UNDER_MIN = 21, P_AT_MIN = 22, P_ISR = 23, P_REPLICAS = 24, P_LSO_LAG = 25,
            L_SIZE = 30, L_LEO = 31, L_START = 32, L_SEGMENTS = 33,
            C_OFFLINE = 40, C_ACTIVE = 41, C_IMBALANCE = 42, C_PARTITIONS = 43, C_TOPICS = 44, C_ACTIVE_BROKERS = 45,
            C_FENCED = 46;
    static final int NUM_RM = 10;

    final String domain, type, name, kind, scope, valueClass, eventType;
    final int code;

    HealthSpec(Map<String, Object> m) {
        domain = Json.str(m.get("domain"), "health.domain");
        type = Json.str(m.get("type"), "health.type");
        name = Json.str(m.get("name"), "health.name");
        kind = Json.str(m.get("kind"), "health.kind");
        scope = Json.str(m.get("scope"), "health.scope");
        valueClass = m.get("value_class") == null ? "java.lang.Integer" : Json.str(m.get("value_class"), "value_class");
        eventType = m.get("event_type") == null ? null : Json.str(m.get("event_type"), "event_type");
        code = codeOf(type, name);
        if (code == UNKNOWN && kind.equals("GAUGE")) {
            System.err.println("warning: the simulator does not model " + domain + ":type=" + type + ",name=" + name
                    + "; it serves 0");
        }
    }

    static int codeOf(String type, String name) {
        switch (type + "/" + name) {
            case "ReplicaManager/UnderReplicatedPartitions": return RM_URP;
            case "ReplicaManager/UnderMinIsrPartitionCount": return RM_UNDER_MIN;
            case "ReplicaManager/AtMinIsrPartitionCount": return RM_AT_MIN;
            case "ReplicaManager/ReassigningPartitions": return RM_REASSIGNING;
            case "ReplicaManager/LeaderCount": return RM_LEADERS;
            case "ReplicaManager/PartitionCount": return RM_PARTITIONS;
            case "ReplicaManager/OfflineReplicaCount": return RM_OFFLINE_REPLICAS;
            case "ReplicaManager/PartitionsWithLateTransactionsCount": return RM_LATE_TXN;
            case "ReplicaManager/ProducerIdCount": return RM_PRODUCER_IDS;
            case "Partition/UnderReplicated": return P_URP;
            case "Partition/UnderMinIsr": return P_UNDER_MIN;
            case "Partition/AtMinIsr": return P_AT_MIN;
            case "Partition/InSyncReplicasCount": return P_ISR;
            case "Partition/ReplicasCount": return P_REPLICAS;
            case "Partition/LastStableOffsetLag": return P_LSO_LAG;
            case "Log/Size": return L_SIZE;
            case "Log/LogEndOffset": return L_LEO;
            case "Log/LogStartOffset": return L_START;
            case "Log/NumLogSegments": return L_SEGMENTS;
            case "KafkaController/OfflinePartitionsCount": return C_OFFLINE;
            case "KafkaController/ActiveControllerCount": return C_ACTIVE;
            case "KafkaController/PreferredReplicaImbalanceCount": return C_IMBALANCE;
            case "KafkaController/GlobalPartitionCount": return C_PARTITIONS;
            case "KafkaController/GlobalTopicCount": return C_TOPICS;
            case "KafkaController/ActiveBrokerCount": return C_ACTIVE_BROKERS;
            case "KafkaController/FencedBrokerCount": return C_FENCED;
            default: return UNKNOWN;
        }
    }

    String objectName(String topic, int partition) {
        StringBuilder b = new StringBuilder(96).append(domain).append(":type=").append(type).append(",name=").append(name);
        if (topic != null) b.append(",topic=").append(topic);
        if (partition >= 0) b.append(",partition=").append(partition);
        return b.toString();
    }

    Object box(long v) {
        switch (valueClass) {
            case "java.lang.Long": return v;
            case "java.lang.Byte": return (byte) v;
            case "java.lang.Short": return (short) v;
            case "java.lang.Double": return (double) v;
            default: return (int) v;
        }
    }
}

final class Topic {
    final String name;
    int minIsr;
    final List<Part> parts = new ArrayList<>();

    Topic(String name, int minIsr) {
        this.name = name;
        this.minIsr = minIsr;
    }
}

/** One partition as the controller knows it, plus its log's size and an ongoing reassignment. */
final class Part {
    final Topic topic;
    final int index;
    int[] replicas, isr, adding = new int[0], removing = new int[0];
    int[] elr = new int[0]; // KIP-966 eligible leader replicas (KRaft 4.1+)
    int leader;
    long size, leo, logStart;
    // reassignment in progress
    int[] original;
    long[] copied;
    long[] carry;
    long rate;
    boolean autoComplete;

    Part(Topic topic, int index) {
        this.topic = topic;
        this.index = index;
    }

    boolean reassigning() {
        return adding.length > 0 || removing.length > 0;
    }

    static boolean has(int[] a, int v) {
        for (int x : a) if (x == v) return true;
        return false;
    }

    static int[] without(int[] a, int v) {
        int n = 0;
        for (int x : a) if (x != v) n++;
        int[] r = new int[n];
        n = 0;
        for (int x : a) if (x != v) r[n++] = x;
        return r;
    }

    static int[] with(int[] a, int v) {
        int[] r = Arrays.copyOf(a, a.length + 1);
        r[a.length] = v;
        return r;
    }

    /** a minus b, keeping a's order (ids are distinct in Kafka's lists). */
    static int[] minus(int[] a, int[] b) {
        int n = 0;
        int[] r = new int[a.length];
        for (int x : a) if (!has(b, x)) r[n++] = x;
        return Arrays.copyOf(r, n);
    }

    static int[] intersect(int[] a, int[] b) {
        int n = 0;
        int[] r = new int[a.length];
        for (int x : a) if (has(b, x)) r[n++] = x;
        return Arrays.copyOf(r, n);
    }

    int addingIndex(int broker) {
        for (int k = 0; k < adding.length; k++) if (adding[k] == broker) return k;
        return -1;
    }
}

/** A produce/consume load on one topic or on all ("*"), in bytes and messages per second. */
final class Traffic {
    final String topic;
    long bytesIn, messagesIn, bytesOut;
    long carryIn, carryMsgs, carryOut;

    Traffic(String topic) {
        this.topic = topic;
    }
}

/** The JMX security switches (the same ones a broker's com.sun.management.jmxremote.* sets). */
final class Security {
    final String passwordFile, accessFile;
    final boolean ssl, registrySsl;

    Security(Map<String, Object> m) {
        passwordFile = m.get("password_file") == null ? null : Json.str(m.get("password_file"), "security.password_file");
        accessFile = m.get("access_file") == null ? null : Json.str(m.get("access_file"), "security.access_file");
        ssl = Json.bool(m.get("ssl"), false);
        registrySsl = Json.bool(m.get("registry_ssl"), ssl);
    }
}

/**
 * RMI server sockets on loopback (TLS ones from the default SSLContext, i.e. javax.net.ssl.keyStore,
 * when ssl is set). One factory per endpoint incarnation: equal within it, so the registry and the
 * connector share the port; it remembers every socket so that a failing broker can close them all,
 * accepted connections included, as the death of a real broker's process does.
 */
final class LoopbackServerSocketFactory implements RMIServerSocketFactory {
    private final boolean ssl;
    private final List<ServerSocket> listening = Collections.synchronizedList(new ArrayList<>());
    private final List<Socket> accepted = Collections.synchronizedList(new ArrayList<>());

    LoopbackServerSocketFactory(boolean ssl) {
        this.ssl = ssl;
    }

    public ServerSocket createServerSocket(int port) throws IOException {
        ServerSocket inner;
        if (ssl) {
            SSLServerSocket s = (SSLServerSocket) SSLServerSocketFactory.getDefault().createServerSocket();
            s.setNeedClientAuth(false);
            inner = s;
        } else {
            inner = new ServerSocket();
        }
        inner.setReuseAddress(true);
        inner.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 128);
        ServerSocket tracking = new TrackingServerSocket(inner, accepted);
        listening.add(tracking);
        return tracking;
    }

    void closeAll() {
        synchronized (listening) {
            for (ServerSocket s : listening) ((TrackingServerSocket) s).closeAndWait();
        }
        synchronized (accepted) {
            for (Socket s : accepted) {
                // close() alone is deferred while RMI's handler thread is blocked reading the socket,
                // long enough on a busy machine for one more call to be served; shutdown(2) is not.
                try {
                    s.setSoLinger(true, 0);
                } catch (IOException ignored) {
                }
                try {
                    s.shutdownInput();
                } catch (IOException ignored) {
                }
                try {
                    s.shutdownOutput();
                } catch (IOException ignored) {
                }
                try {
                    s.close();
                } catch (IOException ignored) {
                }
            }
            accepted.clear();
        }
    }
}

/** A ServerSocket that hands out its delegate's connections and remembers them. */
final class TrackingServerSocket extends ServerSocket {
    private final ServerSocket inner;
    private final List<Socket> accepted;
    private int accepting; // threads inside inner.accept()

    TrackingServerSocket(ServerSocket inner, List<Socket> accepted) throws IOException {
        this.inner = inner;
        this.accepted = accepted;
    }

    @Override
    public Socket accept() throws IOException {
        synchronized (this) {
            accepting++;
        }
        Socket s;
        try {
            s = inner.accept();
        } finally {
            synchronized (this) {
                accepting--;
                notifyAll();
            }
        }
        synchronized (accepted) {
            if (accepted.size() >= 64) accepted.removeIf(Socket::isClosed);
            accepted.add(s);
        }
        return s;
    }

    /**
     * Close, and return once the port no longer listens: while a thread is blocked in accept() the
     * JDK only signals it, and the kernel keeps the socket listening until that thread has run.
     */
    void closeAndWait() {
        try {
            inner.close();
        } catch (IOException ignored) {
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        synchronized (this) {
            while (accepting > 0 && System.nanoTime() < deadline) {
                try {
                    wait(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    @Override
    public void close() throws IOException {
        inner.close();
    }

    @Override
    public boolean isClosed() {
        return inner.isClosed();
    }

    @Override
    public boolean isBound() {
        return inner.isBound();
    }

    @Override
    public int getLocalPort() {
        return inner.getLocalPort();
    }

    @Override
    public InetAddress getInetAddress() {
        return inner.getInetAddress();
    }

    @Override
    public java.net.SocketAddress getLocalSocketAddress() {
        return inner.getLocalSocketAddress();
    }

    @Override
    public synchronized void setSoTimeout(int timeout) throws java.net.SocketException {
        inner.setSoTimeout(timeout);
    }

    @Override
    public synchronized int getSoTimeout() throws IOException {
        return inner.getSoTimeout();
    }

    @Override
    public String toString() {
        return inner.toString();
    }
}

/** One node's JMX connector: an RMI registry and the RMI connector server on the same port. */
final class Endpoint {
    final int port;
    final Security security;
    private Registry registry;
    private RMIConnectorServer connector;
    private LoopbackServerSocketFactory sockets, registrySockets;

    Endpoint(int port, Security security) {
        this.port = port;
        this.security = security;
    }

    String url() {
        return "service:jmx:rmi:///jndi/rmi://127.0.0.1:" + port + "/jmxrmi";
    }

    void start(MBeanServer server) throws Exception {
        LoopbackServerSocketFactory ssf = new LoopbackServerSocketFactory(security.ssl);
        sockets = ssf;
        // TLS on the connector only (registry.ssl=false): the plain registry keeps the port and the
        // connector takes an ephemeral one (RMI cannot share a port between different client factories).
        boolean split = security.ssl && !security.registrySsl;
        registrySockets = split ? new LoopbackServerSocketFactory(false) : ssf;
        RMIClientSocketFactory csf = security.ssl ? new SslRMIClientSocketFactory() : null;
        Map<String, Object> env = new HashMap<>();
        env.put(RMIConnectorServer.RMI_SERVER_SOCKET_FACTORY_ATTRIBUTE, ssf);
        if (csf != null) env.put(RMIConnectorServer.RMI_CLIENT_SOCKET_FACTORY_ATTRIBUTE, csf);
        if (security.passwordFile != null) env.put("jmx.remote.x.password.file", security.passwordFile);
        if (security.accessFile != null) env.put("jmx.remote.x.access.file", security.accessFile);
        try {
            if (security.registrySsl) {
                registry = LocateRegistry.createRegistry(port, csf, ssf);
            } else {
                registry = LocateRegistry.createRegistry(port, null, registrySockets);
            }
        } catch (ExportException e) {
            throw new UserError("cannot listen on 127.0.0.1:" + port + " for JMX (" + e.getCause()
                    + "); choose another --jmx-port or stop what uses it");
        }
        RMIJRMPServerImpl impl = new RMIJRMPServerImpl(split ? 0 : port, csf, ssf, env);
        connector = new RMIConnectorServer(new JMXServiceURL("rmi", "127.0.0.1", port), env, impl, server);
        connector.start();
        registry.rebind("jmxrmi", impl.toStub());
    }

    void stop() {
        try {
            if (connector != null) connector.stop();
        } catch (IOException ignored) {
        }
        try {
            if (registry != null) UnicastRemoteObject.unexportObject(registry, true);
        } catch (IOException ignored) {
        }
        if (sockets != null) sockets.closeAll(); // no connection outlives a dead broker
        if (registrySockets != null) registrySockets.closeAll();
        connector = null;
        registry = null;
        sockets = registrySockets = null;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}

/** MBeanInfo as Kafka's reporters build it: Yammer standard MBeans, Kafka's KafkaMbean, AppInfo. */
final class Infos {
    static final String STANDARD_DESCRIPTION = "Information on the management interface of the MBean";
    static final String ATTRIBUTE_DESCRIPTION = "Attribute exposed for management";
    static final String OPERATION_DESCRIPTION = "Operation exposed for management";
    static final String KAFKA_MBEAN = "org.apache.kafka.common.metrics.JmxReporter$KafkaMbean";
    static final String APP_INFO = "org.apache.kafka.common.utils.AppInfoParser$AppInfo";
    static final String YAMMER = "com.yammer.metrics.reporting.JmxReporter$";

    static MBeanInfo build(String className, String[] names, String[] declared, String[] descriptions) {
        MBeanAttributeInfo[] attrs = new MBeanAttributeInfo[names.length];
        for (int k = 0; k < names.length; k++) {
            attrs[k] = new MBeanAttributeInfo(names[k], declared[k], descriptions[k], true, false, false);
        }
        if (className.equals(KAFKA_MBEAN)) {
            return new MBeanInfo(className, "", attrs, null, null, null);
        }
        List<MBeanOperationInfo> ops = new ArrayList<>();
        String iface;
        if (className.startsWith(YAMMER)) {
            iface = className + "MBean";
            ops.add(new MBeanOperationInfo("objectName", OPERATION_DESCRIPTION, new MBeanParameterInfo[0],
                    "javax.management.ObjectName", MBeanOperationInfo.UNKNOWN));
            if (className.endsWith("$Histogram") || className.endsWith("$Timer")) {
                ops.add(new MBeanOperationInfo("values", OPERATION_DESCRIPTION, new MBeanParameterInfo[0],
                        "[D", MBeanOperationInfo.UNKNOWN));
            }
        } else {
            iface = className + "MBean";
        }
        Descriptor d = new ImmutableDescriptor("immutableInfo=true", "interfaceClassName=" + iface, "mxbean=false");
        return new MBeanInfo(className, STANDARD_DESCRIPTION, attrs, new javax.management.MBeanConstructorInfo[0],
                ops.toArray(new MBeanOperationInfo[0]), new javax.management.MBeanNotificationInfo[0], d);
    }

    static MBeanInfo yammer(String className, List<Object> attributes) {
        int n = attributes.size();
        String[] names = new String[n], declared = new String[n], desc = new String[n];
        for (int k = 0; k < n; k++) {
            List<Object> pair = Json.list(attributes.get(k), "attributes");
            names[k] = Json.str(pair.get(0), "attribute name");
            declared[k] = Json.str(pair.get(1), "attribute type");
            desc[k] = ATTRIBUTE_DESCRIPTION;
        }
        return build(className, names, declared, desc);
    }
}

/** Base of every simulated MBean: reads go through the model's lock. */
abstract class SimBean implements DynamicMBean {
    abstract Object read(String attribute) throws AttributeNotFoundException;

    abstract ObjectName name();

    abstract Object lock();

    public Object getAttribute(String attribute) throws AttributeNotFoundException {
        synchronized (lock()) {
            return read(attribute);
        }
    }

    public AttributeList getAttributes(String[] attributes) {
        AttributeList out = new AttributeList();
        synchronized (lock()) {
            for (String a : attributes) {
                try {
                    out.add(new Attribute(a, read(a)));
                } catch (AttributeNotFoundException ignored) {
                }
            }
        }
        return out;
    }

    public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
        throw new AttributeNotFoundException("read-only: " + attribute.getName());
    }

    public AttributeList setAttributes(AttributeList attributes) {
        return new AttributeList();
    }

    public Object invoke(String op, Object[] params, String[] sig) throws ReflectionException {
        if (op.equals("objectName") && (params == null || params.length == 0)) return name();
        if (op.equals("values") && (params == null || params.length == 0)) return new double[0];
        throw new ReflectionException(new NoSuchMethodException(op), "no operation " + op);
    }
}

/** A health gauge (ReplicaManager, Partition, Log, KafkaController), computed from the model on read. */
final class HealthGauge extends SimBean {
    final Node node;
    final Part part;
    final HealthSpec spec;

    HealthGauge(Node node, Part part, HealthSpec spec) {
        this.node = node;
        this.part = part;
        this.spec = spec;
    }

    Object lock() {
        return node.model;
    }

    public MBeanInfo getMBeanInfo() {
        return node.model.gaugeInfo;
    }

    Object read(String attribute) throws AttributeNotFoundException {
        if (!attribute.equals("Value")) throw new AttributeNotFoundException(attribute);
        return spec.box(node.model.value(node, part, spec));
    }

    ObjectName name() {
        try {
            return new ObjectName(spec.objectName(part == null ? null : part.topic.name, part == null ? -1 : part.index));
        } catch (MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }
}

/** A Yammer Meter MBean over a model meter. */
final class MeterBean extends SimBean {
    final Model model;
    final YMeter meter;
    final String eventType;
    final ObjectName objectName;
    final MBeanInfo info;

    MeterBean(Model model, YMeter meter, String eventType, ObjectName objectName, MBeanInfo info) {
        this.model = model;
        this.meter = meter;
        this.eventType = eventType;
        this.objectName = objectName;
        this.info = info;
    }

    Object lock() {
        return model;
    }

    public MBeanInfo getMBeanInfo() {
        return info;
    }

    ObjectName name() {
        return objectName;
    }

    Object read(String a) throws AttributeNotFoundException {
        switch (a) {
            case "Count": return meter.count;
            case "EventType": return eventType;
            case "RateUnit": return TimeUnit.SECONDS;
            case "MeanRate": return meter.meanRate();
            case "OneMinuteRate": return meter.rate(0);
            case "FiveMinuteRate": return meter.rate(1);
            case "FifteenMinuteRate": return meter.rate(2);
            default: throw new AttributeNotFoundException(a);
        }
    }
}

/** An inventory bean: the captured broker's values, served as they were. */
final class StaticBean extends SimBean {
    final Object lock;
    final Inventory.Shape shape;
    final Object[] values;
    final ObjectName objectName;

    StaticBean(Object lock, Inventory.Shape shape, Object[] values, ObjectName objectName) {
        this.lock = lock;
        this.shape = shape;
        this.values = values;
        this.objectName = objectName;
    }

    Object lock() {
        return lock;
    }

    public MBeanInfo getMBeanInfo() {
        return shape.info;
    }

    ObjectName name() {
        return objectName;
    }

    Object read(String a) throws AttributeNotFoundException {
        Integer k = shape.index.get(a);
        if (k == null) throw new AttributeNotFoundException(a);
        return values[k];
    }
}

/** The captured broker's other kafka.* MBeans (inventory-4.1.tsv, made by make_inventory.py). */
final class Inventory {
    static final class Shape {
        String className;
        String[] names, declared, runtime, descriptions;
        Map<String, Integer> index = new HashMap<>();
        MBeanInfo info;
        boolean isMeter;
    }

    static final class Row {
        String roles;
        boolean perTopic;
        char scope; // '-' at start, 'T' per topic, 'L' follower fetches served, 'F' per leader fetched from, 'P' per followed partition
        Shape shape;
        String template;
        String[] values;
        String domain, type, name;
    }

    final List<Shape> shapes = new ArrayList<>();
    final List<Row> rows = new ArrayList<>();

    static Inventory load(Path path, Set<String> healthKeys) throws IOException {
        Inventory inv = new Inventory();
        int lineNo = 0;
        for (String line : Files.readAllLines(path, StandardCharsets.UTF_8)) {
            lineNo++;
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.split("\t", -1);
            try {
                if (f[0].equals("S")) {
                    Shape s = new Shape();
                    s.className = f[2];
                    int n = f.length - 3;
                    s.names = new String[n];
                    s.declared = new String[n];
                    s.runtime = new String[n];
                    s.descriptions = new String[n];
                    for (int k = 0; k < n; k++) {
                        String[] a = f[3 + k].split("\\|", -1);
                        s.names[k] = a[0];
                        s.declared[k] = a[1];
                        s.runtime[k] = a[2];
                        s.descriptions[k] = a[3];
                        s.index.put(a[0], k);
                    }
                    s.info = Infos.build(s.className, s.names, s.declared, s.descriptions);
                    s.isMeter = s.className.endsWith("$Meter");
                    if (Integer.parseInt(f[1]) != inv.shapes.size()) throw new IllegalArgumentException("shape out of order");
                    inv.shapes.add(s);
                } else if (f[0].equals("M")) {
                    Row r = new Row();
                    r.roles = f[1];
                    r.scope = f[2].charAt(0);
                    if ("-TLFP".indexOf(r.scope) < 0 || f[2].length() != 1) throw new IllegalArgumentException("unknown scope " + f[2]);
                    r.perTopic = r.scope == 'T';
                    r.shape = inv.shapes.get(Integer.parseInt(f[3]));
                    r.template = f[4];
                    r.values = Arrays.copyOfRange(f, 5, f.length);
                    if (r.values.length != r.shape.names.length) throw new IllegalArgumentException("value count");
                    r.domain = r.template.substring(0, r.template.indexOf(':'));
                    r.type = key(r.template, "type");
                    r.name = key(r.template, "name");
                    if (healthKeys.contains(r.domain + ":" + r.type + ":" + r.name)
                            && !r.template.contains("topic=__cluster_metadata")) continue; // the model serves it
                    inv.rows.add(r);
                } else {
                    throw new IllegalArgumentException("unknown line kind " + f[0]);
                }
            } catch (RuntimeException e) {
                throw new UserError(path + ":" + lineNo + ": bad inventory line (" + e.getMessage()
                        + "); regenerate it with mbeans/simulator/make_inventory.py");
            }
        }
        return inv;
    }

    static String key(String template, String key) {
        String rest = template.substring(template.indexOf(':') + 1);
        for (String kv : rest.split(",")) {
            int eq = kv.indexOf('=');
            if (eq > 0 && kv.substring(0, eq).equals(key)) return kv.substring(eq + 1);
        }
        return null;
    }

    static Object convert(String runtime, String text, Model m, Node n) {
        text = text.replace("{version}", m.versionText).replace("{cluster_id}", m.clusterId)
                .replace("{start_ms}", Long.toString(m.clock.startEpochMs));
        if (text.startsWith("{raft_")) {
            boolean leads = n.id == m.activeController;
            text = text.replace("{raft_state}", leads ? "leader" : n.controller ? "follower" : "observer")
                    .replace("{raft_leader}", Integer.toString(m.activeController));
        }
        switch (runtime) {
            case "java.lang.Integer": return Integer.valueOf(text);
            case "java.lang.Long": return Long.valueOf(text);
            case "java.lang.Double": return Double.valueOf(text);
            case "java.lang.Byte": return Byte.valueOf(text);
            case "java.lang.Short": return Short.valueOf(text);
            case "java.lang.Boolean": return Boolean.valueOf(text);
            case "java.util.concurrent.TimeUnit": return TimeUnit.valueOf(text);
            default: return text;
        }
    }
}

/** A partition a follower fetches, from which leader, and its scope 'P' beans. */
final class Following {
    final int leader;
    final List<ObjectName> names = new ArrayList<>();

    Following(int leader) {
        this.leader = leader;
    }
}

/** FetcherLagMetrics ConsumerLag of a followed partition: how far this replica's log is behind the leader's. */
final class FetcherLagBean extends SimBean {
    final Node node;
    final Part part;
    final Inventory.Shape shape;
    final ObjectName objectName;

    FetcherLagBean(Node node, Part part, Inventory.Shape shape, ObjectName objectName) {
        this.node = node;
        this.part = part;
        this.shape = shape;
        this.objectName = objectName;
    }

    Object lock() {
        return node.model;
    }

    public MBeanInfo getMBeanInfo() {
        return shape.info;
    }

    ObjectName name() {
        return objectName;
    }

    Object read(String a) throws AttributeNotFoundException {
        if (!a.equals("Value")) throw new AttributeNotFoundException(a);
        return Math.max(0L, part.leo - node.model.replicaLogEndOffset(node, part));
    }
}

/** One node of the cluster: a broker, a controller, or both; with its own MBeanServer when served. */
final class Node {
    final Model model;
    final int id;
    final boolean broker;
    boolean controller;
    boolean alive = true;
    Endpoint endpoint; // null: modelled but not served
    MBeanServer server;
    final Map<String, YMeter> meters = new HashMap<>();
    final Map<String, Map<String, YMeter>> topicMeters = new HashMap<>();
    final Set<Part> hosted = new HashSet<>();
    boolean servesFollowers;                                     // its scope 'L' beans exist
    final Map<Integer, List<ObjectName>> fetchers = new HashMap<>(); // leader id -> scope 'F' beans
    final Map<Part, Following> following = new HashMap<>();      // followed partition -> scope 'P' beans
    long rmStamp = -1;
    final long[] rm = new long[HealthSpec.NUM_RM];

    Node(Model model, int id, boolean broker, boolean controller) {
        this.model = model;
        this.id = id;
        this.broker = broker;
        this.controller = controller;
    }

    /** (Re)creates every MBean of this node: counts start from zero, as a restarted broker's do. */
    void start() throws Exception {
        meters.clear();
        topicMeters.clear();
        hosted.clear();
        servesFollowers = false;
        fetchers.clear();
        following.clear();
        rmStamp = -1;
        server = endpoint == null ? null : MBeanServerFactory.newMBeanServer();
        if (server != null) registerPlatformBeans();
        for (HealthSpec s : model.health) {
            boolean here;
            switch (s.scope) {
                case "broker":
                case "topic":
                    // BrokerTopicStats' broker-wide meters: a real 4.1 dedicated KRaft controller has them too
                    here = broker || (model.kraft && controller && s.type.equals("BrokerTopicMetrics"));
                    break;
                case "controller":
                    here = controller;
                    break;
                default:
                    here = false; // per partition: registered by syncHosting()
            }
            if (!here) continue;
            if (s.kind.equals("METER")) {
                YMeter meter = new YMeter(model.clock);
                meters.put(s.name, meter);
                register(new MeterBean(model, meter, s.eventType, new ObjectName(s.objectName(null, -1)), model.meterInfo));
            } else {
                register(new HealthGauge(this, null, s));
            }
        }
        if (model.inventory != null) {
            for (Inventory.Row r : model.inventory.rows) {
                if (r.scope != '-' || !applies(r.roles)) continue;
                List<Integer> ids = r.template.contains("{broker}") ? model.brokerIds : Collections.singletonList(id);
                for (int b : ids) {
                    String name = r.template.replace("{node}", Integer.toString(id)).replace("{broker}", Integer.toString(b))
                            .replace("{version}", model.versionText);
                    if (r.shape.isMeter && model.topicTemplates.containsKey(r.name) && r.type.equals("BrokerTopicMetrics")) {
                        YMeter meter = new YMeter(model.clock);
                        meters.put(r.name, meter);
                        register(new MeterBean(model, meter, r.values[r.shape.index.get("EventType")], new ObjectName(name), r.shape.info));
                        continue;
                    }
                    Object[] values = new Object[r.values.length];
                    register(staticBean(r, name));
                }
            }
        }
        if (endpoint != null) endpoint.start(server);
    }

    boolean applies(String roles) {
        if (roles.indexOf('b') >= 0 && !broker) return false;
        if (roles.indexOf('c') >= 0 && !controller) return false;
        if (roles.indexOf('k') >= 0 && !model.kraft) return false;
        boolean quorumLeader = model.kraft && id == model.activeController;
        if (roles.indexOf('q') >= 0 && !quorumLeader) return false;
        if (roles.indexOf('o') >= 0 && quorumLeader) return false;
        return true;
    }

    StaticBean staticBean(Inventory.Row r, String name) throws MalformedObjectNameException {
        Object[] values = new Object[r.values.length];
        for (int k = 0; k < values.length; k++) values[k] = Inventory.convert(r.shape.runtime[k], r.values[k], model, this);
        return new StaticBean(model, r.shape, values, new ObjectName(name));
    }

    void stop() {
        if (endpoint != null) endpoint.stop();
        server = null;
        hosted.clear();
        topicMeters.clear();
        servesFollowers = false;
        fetchers.clear();
        following.clear();
    }

    private void registerPlatformBeans() {
        for (Class<? extends PlatformManagedObject> c : ManagementFactory.getPlatformManagementInterfaces()) {
            try {
                for (PlatformManagedObject o : ManagementFactory.getPlatformMXBeans(c)) {
                    try {
                        server.registerMBean(o, o.getObjectName());
                    } catch (InstanceAlreadyExistsException ignored) {
                    } catch (Exception e) {
                        if (Simulator.DEBUG) System.err.println("platform bean " + o.getObjectName() + ": " + e);
                    }
                }
            } catch (RuntimeException e) {
                if (Simulator.DEBUG) System.err.println("platform beans " + c + ": " + e);
            }
        }
    }

    void register(DynamicMBean bean) throws Exception {
        if (server == null) return;
        ObjectName n = ((SimBean) bean).name();
        server.registerMBean(bean, n);
    }

    /**
     * Partition and Log MBeans for newly hosted partitions. Parsing ObjectNames is half the cost of
     * registering and is thread-safe, so thousands of them are parsed in parallel; the MBeanServer's
     * repository takes one registration at a time.
     */
    void registerPartitions(List<Part> parts) throws Exception {
        hosted.addAll(parts);
        if (server == null || parts.isEmpty()) return;
        List<HealthSpec> specs = model.partitionSpecs;
        int per = specs.size();
        ObjectName[] names = new ObjectName[parts.size() * per];
        java.util.stream.IntStream range = java.util.stream.IntStream.range(0, parts.size());
        (parts.size() >= 1000 ? range.parallel() : range).forEach(k -> {
            Part p = parts.get(k);
            for (int j = 0; j < per; j++) {
                try {
                    names[k * per + j] = new ObjectName(specs.get(j).objectName(p.topic.name, p.index));
                } catch (MalformedObjectNameException e) {
                    throw new IllegalStateException(e);
                }
            }
        });
        for (int k = 0; k < parts.size(); k++) {
            for (int j = 0; j < per; j++) server.registerMBean(new HealthGauge(this, parts.get(k), specs.get(j)), names[k * per + j]);
        }
    }

    void unregisterPartition(Part p) throws Exception {
        hosted.remove(p);
        if (server == null) return;
        for (HealthSpec s : model.partitionSpecs) {
            try {
                server.unregisterMBean(new ObjectName(s.objectName(p.topic.name, p.index)));
            } catch (InstanceNotFoundException ignored) {
            }
        }
    }

    void mark(String name, long n) {
        markOver(name, n, -1);
    }

    /** Mark n events on a broker-wide meter: at once (from < 0) or spread over (from, now]. */
    void markOver(String name, long n, long from) {
        YMeter m = meters.get(name);
        if (m == null || n <= 0) return;
        if (from < 0) m.mark(n);
        else m.markOver(n, from);
    }

    /** A per-topic BrokerTopicMetrics meter: created (and registered) on its first use, as Kafka does. */
    void markTopic(String topic, String name, long n, long from) throws Exception {
        if (n <= 0) return;
        YMeter m = topicMeter(topic, name);
        if (m == null) return;
        if (from < 0) m.mark(n);
        else m.markOver(n, from);
    }

    /** The per-topic meter, created and registered now if this is the topic's first such event; null if not modelled. */
    YMeter topicMeter(String topic, String name) throws Exception {
        String eventType;
        MBeanInfo info;
        HealthSpec hs = model.topicSpecs.get(name);
        Inventory.Row row = model.topicTemplates.get(name);
        if (hs != null) {
            eventType = hs.eventType;
            info = model.meterInfo;
        } else if (row != null && applies(row.roles)) {
            eventType = row.values[row.shape.index.get("EventType")];
            info = row.shape.info;
        } else {
            return null;
        }
        Map<String, YMeter> byName = topicMeters.computeIfAbsent(topic, t -> new HashMap<>());
        YMeter m = byName.get(name);
        if (m == null) {
            m = new YMeter(model.clock);
            byName.put(name, m);
            if (server != null) {
                String on = "kafka.server:type=BrokerTopicMetrics,name=" + name + ",topic=" + topic;
                register(new MeterBean(model, m, eventType, new ObjectName(on), info));
            }
        }
        return m;
    }

    /**
     * A follower fetches partition p from this node, its leader: the first such fetch registers the
     * scope 'L' beans, each topic's first its TotalFetchRequestsPerSec (ReplicaManager marks the
     * meter for every partition a fetch reads, follower fetches included).
     */
    void serveFollower(Part p) throws Exception {
        servedFetch();
        if (topicMeters.containsKey(p.topic.name) && topicMeters.get(p.topic.name).containsKey("TotalFetchRequestsPerSec")) return;
        YMeter m = topicMeter(p.topic.name, "TotalFetchRequestsPerSec");
        if (m == null) return;
        m.mark(1);
        markOver("TotalFetchRequestsPerSec", 1, -1);
    }

    /** Another node fetched from this one (a follower, or a KRaft node reading the metadata log). */
    void servedFetch() throws Exception {
        if (servesFollowers) return;
        servesFollowers = true;
        for (Inventory.Row r : model.inventory.rows) {
            if (r.scope == 'L' && applies(r.roles)) register(staticBean(r, r.template));
        }
    }

    /**
     * This node, a follower, now fetches exactly `follows` (partition -> its leader): Kafka's
     * ReplicaFetcherManager adds and removes partitions per leader and shuts a fetcher thread down
     * once it has none, taking its FetcherStats and replica-fetcher-metrics with it; a partition's
     * FetcherLagMetrics go when it leaves its fetcher (leader change, reassignment, leadership).
     */
    void syncFetchers(Map<Part, Integer> follows) throws Exception {
        for (Iterator<Map.Entry<Part, Following>> it = following.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Part, Following> e = it.next();
            Integer leader = follows.get(e.getKey());
            if (leader != null && leader == e.getValue().leader) continue;
            unregisterAll(e.getValue().names);
            it.remove();
        }
        Set<Integer> leaders = new HashSet<>(follows.values());
        for (Iterator<Map.Entry<Integer, List<ObjectName>>> it = fetchers.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Integer, List<ObjectName>> e = it.next();
            if (leaders.contains(e.getKey())) continue;
            unregisterAll(e.getValue());
            it.remove();
        }
        for (int leader : leaders) {
            if (fetchers.containsKey(leader)) continue;
            List<ObjectName> names = new ArrayList<>();
            for (Inventory.Row r : model.inventory.rows) {
                if (server == null) break; // not served: only the bookkeeping
                if (r.scope != 'F' || !applies(r.roles)) continue;
                StaticBean b = staticBean(r, r.template.replace("{leader}", Integer.toString(leader))
                        .replace("{leader_host}", Model.LEADER_HOST).replace("{leader_port}", Integer.toString(Model.LEADER_PORT)));
                register(b);
                names.add(b.objectName);
            }
            fetchers.put(leader, names);
        }
        List<Part> added = new ArrayList<>();
        for (Part p : follows.keySet()) if (!following.containsKey(p)) added.add(p);
        List<Inventory.Row> rows = new ArrayList<>();
        if (server != null) { // not served: only the bookkeeping
            for (Inventory.Row r : model.inventory.rows) if (r.scope == 'P' && applies(r.roles)) rows.add(r);
        }
        // as registerPartitions: ObjectNames parsed in parallel for a big cluster, registered one by one
        int per = rows.size();
        ObjectName[] names = new ObjectName[added.size() * per];
        java.util.stream.IntStream range = java.util.stream.IntStream.range(0, added.size());
        (added.size() >= 1000 ? range.parallel() : range).forEach(k -> {
            Part p = added.get(k);
            for (int j = 0; j < per; j++) {
                try {
                    names[k * per + j] = new ObjectName(rows.get(j).template.replace("{leader}", Integer.toString(follows.get(p)))
                            .replace("{topic}", p.topic.name).replace("{partition}", Integer.toString(p.index)));
                } catch (MalformedObjectNameException e) {
                    throw new IllegalStateException(e);
                }
            }
        });
        for (int k = 0; k < added.size(); k++) {
            Part p = added.get(k);
            Following f = new Following(follows.get(p));
            for (int j = 0; j < per; j++) {
                register(new FetcherLagBean(this, p, rows.get(j).shape, names[k * per + j]));
                f.names.add(names[k * per + j]);
            }
            following.put(p, f);
        }
    }

    void unregisterAll(List<ObjectName> names) {
        if (server == null) return;
        for (ObjectName on : names) {
            try {
                server.unregisterMBean(on);
            } catch (Exception ignored) {
            }
        }
    }

    void dropTopic(String topic) {
        Map<String, YMeter> byName = topicMeters.remove(topic);
        if (byName == null || server == null) return;
        for (String name : byName.keySet()) {
            try {
                server.unregisterMBean(new ObjectName("kafka.server:type=BrokerTopicMetrics,name=" + name + ",topic=" + topic));
            } catch (Exception ignored) {
            }
        }
    }
}

/** The cluster: nodes, topics, partitions, traffic; every health value is computed here, Kafka's way. */
final class Model {
    final int[] version;
    final String versionText, clusterId;
    final boolean kraft;
    final SimClock clock = new SimClock();
    final boolean realtime;
    final LinkedHashMap<Integer, Node> nodes = new LinkedHashMap<>();
    final List<Integer> brokerIds = new ArrayList<>();
    int activeController = -1;
    final LinkedHashMap<String, Topic> topics = new LinkedHashMap<>();
    final LinkedHashMap<String, Traffic> traffic = new LinkedHashMap<>();
    final List<HealthSpec> health = new ArrayList<>();
    final List<HealthSpec> partitionSpecs = new ArrayList<>();
    final Map<String, HealthSpec> topicSpecs = new HashMap<>();
    final Map<String, Inventory.Row> topicTemplates = new HashMap<>();
    final MBeanInfo gaugeInfo, meterInfo;
    final Inventory inventory;
    final long defaultReassignRate;
    final long segmentBytes = 1L << 30;
    static final String LEADER_HOST = "127.0.0.1"; // FetcherStats' brokerHost/brokerPort: the leader's listener
    static final int LEADER_PORT = 9092;
    Node posed;
    long stamp; // bumped whenever a partition's assignment, ISR or leader may have changed
    boolean hostingDirty = true;
    private long offsetNanos; // advance() in real-time mode
    private long ctrlStamp = -1;
    private final long[] ctrl = new long[8];

    Model(Map<String, Object> spec) throws IOException {
        versionText = Json.str(spec.get("kafka_version"), "kafka_version");
        version = Json.ints(spec.get("version_parts"), "version_parts");
        kraft = "kraft".equals(spec.get("metadata_mode"));
        clusterId = spec.get("cluster_id") == null ? "sim-cluster" : Json.str(spec.get("cluster_id"), "cluster_id");
        realtime = !"manual".equals(spec.get("clock"));
        defaultReassignRate = spec.get("reassignment_bytes_per_sec") == null ? 10L << 20
                : Json.l(spec.get("reassignment_bytes_per_sec"), "reassignment_bytes_per_sec");

        Map<String, Object> kinds = Json.obj(spec.get("kinds"), "kinds");
        Map<String, Object> gauge = Json.obj(kinds.get("GAUGE"), "kinds.GAUGE");
        Map<String, Object> meter = Json.obj(kinds.get("METER"), "kinds.METER");
        gaugeInfo = Infos.yammer(Json.str(gauge.get("class"), "class"), Json.list(gauge.get("attributes"), "attributes"));
        meterInfo = Infos.yammer(Json.str(meter.get("class"), "class"), Json.list(meter.get("attributes"), "attributes"));

        for (Object o : Json.list(spec.get("health"), "health")) {
            HealthSpec s = new HealthSpec(Json.obj(o, "health"));
            health.add(s);
            if (s.scope.equals("partition")) partitionSpecs.add(s);
            if (s.scope.equals("topic")) topicSpecs.put(s.name, s);
        }
        Set<String> healthKeys = new HashSet<>();
        for (Object o : Json.list(spec.get("health_keys"), "health_keys")) healthKeys.add(Json.str(o, "health_keys"));
        Object inv = spec.get("inventory");
        inventory = inv == null ? null : Inventory.load(Paths.get(Json.str(inv, "inventory")), healthKeys);
        if (inventory != null) {
            for (Inventory.Row r : inventory.rows) if (r.perTopic && r.shape.isMeter) topicTemplates.put(r.name, r);
        }

        Security security = new Security(spec.get("security") == null ? new HashMap<>() : Json.obj(spec.get("security"), "security"));
        Set<Integer> controllers = new LinkedHashSet<>();
        for (int c : Json.ints(spec.get("controllers"), "controllers")) controllers.add(c);
        for (int b : Json.ints(spec.get("brokers"), "brokers")) {
            brokerIds.add(b);
            nodes.put(b, new Node(this, b, true, kraft ? controllers.contains(b) : true));
        }
        for (int c : controllers) {
            if (!nodes.containsKey(c)) {
                if (!kraft) throw new UserError("controller " + c + " is not a broker: dedicated controllers need KRaft");
                nodes.put(c, new Node(this, c, false, true));
            }
        }
        if (kraft) {
            for (int c : controllers) {
                activeController = c;
                break;
            }
        } else {
            activeController = controllers.isEmpty() ? Collections.min(brokerIds) : controllers.iterator().next();
        }
        Map<String, Object> ports = Json.obj(spec.get("ports"), "ports");
        for (Map.Entry<String, Object> e : ports.entrySet()) {
            Node n = nodes.get(Integer.parseInt(e.getKey()));
            if (n == null) throw new UserError("ports: node " + e.getKey() + " is not in the cluster");
            int port = Json.i(e.getValue(), "port");
            n.endpoint = new Endpoint(port == 0 ? Endpoint.freePort() : port, security);
        }
        posed = nodes.get(Json.i(spec.get("posed"), "posed"));
        if (posed == null || posed.endpoint == null) throw new UserError("the posed node must be in the cluster and served");
        for (int d : Json.ints(spec.get("offline"), "offline")) {
            Node n = nodes.get(d);
            if (n == null) throw new UserError("offline node " + d + " is not in the cluster");
            n.alive = false;
        }
        if (activeController >= 0 && !nodes.get(activeController).alive) activeController = nextController(-1);

        for (Object o : Json.list(spec.get("topics"), "topics")) {
            Map<String, Object> t = Json.obj(o, "topic");
            Topic topic = new Topic(Json.str(t.get("name"), "topic.name"), Json.i(t.getOrDefault("min_isr", 1L), "min_isr"));
            if (topics.containsKey(topic.name)) throw new UserError("topic " + topic.name + " defined twice");
            List<Object> ps = Json.list(t.get("partitions"), "partitions");
            for (int k = 0; k < ps.size(); k++) {
                Map<String, Object> pm = Json.obj(ps.get(k), "partition");
                Part p = new Part(topic, k);
                p.replicas = Json.ints(pm.get("replicas"), "replicas");
                p.isr = Json.ints(pm.get("isr"), "isr");
                p.leader = pm.get("leader") == null ? -1 : Json.i(pm.get("leader"), "leader");
                p.adding = Json.ints(pm.get("adding_replicas"), "adding_replicas");
                p.removing = Json.ints(pm.get("removing_replicas"), "removing_replicas");
                p.size = pm.get("size_bytes") == null ? 0 : Json.l(pm.get("size_bytes"), "size_bytes");
                p.leo = pm.get("log_end_offset") == null ? 0 : Json.l(pm.get("log_end_offset"), "log_end_offset");
                if (p.reassigning()) {
                    p.original = Part.minus(p.replicas, p.adding);
                    p.copied = new long[p.adding.length];
                    p.carry = new long[p.adding.length];
                    p.rate = pm.get("bytes_per_sec") == null ? defaultReassignRate : Json.l(pm.get("bytes_per_sec"), "bytes_per_sec");
                    p.autoComplete = true;
                    for (int a = 0; a < p.adding.length; a++) if (Part.has(p.isr, p.adding[a])) p.copied[a] = p.size;
                }
                topic.parts.add(p);
            }
            topics.put(topic.name, topic);
        }
    }

    boolean ge(int major, int minor) {
        int a = version.length > 0 ? version[0] : 0, b = version.length > 1 ? version[1] : 0;
        return a > major || (a == major && b >= minor);
    }

    void startNodes() throws Exception {
        for (Node n : nodes.values()) {
            if (n.alive) n.start();
        }
        hostingDirty = true;
        syncHosting();
    }

    void startClock() {
        if (!realtime) return;
        final long t0 = System.nanoTime();
        Thread t = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
                synchronized (Model.this) {
                    try {
                        advanceTo(System.nanoTime() - t0 + offsetNanos);
                    } catch (Exception e) {
                        System.err.println("warning: clock tick failed: " + e);
                    }
                }
            }
        }, "sim-clock");
        t.setDaemon(true);
        t.start();
    }

    // ----- Kafka's rules ---------------------------------------------------------------------------

    /** Partition.replicationFactor: 2.5+ the assignment without adding replicas (Seq.diff); before, all. */
    int replicationFactor(Part p) {
        if (!ge(2, 5) || p.adding.length == 0) return p.replicas.length;
        int[] rest = p.replicas.clone();
        int n = rest.length;
        for (int a : p.adding) {
            for (int k = 0; k < rest.length; k++) {
                if (rest[k] == a && rest[k] != Integer.MIN_VALUE) {
                    rest[k] = Integer.MIN_VALUE;
                    n--;
                    break;
                }
            }
        }
        return n;
    }

    boolean underReplicated(Part p) {
        if (ge(2, 5)) return replicationFactor(p) - p.isr.length > 0; // KIP-352
        return p.isr.length < p.replicas.length;
    }

    /** Kafka 3.7+ caps min.insync.replicas by the replica count the leader knows (all assigned replicas). */
    int minIsr(Part p) {
        if (ge(3, 7)) return Math.min(p.topic.minIsr, p.replicas.length);
        return p.topic.minIsr;
    }

    boolean leads(Node n, Part p) {
        return n.alive && n.broker && p.leader == n.id;
    }

    long value(Node n, Part p, HealthSpec s) {
        int c = s.code;
        if (c >= HealthSpec.RM_URP && c <= HealthSpec.RM_PRODUCER_IDS) return replicaManager(n)[c];
        if (c >= HealthSpec.C_OFFLINE) return controllerValue(n, c);
        if (p == null) return 0;
        boolean lead = leads(n, p);
        switch (c) {
            case HealthSpec.P_URP: return lead && underReplicated(p) ? 1 : 0;
            case HealthSpec.P_UNDER_MIN: return lead && p.isr.length < minIsr(p) ? 1 : 0;
            case HealthSpec.P_AT_MIN: return lead && p.isr.length == minIsr(p) ? 1 : 0;
            case HealthSpec.P_ISR: return lead ? p.isr.length : 0;
            case HealthSpec.P_REPLICAS: return lead ? replicationFactor(p) : 0;
            case HealthSpec.P_LSO_LAG: return 0;
            case HealthSpec.L_SIZE: return replicaSize(n, p);
            case HealthSpec.L_LEO: return replicaLogEndOffset(n, p);
            case HealthSpec.L_START: return p.logStart;
            case HealthSpec.L_SEGMENTS: return 1 + replicaSize(n, p) / segmentBytes;
            default: return 0;
        }
    }

    long replicaLogEndOffset(Node n, Part p) {
        long size = replicaSize(n, p);
        return p.size == 0 || size >= p.size ? p.leo : (long) (p.leo * (size / (double) p.size));
    }

    long replicaSize(Node n, Part p) {
        int k = p.addingIndex(n.id);
        if (k >= 0 && p.copied != null && !Part.has(p.isr, n.id)) return p.copied[k];
        return p.size;
    }

    long[] replicaManager(Node n) {
        if (n.rmStamp == stamp) return n.rm;
        Arrays.fill(n.rm, 0);
        for (Topic t : topics.values()) {
            for (Part p : t.parts) {
                if (Part.has(p.replicas, n.id)) n.rm[HealthSpec.RM_PARTITIONS]++;
                if (!leads(n, p)) continue;
                n.rm[HealthSpec.RM_LEADERS]++;
                if (underReplicated(p)) n.rm[HealthSpec.RM_URP]++;
                int min = minIsr(p);
                if (p.isr.length < min) n.rm[HealthSpec.RM_UNDER_MIN]++;
                if (p.isr.length == min) n.rm[HealthSpec.RM_AT_MIN]++;
                if (p.reassigning()) n.rm[HealthSpec.RM_REASSIGNING]++;
            }
        }
        n.rmStamp = stamp;
        return n.rm;
    }

    long controllerValue(Node n, int code) {
        if (!n.controller) return 0;
        boolean active = n.id == activeController;
        if (code == HealthSpec.C_ACTIVE) return active ? 1 : 0;
        if (!kraft && !active) return 0; // ZooKeeper: only the active controller reports
        if (ctrlStamp != stamp) {
            Arrays.fill(ctrl, 0);
            for (Topic t : topics.values()) {
                ctrl[4]++;
                for (Part p : t.parts) {
                    ctrl[3]++;
                    if (p.leader < 0) ctrl[0]++;
                    int preferred = p.replicas.length == 0 ? -1 : p.replicas[0];
                    if (p.leader != preferred) ctrl[2]++;
                }
            }
            for (int b : brokerIds) {
                if (nodes.get(b).alive) ctrl[5]++;
                else ctrl[6]++;
            }
            ctrlStamp = stamp;
        }
        switch (code) {
            case HealthSpec.C_OFFLINE: return ctrl[0];
            case HealthSpec.C_IMBALANCE: return ctrl[2];
            case HealthSpec.C_PARTITIONS: return ctrl[3];
            case HealthSpec.C_TOPICS: return ctrl[4];
            case HealthSpec.C_ACTIVE_BROKERS: return ctrl[5];
            case HealthSpec.C_FENCED: return kraft ? ctrl[6] : 0; // ZooKeeper has no fencing: a dead broker is gone
            default: return 0;
        }
    }

    // ----- events ----------------------------------------------------------------------------------

    Map<String, Object> apply(Map<String, Object> e) throws Exception {
        String op = Json.str(e.get("op"), "op");
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("ok", true);
        switch (op) {
            case "fail_broker": fail(node(e, "broker")); break;
            case "restore_broker": restore(node(e, "broker"), Json.bool(e.get("catch_up"), true)); break;
            case "shrink_isr": shrinkIsr(part(e), Json.i(e.get("broker"), "broker")); break;
            case "expand_isr": expandIsr(part(e), Json.i(e.get("broker"), "broker")); break;
            case "start_reassignment":
                startReassignment(part(e), Json.ints(e.get("replicas"), "replicas"),
                        e.get("bytes_per_sec") == null ? defaultReassignRate : Json.l(e.get("bytes_per_sec"), "bytes_per_sec"),
                        Json.bool(e.get("auto_complete"), true));
                break;
            case "complete_reassignment": completeReassignment(part(e), true); break;
            case "cancel_reassignment": cancelReassignment(part(e)); break;
            case "set_min_isr": {
                int v = Json.i(e.get("min_isr"), "min_isr");
                if (v < 1) throw new UserError("min_isr must be at least 1, got " + v);
                topic(e).minIsr = v;
                break;
            }
            case "create_topic": createTopic(e); break;
            case "delete_topic": deleteTopic(topic(e)); break;
            case "traffic": setTraffic(e); break;
            case "produce": produce(e); break;
            case "advance": {
                double s = Json.d(e.get("seconds"), "seconds");
                if (s < 0) throw new UserError("advance: seconds must not be negative");
                long ns = (long) (s * 1e9);
                if (realtime) {
                    offsetNanos += ns;
                    advanceTo(clock.nanos + ns);
                } else {
                    advanceTo(clock.nanos + ns);
                }
                break;
            }
            case "elect_preferred_leaders": result.put("elected", electPreferred()); break;
            default:
                throw new UserError("unknown event '" + op + "'");
        }
        stamp++;
        hostingDirty = true;
        syncHosting();
        result.put("clock_ms", clock.nanos / 1_000_000L);
        return result;
    }

    Node node(Map<String, Object> e, String key) {
        int id = Json.i(e.get(key), key);
        Node n = nodes.get(id);
        if (n == null) throw new UserError("node " + id + " is not in the cluster (nodes: " + nodes.keySet() + ")");
        return n;
    }

    Topic topic(Map<String, Object> e) {
        String name = Json.str(e.get("topic"), "topic");
        Topic t = topics.get(name);
        if (t == null) throw new UserError("no topic '" + name + "' (topics: " + shortList(topics.keySet()) + ")");
        return t;
    }

    Part part(Map<String, Object> e) {
        Topic t = topic(e);
        int k = Json.i(e.get("partition"), "partition");
        if (k < 0 || k >= t.parts.size()) throw new UserError("topic " + t.name + " has no partition " + k + " (it has " + t.parts.size() + ")");
        return t.parts.get(k);
    }

    static String shortList(Set<String> names) {
        List<String> l = new ArrayList<>(names);
        return l.size() <= 10 ? l.toString() : l.subList(0, 10) + " and " + (l.size() - 10) + " more";
    }

    int nextController(int except) {
        for (Node n : nodes.values()) {
            if (n.id != except && n.alive && n.controller && (kraft || n.broker)) return n.id;
        }
        return -1;
    }

    /** First replica in assignment order that is in the ISR and alive: Kafka's clean leader election. */
    int electLeader(int[] order, int[] isr) {
        for (int r : order) {
            if (r >= 0 && Part.has(isr, r)) {
                Node n = nodes.get(r);
                if (n != null && n.alive) return r;
            }
        }
        return -1;
    }

    void fail(Node n) throws Exception {
        if (!n.alive) throw new UserError("node " + n.id + " is already failed");
        n.alive = false;
        n.stop();
        if (n.id == activeController) activeController = nextController(n.id);
        if (!n.broker) return;
        for (Topic t : topics.values()) {
            for (Part p : t.parts) {
                if (!Part.has(p.replicas, n.id)) continue;
                // The controller removes a fenced broker from the ISR, except the last member; with
                // ELR (KIP-966, on by default from 4.1) the last member too, which stays eligible
                // (seen on a real 4.1 cluster: an RF 1 partition's only replica stopped gives
                // "Leader: none Isr: (empty) Elr: 3").
                if (Part.has(p.isr, n.id) && (p.isr.length > 1 || elrEnabled())) setIsr(p, Part.without(p.isr, n.id));
                if (p.leader == n.id) p.leader = electLeader(p.replicas, p.isr);
            }
        }
    }

    void restore(Node n, boolean catchUp) throws Exception {
        if (n.alive) throw new UserError("node " + n.id + " is not failed");
        n.alive = true;
        if (activeController < 0 && n.controller) activeController = n.id;
        if (n.broker) {
            for (Topic t : topics.values()) {
                for (Part p : t.parts) {
                    // KIP placeholders: a joining broker takes the place of a missing replica.
                    if (!Part.has(p.replicas, n.id)) {
                        for (int k = 0; k < p.replicas.length; k++) {
                            if (p.replicas[k] < 0) {
                                p.replicas = p.replicas.clone();
                                p.replicas[k] = n.id;
                                break;
                            }
                        }
                    }
                    if (!Part.has(p.replicas, n.id)) continue;
                    if (p.leader < 0 && Part.has(p.isr, n.id)) p.leader = n.id; // its last ISR member is back
                    if (p.leader < 0 && p.isr.length == 0 && Part.has(p.elr, n.id)) {
                        setIsr(p, new int[] {n.id}); // KIP-966: an unfenced eligible replica is elected
                        p.leader = n.id;
                    }
                }
            }
        }
        n.start();
        if (n.broker && catchUp) {
            for (Topic t : topics.values()) {
                for (Part p : t.parts) {
                    if (Part.has(p.replicas, n.id) && !Part.has(p.isr, n.id) && p.addingIndex(n.id) < 0 && p.leader >= 0) {
                        setIsr(p, Part.with(p.isr, n.id));
                        nodes.get(p.leader).mark("IsrExpandsPerSec", 1);
                    }
                }
            }
        }
    }

    /** KIP-966 eligible leader replicas: on by default for KRaft clusters created by 4.1 and later. */
    boolean elrEnabled() {
        return kraft && ge(4, 1);
    }

    /**
     * A new ISR, and the ELR the controller keeps with it (PartitionChangeBuilder): cleared while the
     * ISR holds min ISR replicas; below that, the former ISR members and eligible replicas not in
     * the new ISR (a fail_broker is a clean shutdown: the replica stays eligible).
     */
    void setIsr(Part p, int[] isr) {
        int[] old = p.isr;
        p.isr = isr;
        if (!elrEnabled()) return;
        if (isr.length >= minIsr(p)) {
            p.elr = new int[0];
            return;
        }
        p.elr = Part.minus(concat(p.elr, Part.minus(old, p.elr)), isr);
    }

    Node leaderNode(Part p, String what) {
        if (p.leader < 0) throw new UserError(what + ": " + p.topic.name + "-" + p.index + " has no leader");
        return nodes.get(p.leader);
    }

    void shrinkIsr(Part p, int broker) {
        Node leader = leaderNode(p, "shrink_isr");
        if (broker == p.leader) throw new UserError("shrink_isr: broker " + broker + " leads " + p.topic.name + "-" + p.index
                + "; a leader never drops itself (use fail_broker)");
        if (!Part.has(p.isr, broker)) throw new UserError("shrink_isr: broker " + broker + " is not in the ISR "
                + Arrays.toString(p.isr) + " of " + p.topic.name + "-" + p.index);
        setIsr(p, Part.without(p.isr, broker));
        leader.mark("IsrShrinksPerSec", 1);
    }

    void expandIsr(Part p, int broker) throws Exception {
        Node leader = leaderNode(p, "expand_isr");
        if (!Part.has(p.replicas, broker)) throw new UserError("expand_isr: broker " + broker + " is not a replica "
                + Arrays.toString(p.replicas) + " of " + p.topic.name + "-" + p.index);
        if (Part.has(p.isr, broker)) throw new UserError("expand_isr: broker " + broker + " is already in the ISR of "
                + p.topic.name + "-" + p.index);
        Node b = nodes.get(broker);
        if (b == null || !b.alive) throw new UserError("expand_isr: broker " + broker + " is not alive");
        setIsr(p, Part.with(p.isr, broker));
        int k = p.addingIndex(broker);
        if (k >= 0 && p.copied != null) p.copied[k] = p.size;
        leader.mark("IsrExpandsPerSec", 1);
        if (p.reassigning() && p.autoComplete) completeReassignment(p, false);
    }

    void checkBrokers(int[] ids, String what) {
        Set<Integer> seen = new HashSet<>();
        for (int r : ids) {
            if (!seen.add(r)) throw new UserError(what + ": replica " + r + " listed twice in " + Arrays.toString(ids));
            if (r < 0) continue;
            Node n = nodes.get(r);
            if (n == null || !n.broker) throw new UserError(what + ": " + r + " is not a broker of the cluster (brokers: " + brokerIds + ")");
        }
    }

    void startReassignment(Part p, int[] target, long rate, boolean auto) throws Exception {
        if (p.reassigning()) throw new UserError("start_reassignment: " + p.topic.name + "-" + p.index
                + " is already being reassigned; complete or cancel it first");
        if (target.length == 0) throw new UserError("start_reassignment: the target replica list is empty");
        checkBrokers(target, "start_reassignment");
        for (int r : target) if (r < 0) throw new UserError("start_reassignment: placeholder " + r + " cannot be a target");
        if (rate <= 0) throw new UserError("start_reassignment: bytes_per_sec must be positive");
        int[] adding = Part.minus(target, p.replicas);
        int[] removing = Part.minus(p.replicas, target);
        if (adding.length == 0 && removing.length == 0) return; // Kafka: nothing to do
        p.original = p.replicas;
        p.replicas = concat(target, removing);
        p.adding = adding;
        p.removing = removing;
        p.copied = new long[adding.length];
        p.carry = new long[adding.length];
        p.rate = rate;
        p.autoComplete = auto;
        if (auto) completeReassignment(p, false);
    }

    static int[] concat(int[] a, int[] b) {
        int[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    int[] target(Part p) {
        return Part.minus(p.replicas, p.removing);
    }

    /** The controller completes a reassignment once every target replica is in the ISR. */
    void completeReassignment(Part p, boolean force) throws Exception {
        if (!p.reassigning()) {
            if (force) throw new UserError("complete_reassignment: " + p.topic.name + "-" + p.index + " is not being reassigned");
            return;
        }
        int[] target = target(p);
        if (force) {
            for (int a : p.adding) {
                Node n = nodes.get(a);
                if (n != null && n.alive && p.leader >= 0 && !Part.has(p.isr, a)) {
                    setIsr(p, Part.with(p.isr, a));
                    nodes.get(p.leader).mark("IsrExpandsPerSec", 1);
                }
            }
        }
        int[] missing = Part.minus(target, p.isr);
        if (missing.length > 0) {
            if (force) throw new UserError("complete_reassignment: target replicas " + Arrays.toString(missing)
                    + " of " + p.topic.name + "-" + p.index + " are not in the ISR (failed or not caught up)");
            return;
        }
        hostingDirty = true;
        p.replicas = target;
        setIsr(p, Part.intersect(p.isr, target));
        p.adding = new int[0];
        p.removing = new int[0];
        p.original = null;
        p.copied = null;
        p.carry = null;
        if (!Part.has(target, p.leader)) p.leader = electLeader(target, p.isr);
    }

    void cancelReassignment(Part p) {
        if (!p.reassigning()) throw new UserError("cancel_reassignment: " + p.topic.name + "-" + p.index + " is not being reassigned");
        int[] original = p.original;
        int[] isr = Part.intersect(p.isr, original);
        if (isr.length == 0) {
            // Kafka's PartitionReassignmentRevert: an empty ISR would need an unclean leader election.
            throw new UserError("cancel_reassignment: no original replica of " + p.topic.name + "-" + p.index
                    + " is in the ISR " + Arrays.toString(p.isr) + "; reverting would need an unclean leader election");
        }
        p.replicas = original;
        setIsr(p, isr);
        hostingDirty = true;
        p.adding = new int[0];
        p.removing = new int[0];
        p.original = null;
        p.copied = null;
        p.carry = null;
        if (!Part.has(original, p.leader)) p.leader = electLeader(original, p.isr);
    }

    int electPreferred() {
        int n = 0;
        for (Topic t : topics.values()) {
            for (Part p : t.parts) {
                if (p.replicas.length == 0) continue;
                int pref = p.replicas[0];
                if (pref < 0 || pref == p.leader || !Part.has(p.isr, pref)) continue;
                Node node = nodes.get(pref);
                if (node == null || !node.alive) continue;
                p.leader = pref;
                n++;
            }
        }
        return n;
    }

    void createTopic(Map<String, Object> e) {
        String name = Json.str(e.get("name"), "name");
        if (!name.matches("[a-zA-Z0-9._-]+") || name.length() > 249)
            throw new UserError("create_topic: '" + name + "' is not a valid topic name (use [a-zA-Z0-9._-], at most 249 characters)");
        if (topics.containsKey(name)) throw new UserError("create_topic: topic '" + name + "' already exists");
        int minIsr = Json.i(e.getOrDefault("min_isr", 1L), "min_isr");
        if (minIsr < 1) throw new UserError("create_topic: min_isr must be at least 1");
        Topic t = new Topic(name, minIsr);
        Object parts = e.get("partitions");
        if (parts instanceof List) {
            List<Object> ps = Json.list(parts, "partitions");
            for (int k = 0; k < ps.size(); k++) {
                Map<String, Object> pm = Json.obj(ps.get(k), "partition");
                Part p = new Part(t, k);
                p.replicas = Json.ints(pm.get("replicas"), "replicas");
                checkBrokers(p.replicas, "create_topic");
                if (pm.containsKey("isr")) {
                    p.isr = Json.ints(pm.get("isr"), "isr");
                } else {
                    int n = 0;
                    int[] isr = new int[p.replicas.length];
                    for (int r : p.replicas) if (r >= 0 && nodes.get(r).alive) isr[n++] = r;
                    p.isr = Arrays.copyOf(isr, n);
                }
                for (int r : p.isr) if (!Part.has(p.replicas, r)) throw new UserError("create_topic: ISR member " + r + " is not a replica");
                p.leader = pm.get("leader") == null ? electLeader(p.replicas, p.isr) : Json.i(pm.get("leader"), "leader");
                if (p.leader >= 0 && !Part.has(p.isr, p.leader)) throw new UserError("create_topic: leader " + p.leader + " is not in the ISR");
                t.parts.add(p);
            }
        } else {
            int count = Json.i(parts, "partitions");
            int rf = Json.i(e.getOrDefault("replication_factor", 1L), "replication_factor");
            boolean under = Json.bool(e.get("allow_under_replicated"), false);
            if (count < 1 || rf < 1) throw new UserError("create_topic: partitions and replication_factor must be at least 1");
            List<Integer> live = new ArrayList<>();
            for (int b : brokerIds) if (nodes.get(b).alive) live.add(b);
            int have = Math.min(rf, live.size());
            if (live.size() < rf) {
                int needed = Math.min(minIsr, rf);
                if (!under) throw new UserError("create_topic: replication factor " + rf + " is larger than the "
                        + live.size() + " live brokers; pass allow_under_replicated to create it with placeholder replicas (-1, -2, ...)");
                if (live.size() < needed) throw new UserError("create_topic: even with placeholders at least min(min_isr, RF) = "
                        + needed + " live brokers are needed, " + live.size() + " are live");
            }
            if (live.isEmpty()) throw new UserError("create_topic: no live broker");
            for (int k = 0; k < count; k++) {
                Part p = new Part(t, k);
                p.replicas = new int[rf];
                for (int j = 0; j < rf; j++) p.replicas[j] = j < have ? live.get((k + j) % live.size()) : -(j - have + 1);
                p.isr = Arrays.copyOf(p.replicas, have);
                p.leader = p.replicas[0];
                t.parts.add(p);
            }
        }
        topics.put(name, t);
    }

    void deleteTopic(Topic t) throws Exception {
        topics.remove(t.name);
        traffic.remove(t.name);
        for (Node n : nodes.values()) {
            for (Part p : t.parts) if (n.hosted.contains(p)) n.unregisterPartition(p);
            n.dropTopic(t.name);
        }
    }

    void setTraffic(Map<String, Object> e) {
        String topic = e.get("topic") == null ? "*" : Json.str(e.get("topic"), "topic");
        if (!topic.equals("*") && !topics.containsKey(topic)) throw new UserError("traffic: no topic '" + topic + "'");
        Traffic tr = traffic.computeIfAbsent(topic, Traffic::new);
        tr.bytesIn = e.get("bytes_in_per_sec") == null ? 0 : Json.l(e.get("bytes_in_per_sec"), "bytes_in_per_sec");
        tr.messagesIn = e.get("messages_in_per_sec") == null ? 0 : Json.l(e.get("messages_in_per_sec"), "messages_in_per_sec");
        tr.bytesOut = e.get("bytes_out_per_sec") == null ? 0 : Json.l(e.get("bytes_out_per_sec"), "bytes_out_per_sec");
        if (tr.bytesIn < 0 || tr.messagesIn < 0 || tr.bytesOut < 0) throw new UserError("traffic: rates must not be negative");
        if (tr.bytesIn == 0 && tr.messagesIn == 0 && tr.bytesOut == 0) traffic.remove(topic);
    }

    void produce(Map<String, Object> e) throws Exception {
        String topic = e.get("topic") == null ? "*" : Json.str(e.get("topic"), "topic");
        if (!topic.equals("*") && !topics.containsKey(topic)) throw new UserError("produce: no topic '" + topic + "'");
        long bytes = e.get("bytes") == null ? 0 : Json.l(e.get("bytes"), "bytes");
        long msgs = e.get("messages") == null ? 0 : Json.l(e.get("messages"), "messages");
        long out = e.get("bytes_out") == null ? 0 : Json.l(e.get("bytes_out"), "bytes_out");
        if (bytes < 0 || msgs < 0 || out < 0) throw new UserError("produce: amounts must not be negative");
        distribute(topic, bytes, msgs, out, -1);
    }

    // ----- time ------------------------------------------------------------------------------------

    void advanceTo(long target) throws Exception {
        boolean changed = false;
        while (clock.nanos < target) {
            long step = Math.min(1_000_000_000L, target - clock.nanos);
            clock.nanos += step;
            changed |= step(step);
        }
        if (changed) {
            stamp++;
            syncHosting();
        }
    }

    /** One step of at most a second; true when a partition's ISR or assignment changed. */
    private boolean step(long ns) throws Exception {
        boolean changed = false;
        for (Traffic tr : new ArrayList<>(traffic.values())) {
            long in = tr.bytesIn * ns + tr.carryIn;
            long msgs = tr.messagesIn * ns + tr.carryMsgs;
            long out = tr.bytesOut * ns + tr.carryOut;
            tr.carryIn = in % 1_000_000_000L;
            tr.carryMsgs = msgs % 1_000_000_000L;
            tr.carryOut = out % 1_000_000_000L;
            distribute(tr.topic, in / 1_000_000_000L, msgs / 1_000_000_000L, out / 1_000_000_000L, clock.nanos - ns);
        }
        for (Topic t : topics.values()) {
            for (Part p : t.parts) {
                if (p.adding.length == 0 || p.copied == null || p.leader < 0) continue;
                Node leader = nodes.get(p.leader);
                for (int k = 0; k < p.adding.length; k++) {
                    int a = p.adding[k];
                    Node n = a < 0 ? null : nodes.get(a);
                    if (n == null || !n.alive || Part.has(p.isr, a)) continue;
                    long budget = p.rate * ns + p.carry[k];
                    p.carry[k] = budget % 1_000_000_000L;
                    long bytes = Math.min(budget / 1_000_000_000L, p.size - p.copied[k]);
                    if (bytes > 0) {
                        p.copied[k] += bytes;
                        // ReplicaFetcherThread / ReplicaManager: reassignment bytes are also replication bytes.
                        long from = clock.nanos - ns;
                        n.markOver("ReassignmentBytesInPerSec", bytes, from);
                        n.markOver("ReplicationBytesInPerSec", bytes, from);
                        leader.markOver("ReassignmentBytesOutPerSec", bytes, from);
                        leader.markOver("ReplicationBytesOutPerSec", bytes, from);
                    }
                    if (p.copied[k] >= p.size && p.autoComplete) {
                        setIsr(p, Part.with(p.isr, a)); // caught up: the leader expands the ISR
                        leader.mark("IsrExpandsPerSec", 1);
                        changed = true;
                    }
                }
                if (p.autoComplete) completeReassignment(p, false);
            }
        }
        return changed;
    }

    /** Produce (and consume) on a topic's partitions, evenly over those with a leader. */
    void distribute(String topic, long bytes, long msgs, long out, long from) throws Exception {
        if (bytes == 0 && msgs == 0 && out == 0) return;
        List<Part> targets = new ArrayList<>();
        for (Topic t : topics.values()) {
            if (!topic.equals("*") && !t.name.equals(topic)) continue;
            for (Part p : t.parts) if (p.leader >= 0) targets.add(p);
        }
        int n = targets.size();
        if (n == 0) return;
        for (int k = 0; k < n; k++) {
            Part p = targets.get(k);
            long b = bytes / n + (k < bytes % n ? 1 : 0);
            long m = msgs / n + (k < msgs % n ? 1 : 0);
            long o = out / n + (k < out % n ? 1 : 0);
            if (b == 0 && m == 0 && o == 0) continue;
            Node leader = nodes.get(p.leader);
            String tn = p.topic.name;
            if (b > 0 || m > 0) {
                leader.markTopic(tn, "BytesInPerSec", b, from);
                leader.markOver("BytesInPerSec", b, from);
                leader.markTopic(tn, "MessagesInPerSec", m, from);
                leader.markOver("MessagesInPerSec", m, from);
                leader.markTopic(tn, "TotalProduceRequestsPerSec", 1, from);
                leader.markOver("TotalProduceRequestsPerSec", 1, from);
                p.size += b;
                p.leo += m;
                for (int f : p.isr) {
                    if (f == p.leader) continue;
                    Node fn = nodes.get(f);
                    if (fn == null || !fn.alive) continue;
                    fn.markOver("ReplicationBytesInPerSec", b, from);
                    leader.markOver("ReplicationBytesOutPerSec", b, from);
                }
            }
            if (o > 0) {
                leader.markTopic(tn, "BytesOutPerSec", o, from);
                leader.markOver("BytesOutPerSec", o, from);
            }
        }
    }

    /** Registers and unregisters Partition/Log beans so each live served broker has one set per hosted replica. */
    void syncHosting() throws Exception {
        if (!hostingDirty) return;
        hostingDirty = false;
        for (Node n : nodes.values()) {
            if (!n.alive || !n.broker) continue;
            Set<Part> want = new HashSet<>();
            List<Part> added = new ArrayList<>();
            for (Topic t : topics.values()) {
                for (Part p : t.parts) {
                    if (Part.has(p.replicas, n.id)) {
                        want.add(p);
                        if (!n.hosted.contains(p)) added.add(p);
                    }
                }
            }
            n.registerPartitions(added);
            if (want.size() != n.hosted.size()) {
                for (Iterator<Part> it = new ArrayList<>(n.hosted).iterator(); it.hasNext(); ) {
                    Part p = it.next();
                    if (!want.contains(p)) n.unregisterPartition(p);
                }
            }
        }
        syncReplication();
    }

    /** Every live replica that is not its partition's leader fetches from the live leader, in sync or not. */
    void syncReplication() throws Exception {
        if (inventory == null) return;
        for (Node n : nodes.values()) {
            if (!n.alive || !n.broker) continue;
            Map<Part, Integer> follows = new HashMap<>();
            for (Topic t : topics.values()) {
                for (Part p : t.parts) {
                    if (p.leader < 0 || p.leader == n.id || !Part.has(p.replicas, n.id)) continue;
                    Node leader = nodes.get(p.leader);
                    if (leader == null || !leader.alive) continue;
                    follows.put(p, p.leader);
                    leader.serveFollower(p);
                }
            }
            n.syncFetchers(follows);
        }
        // KRaft: every other live node fetches the metadata log from the quorum leader
        Node quorumLeader = kraft ? nodes.get(activeController) : null;
        if (quorumLeader != null && quorumLeader.alive) {
            for (Node n : nodes.values()) {
                if (n != quorumLeader && n.alive) {
                    quorumLeader.servedFetch();
                    break;
                }
            }
        }
    }

    // ----- read back -------------------------------------------------------------------------------

    List<Object> partitionStates() {
        List<Object> out = new ArrayList<>();
        for (Topic t : topics.values()) {
            for (Part p : t.parts) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("topic", t.name);
                m.put("partition", p.index);
                m.put("leader", p.leader);
                m.put("replicas", p.replicas);
                m.put("isr", p.isr);
                m.put("adding_replicas", p.adding);
                m.put("removing_replicas", p.removing);
                m.put("elr", p.elr);
                m.put("min_isr", t.minIsr);
                m.put("size_bytes", p.size);
                out.add(m);
            }
        }
        return out;
    }

    Map<String, Object> clusterInfo() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kafka_version", versionText);
        m.put("metadata_mode", kraft ? "kraft" : "zookeeper");
        m.put("brokers", brokerIds);
        List<Integer> controllers = new ArrayList<>(), live = new ArrayList<>(), liveBrokers = new ArrayList<>();
        Map<String, Object> urls = new LinkedHashMap<>();
        for (Node n : nodes.values()) {
            if (n.controller) controllers.add(n.id);
            if (n.alive) live.add(n.id);
            if (n.alive && n.broker) liveBrokers.add(n.id);
            if (n.endpoint != null) urls.put(Integer.toString(n.id), n.endpoint.url());
        }
        m.put("controllers", controllers);
        m.put("live_nodes", live);
        m.put("live_brokers", liveBrokers);
        m.put("active_controller", activeController);
        m.put("posed", posed.id);
        m.put("urls", urls);
        m.put("clock_ms", clock.nanos / 1_000_000L);
        m.put("epoch_ms", clock.epochMs());
        int parts = 0;
        for (Topic t : topics.values()) parts += t.parts.size();
        m.put("topics", topics.size());
        m.put("partitions", parts);
        return m;
    }
}
