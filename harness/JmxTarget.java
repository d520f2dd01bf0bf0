// A bare JVM that serves Kafka-shaped MBeans of known values over real JMX/RMI, for the tests of
// exporter/jmx. Started by harness/jmx_target.py with the com.sun.management.jmxremote.*
// flags (port, auth, SSL); the MBeans are registered here. Not the project's broker simulator:
// only what the JMX client's tests need (every value type, counters of the calls served, values
// that can be changed from stdin).
//
// System properties:
//   target.topics, target.partitions  partitions per topic (default 0 topics)
//   target.delay.ms                    sleep in every getAttributes (a slow network, for the
//                                      test that parallel connections overlap their waits)
//   target.query.delay.ms              sleep in every queryNames and queryMBeans, counting how many
//                                      ran at once
//                                      (needs -Djavax.management.builder.initial=JmxTarget$Builder)
// Partition gauges (kafka.cluster:type=Partition,name=N,topic=tT,partition=P), values from
// (T * partitions + P) = i:
//   UnderReplicated      Integer  1 when i % 7 == 3, else 0
//   InSyncReplicasCount  Integer  i % 4, except 9 when i % 50 == 49
//   LastStableOffsetLag  Long     i % 3, except 1000000 + i when i % 40 == 39
// Plus test:type=ByteGauge,topic=tT,partition=P (Byte, i % 2), one Meter per topic
// (kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=tT), a KafkaMbean-like bean
// (kafka.server:type=Fetch) and test:type=Types with every value type.
//
// Stdin commands, one per line, each answered with one line on stdout:
//   counts                        -> "COUNTS getAttributes=A getAttribute=B getMBeanInfo=C writes=D overlapped=E
//                                    queriesAtOnce=F" (E: getAttribute calls, a query's, served while a
//                                    getAttributes was; F: the most queries served at once)
//   reset                         -> "OK" (counters to 0)
//   set NAME int|long|byte|double|string V -> "OK" (the Value of a gauge)
//   add NAME int|long V           -> "OK" (registers a new gauge)
//   remove NAME                   -> "OK"
//   fetch-attr NAME               -> "OK" (adds an attribute to kafka.server:type=Fetch)
import java.lang.management.ManagementFactory;
import java.io.*;
import java.math.*;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import javax.management.*;
import javax.management.openmbean.*;

public class JmxTarget {
    static final AtomicLong GET_ATTRIBUTES = new AtomicLong();
    static final AtomicLong GET_ATTRIBUTE = new AtomicLong();
    static final AtomicLong GET_MBEAN_INFO = new AtomicLong();
    static final AtomicLong WRITES = new AtomicLong();  // invoke, setAttribute(s): must stay 0
    static final long DELAY_MS = Long.getLong("target.delay.ms", 0L);
    static final AtomicLong IN_FLIGHT = new AtomicLong();  // getAttributes being served now
    static final AtomicLong OVERLAPPED = new AtomicLong();  // getAttribute (a query's) served meanwhile
    static final long QUERY_DELAY_MS = Long.getLong("target.query.delay.ms", 0L);
    static final AtomicLong QUERIES_IN_FLIGHT = new AtomicLong();
    static final AtomicLong QUERIES_AT_ONCE = new AtomicLong();

    /** The platform MBeanServer with its queries slowed and counted: JMX offers no other hook
     *  into the server the jmxremote agent serves. */
    public static class Builder extends MBeanServerBuilder {
        @Override
        public MBeanServer newMBeanServer(String domain, MBeanServer outer, MBeanServerDelegate delegate) {
            MBeanServer inner = super.newMBeanServer(domain, outer, delegate);
            return (MBeanServer) java.lang.reflect.Proxy.newProxyInstance(MBeanServer.class.getClassLoader(),
                    new Class<?>[] {MBeanServer.class}, (proxy, method, args) -> {
                        boolean query = method.getName().equals("queryNames") || method.getName().equals("queryMBeans");
                        if (query) {
                            QUERIES_AT_ONCE.accumulateAndGet(QUERIES_IN_FLIGHT.incrementAndGet(), Math::max);
                            Thread.sleep(QUERY_DELAY_MS);
                        }
                        try {
                            return method.invoke(inner, args);
                        } catch (java.lang.reflect.InvocationTargetException e) {
                            throw e.getCause();
                        } finally {
                            if (query) QUERIES_IN_FLIGHT.decrementAndGet();
                        }
                    });
        }
    }

    /** An MBean whose attributes are a map; its class name is whatever Kafka would report. */
    public static class Bean implements DynamicMBean {
        final String className;
        final Map<String, Object> values = new ConcurrentHashMap<>();
        final Map<String, String> types = Collections.synchronizedMap(new LinkedHashMap<>());
        final Set<String> writeOnly = ConcurrentHashMap.newKeySet();
        final Set<String> throwing = ConcurrentHashMap.newKeySet();

        Bean(String className) { this.className = className; }

        Bean put(String name, String type, Object value) {
            types.put(name, type);
            if (value != null) values.put(name, value); else values.remove(name);
            return this;
        }

        public Object getAttribute(String name) throws AttributeNotFoundException, MBeanException {
            GET_ATTRIBUTE.incrementAndGet();
            if (IN_FLIGHT.get() > 0) OVERLAPPED.incrementAndGet();
            return read(name);
        }

        Object read(String name) throws AttributeNotFoundException, MBeanException {
            if (!types.containsKey(name) || writeOnly.contains(name)) throw new AttributeNotFoundException(name);
            if (throwing.contains(name)) throw new MBeanException(new IllegalStateException("broken " + name));
            return values.get(name);
        }

        public AttributeList getAttributes(String[] names) {
            GET_ATTRIBUTES.incrementAndGet();
            IN_FLIGHT.incrementAndGet();
            try {
                if (DELAY_MS > 0) Thread.sleep(DELAY_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                IN_FLIGHT.decrementAndGet();
            }
            AttributeList out = new AttributeList();
            for (String n : names) {
                try { out.add(new Attribute(n, read(n))); } catch (Exception e) { /* omitted, as the JMX spec says */ }
            }
            return out;
        }

        public void setAttribute(Attribute a) {
            WRITES.incrementAndGet();
            throw new UnsupportedOperationException("read-only");
        }
        public AttributeList setAttributes(AttributeList l) {
            WRITES.incrementAndGet();
            return new AttributeList();
        }
        public Object invoke(String op, Object[] p, String[] s) throws MBeanException {
            WRITES.incrementAndGet();
            throw new MBeanException(new UnsupportedOperationException("the JMX client must never invoke operations: " + op));
        }

        public MBeanInfo getMBeanInfo() {
            GET_MBEAN_INFO.incrementAndGet();
            List<MBeanAttributeInfo> attrs = new ArrayList<>();
            synchronized (types) {
                for (Map.Entry<String, String> e : types.entrySet()) {
                    boolean readable = !writeOnly.contains(e.getKey());
                    attrs.add(new MBeanAttributeInfo(e.getKey(), e.getValue(), "Attribute exposed for management",
                            readable, !readable, false));
                }
            }
            return new MBeanInfo(className, "", attrs.toArray(new MBeanAttributeInfo[0]), null, null, null);
        }
    }

    static final String GAUGE = "com.yammer.metrics.reporting.JmxReporter$Gauge";
    static final String METER = "com.yammer.metrics.reporting.JmxReporter$Meter";
    static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();
    static final Map<String, Bean> BEANS = new ConcurrentHashMap<>();

    static void register(String name, Bean bean) throws Exception {
        SERVER.registerMBean(bean, new ObjectName(name));
        BEANS.put(name, bean);
    }

    static Bean gauge(Object value) { return new Bean(GAUGE).put("Value", "java.lang.Object", value); }

    static Object parse(String type, String v) {
        switch (type) {
            case "int": return Integer.valueOf(v);
            case "long": return Long.valueOf(v);
            case "byte": return Byte.valueOf(v);
            case "double": return Double.valueOf(v);
            default: return v;
        }
    }

    public static void main(String[] args) throws Exception {
        int topics = Integer.getInteger("target.topics", 0);
        int partitions = Integer.getInteger("target.partitions", 0);
        for (int t = 0; t < topics; t++) {
            for (int p = 0; p < partitions; p++) {
                int i = t * partitions + p;
                String tags = ",topic=t" + t + ",partition=" + p;
                register("kafka.cluster:type=Partition,name=UnderReplicated" + tags, gauge(i % 7 == 3 ? 1 : 0));
                register("kafka.cluster:type=Partition,name=InSyncReplicasCount" + tags, gauge(i % 50 == 49 ? 9 : i % 4));
                register("kafka.cluster:type=Partition,name=LastStableOffsetLag" + tags,
                        gauge(i % 40 == 39 ? 1000000L + i : (long) (i % 3)));
                register("test:type=ByteGauge,topic=t" + t + ",partition=" + p, gauge((byte) (i % 2)));
            }
            register("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t" + t, meter(t));
        }
        register("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", meter(-1));
        register("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", gauge(0));
        register("kafka.server:type=Fetch", new Bean("org.apache.kafka.common.metrics.JmxReporter$KafkaMbean")
                .put("queue-size", "double", 0.0));
        register("test:type=Types", types());
        System.out.println("READY");
        System.out.flush();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ", 4);
            try {
                switch (w[0]) {
                    case "counts":
                        System.out.println("COUNTS getAttributes=" + GET_ATTRIBUTES.get() + " getAttribute="
                                + GET_ATTRIBUTE.get() + " getMBeanInfo=" + GET_MBEAN_INFO.get()
                                + " writes=" + WRITES.get() + " overlapped=" + OVERLAPPED.get()
                                + " queriesAtOnce=" + QUERIES_AT_ONCE.get());
                        break;
                    case "reset":
                        GET_ATTRIBUTES.set(0); GET_ATTRIBUTE.set(0); GET_MBEAN_INFO.set(0); OVERLAPPED.set(0);
                        QUERIES_AT_ONCE.set(0);
                        System.out.println("OK");
                        break;
                    case "set":
                        BEANS.get(w[1]).put("Value", "java.lang.Object", parse(w[2], w[3]));
                        System.out.println("OK");
                        break;
                    case "add":
                        register(w[1], gauge(parse(w[2], w[3])));
                        System.out.println("OK");
                        break;
                    case "remove":
                        SERVER.unregisterMBean(new ObjectName(w[1]));
                        BEANS.remove(w[1]);
                        System.out.println("OK");
                        break;
                    case "fetch-attr":
                        BEANS.get("kafka.server:type=Fetch").put(w[1], "double", 1.5);
                        System.out.println("OK");
                        break;
                    default:
                        System.out.println("ERROR unknown command " + w[0]);
                }
            } catch (Exception e) {
                System.out.println("ERROR " + e);
            }
            System.out.flush();
        }
        Thread.sleep(Long.MAX_VALUE);  // stdin closed: keep serving until killed
    }

    static Bean meter(int t) {
        long count = t < 0 ? 123456789012L : 1000L * (t + 1);
        return new Bean(METER)
                .put("EventType", "java.lang.String", "bytes")
                .put("Count", "long", count)
                .put("FifteenMinuteRate", "double", 1.5)
                .put("RateUnit", "java.util.concurrent.TimeUnit", java.util.concurrent.TimeUnit.SECONDS)
                .put("MeanRate", "double", 45.78352056167364)
                .put("OneMinuteRate", "double", 1.0E9)
                .put("FiveMinuteRate", "double", Double.NaN);
    }

    static Bean types() throws Exception {
        CompositeType usage = new CompositeType("Usage", "a usage",
                new String[] {"used", "max", "name"}, new String[] {"used", "max", "name"},
                new OpenType<?>[] {SimpleType.LONG, SimpleType.LONG, SimpleType.STRING});
        CompositeData composite = new CompositeDataSupport(usage, new String[] {"used", "max", "name"},
                new Object[] {123456L, -1L, "heap"});
        CompositeType row = new CompositeType("Row", "a row", new String[] {"key", "value"},
                new String[] {"key", "value"}, new OpenType<?>[] {SimpleType.STRING, SimpleType.INTEGER});
        TabularType tabularType = new TabularType("Table", "a table", row, new String[] {"key"});
        TabularDataSupport tabular = new TabularDataSupport(tabularType);
        tabular.put(new CompositeDataSupport(row, new String[] {"key", "value"}, new Object[] {"a", 1}));
        tabular.put(new CompositeDataSupport(row, new String[] {"key", "value"}, new Object[] {"b", 2}));
        Bean b = new Bean("test.Types")
                .put("Long", "long", 9007199254740993L)
                .put("LongMax", "long", Long.MAX_VALUE)
                .put("Integer", "int", -42)
                .put("Short", "short", (short) 7)
                .put("Byte", "byte", (byte) -3)
                .put("Double", "double", 0.1)
                .put("DoubleBig", "double", 1.0E9)
                .put("DoubleNaN", "double", Double.NaN)
                .put("DoubleInf", "double", Double.NEGATIVE_INFINITY)
                .put("Float", "float", 1.5f)
                .put("BigInteger", "java.math.BigInteger", new BigInteger("123456789012345678901234567890"))
                .put("BigDecimal", "java.math.BigDecimal", new BigDecimal("2.5"))
                .put("AtomicLong", "java.util.concurrent.atomic.AtomicLong", new AtomicLong(77))
                .put("True", "boolean", true)
                .put("False", "java.lang.Boolean", false)
                .put("String", "java.lang.String", "hello, wörld")
                .put("StringControl", "java.lang.String", "a\u001eb\u001fc\nd\\e")
                .put("EmptyString", "java.lang.String", "")
                .put("Enum", "java.util.concurrent.TimeUnit", java.util.concurrent.TimeUnit.SECONDS)
                .put("Date", "java.util.Date", new Date(1700000000123L))
                .put("IntArray", "[I", new int[] {1, 2})
                .put("StringArray", "[Ljava.lang.String;", new String[] {"x"})
                .put("Null", "java.lang.Object", null)
                .put("Composite", "javax.management.openmbean.CompositeData", composite)
                .put("Tabular", "javax.management.openmbean.TabularData", tabular)
                .put("Optional", "java.util.Optional", Optional.of(5L))
                .put("OptionalEmpty", "java.util.Optional", Optional.empty())
                .put("Unsupported", "java.util.UUID", new UUID(1, 2))
                .put("Character", "char", 'c')
                .put("WriteOnly", "int", 1)
                .put("Throwing", "int", 1);
        b.writeOnly.add("WriteOnly");
        b.throwing.add("Throwing");
        return b;
    }
}
