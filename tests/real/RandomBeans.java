// A JVM of random MBeans for the seeded property test (tests/real/test_property_vs_jmx_exporter.py):
// given a seed, it registers the same MBeans every time, served over remote JMX (started by
// tests/real/random_beans.py with the com.sun.management.jmxremote.* flags), with every value
// shape jmx_exporter flattens: each Java number type (NaN, +/-Infinity, -0.0, BigInteger beyond a
// long, BigDecimal with its scale), AtomicInteger/AtomicLong, Date, booleans, strings, enums (one
// with a constant body), nulls, arrays, CompositeData and TabularData (nested, several index
// columns, index columns named like a key property, a column named `value` or `Value`), MXBeans,
// and values no client can read (not serializable, a class only this JVM has). ObjectNames have
// quoted values, unicode, characters a metric name cannot hold, several key orders, and names that
// collide once sanitised; descriptions are missing, empty, equal to the attribute name or hold
// characters HELP must escape; MBeanInfo class names vary. Kafka-shaped per-partition gauges
// (`kafka.cluster:type=Partition,name=N,topic=T,partition=P`) exercise the sidecar's table path.
//
// Values never change: two exporters reading it see the same thing.
//
//   java -cp DIR RandomBeans SEED
// prints one line per leaf the rule generator may aim at, `HEAD <domain><k=v, ...><path>attr`
// (an approximation of jmx_exporter's match string before `: value`), then `READY`, and serves
// until stdin closes.
import java.lang.management.ManagementFactory;
import java.io.*;
import java.math.*;
import java.time.temporal.IsoFields;
import java.util.*;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.*;
import javax.management.*;
import javax.management.openmbean.*;

public class RandomBeans {
    static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();
    static Random random;
    static final List<String> HEADS = new ArrayList<>();

    /** An MBean whose attributes are a map, with the MBeanInfo it is told to report. */
    public static class Bean implements DynamicMBean {
        final String className;
        final Map<String, Object> values = new LinkedHashMap<>();
        final List<MBeanAttributeInfo> infos = new ArrayList<>();

        Bean(String className) { this.className = className; }

        Bean put(String name, String type, String description, Object value) {
            values.put(name, value);
            infos.add(new MBeanAttributeInfo(name, type, description, true, false, false));
            return this;
        }

        public Object getAttribute(String name) throws AttributeNotFoundException {
            if (!values.containsKey(name)) throw new AttributeNotFoundException(name);
            return values.get(name);
        }

        public AttributeList getAttributes(String[] names) {
            AttributeList out = new AttributeList();
            for (String n : names) if (values.containsKey(n)) out.add(new Attribute(n, values.get(n)));
            return out;
        }

        public void setAttribute(Attribute a) { throw new UnsupportedOperationException("read-only"); }
        public AttributeList setAttributes(AttributeList l) { return new AttributeList(); }
        public Object invoke(String op, Object[] p, String[] s) throws MBeanException {
            throw new MBeanException(new UnsupportedOperationException(op));
        }

        public MBeanInfo getMBeanInfo() {
            return new MBeanInfo(className, "a random bean", infos.toArray(new MBeanAttributeInfo[0]), null, null, null);
        }
    }

    /** Serializable, but no client has this class: reading it fails on the client's side. */
    public static class Payload implements Serializable {
        private static final long serialVersionUID = 1L;
        final int n = 7;
    }

    // --- an MXBean: the platform's own mapping to open types (records -> CompositeData, Map ->
    // TabularData with `key` and `value` columns, List -> array, enum -> String)
    public static class Inner {
        private final long z;
        private final String tag;
        public Inner(long z, String tag) { this.z = z; this.tag = tag; }
        public long getZ() { return z; }
        public String getTag() { return tag; }
    }

    public static class Point {
        private final int x;
        private final double y;
        private final String label;
        private final Inner inner;
        public Point(int x, double y, String label, Inner inner) { this.x = x; this.y = y; this.label = label; this.inner = inner; }
        public int getX() { return x; }
        public double getY() { return y; }
        public String getLabel() { return label; }
        public Inner getInner() { return inner; }
    }

    public interface SampleMXBean {
        int getCount();
        long getTotalBytes();
        double getRatio();
        float getLoad();
        boolean isEnabled();
        Boolean getBoxed();
        String getState();
        TimeUnit getUnit();
        Date getStarted();
        Point getPosition();
        List<String> getNames();
        Map<String, Long> getSizes();
        Map<String, Point> getPoints();
        long[] getHistory();
    }

    public static class Sample implements SampleMXBean {
        final int count; final long totalBytes; final double ratio; final float load; final boolean enabled;
        final Boolean boxed; final String state; final TimeUnit unit; final Date started; final Point position;
        final Map<String, Long> sizes = new LinkedHashMap<>();
        final Map<String, Point> points = new LinkedHashMap<>();

        Sample(Random r) {
            count = r.nextInt(2000) - 1000;
            totalBytes = r.nextBoolean() ? r.nextLong() : r.nextInt(100);
            ratio = pick(r, new double[] {0.5, Double.NaN, 1e-7, 3.0e12, -0.0, 1.0 / 3});
            load = pick(r, new float[] {0.1f, 1.5f, Float.NaN, Float.POSITIVE_INFINITY, 3.4e38f, 1e-9f});
            enabled = r.nextBoolean();
            boxed = r.nextInt(3) == 0 ? null : Boolean.valueOf(r.nextBoolean());
            state = pick(r, new String[] {"RUNNING", "1.25", "", "a:b"});
            unit = pick(r, TimeUnit.values());
            started = new Date(1700000000000L + r.nextInt(1000000) * 1000L + r.nextInt(1000));
            position = new Point(r.nextInt(10), r.nextDouble(), "p" + r.nextInt(5),
                    r.nextBoolean() ? new Inner(r.nextInt(9), "in") : null);
            for (int i = 0, n = r.nextInt(4); i < n; i++) sizes.put(pick(r, WORDS), (long) r.nextInt(1 << 20));
            for (int i = 0, n = r.nextInt(3); i < n; i++) points.put(pick(r, WORDS), new Point(i, i * 0.5, "pt", null));
        }
        public int getCount() { return count; }
        public long getTotalBytes() { return totalBytes; }
        public double getRatio() { return ratio; }
        public float getLoad() { return load; }
        public boolean isEnabled() { return enabled; }
        public Boolean getBoxed() { return boxed; }
        public String getState() { return state; }
        public TimeUnit getUnit() { return unit; }
        public Date getStarted() { return started; }
        public Point getPosition() { return position; }
        public List<String> getNames() { return Arrays.asList("a", "b"); }
        public Map<String, Long> getSizes() { return sizes; }
        public Map<String, Point> getPoints() { return points; }
        public long[] getHistory() { return new long[] {1, 2, 3}; }
    }

    // --- vocabularies
    static final String[] WORDS = {"alpha", "Beta", "gamma-ray", "delta.x", "eps_1", "Zeta", "ünï", "日本",
            "x😀y", "9lives", "UPPER", "camelCase", "with space", "a/b", "q", "Value", "count"};
    static final String[] DOMAINS = {"rnd", "rnd.alpha", "Rnd-Beta", "rnd.ünï", "rnd.x_y", "7rnd"};
    static final String[] KEYS = {"type", "name", "id", "Scope", "x-key", "clientId", "topic", "partition", "k"};
    static final String[] ATTRIBUTES = {"Value", "Count", "value", "fooBar", "FooBAR", "HTTPRequests", "snake_case",
            "Mean", "Größe", "x-y", "Rate99", "_hidden", "A", "totalTimeMs", "Count_total", "info"};
    static final String[] DESCRIPTIONS = {null, "", "@NAME", "Attribute exposed for management", "Some value",
            "with \\ backslash", "two\nlines", "a \"quoted\" word", "ünïcödé 😀"};
    // Yammer's reporter classes promise one attribute set per class (the sidecar reads one MBeanInfo
    // per family of them): only Kafka-shaped gauges and meters below claim them.
    static final String GAUGE = "com.yammer.metrics.reporting.JmxReporter$Gauge";
    static final String METER = "com.yammer.metrics.reporting.JmxReporter$Meter";
    static final String[] CLASS_NAMES = {"org.apache.kafka.common.metrics.JmxReporter$KafkaMbean", "rnd.Thing",
            "javax.management.StandardMBean", "rnd.Other$Inner"};
    static final String[] STRINGS = {"", "abc", "1.5", "42", "-7", "NaN", "true", "a:b", "x\"y", "back\\slash",
            "new\nline", "ünï", "😀", "  spaced ", "1e3", "0x10"};

    static <T> T pick(Random r, T[] a) { return a[r.nextInt(a.length)]; }
    static double pick(Random r, double[] a) { return a[r.nextInt(a.length)]; }
    static float pick(Random r, float[] a) { return a[r.nextInt(a.length)]; }

    static String description(String attribute) {
        String d = pick(random, DESCRIPTIONS);
        return "@NAME".equals(d) ? attribute : d;
    }

    /** A key property value: plain, quoted (ObjectName.quote), or one needing sanitising. */
    static String keyValue() {
        int k = random.nextInt(10);
        if (k == 0) return ObjectName.quote(pick(random, STRINGS) + pick(random, WORDS));
        if (k == 1) return ObjectName.quote("a,b=c");
        if (k <= 3) return Integer.toString(random.nextInt(12));
        String w = pick(random, WORDS);
        // ObjectName values may not hold , = : " * ? unquoted
        return w.replace(" ", "_");
    }

    // --- numbers of every type
    static Object[] number() {
        switch (random.nextInt(16)) {
            case 0: return new Object[] {"int", random.nextInt(200) - 100};
            case 1: return new Object[] {"long", pick(random, new Long[] {0L, 1L, Long.MAX_VALUE, Long.MIN_VALUE, 9007199254740993L, 1234567890123L})};
            case 2: return new Object[] {"short", (short) (random.nextInt(600) - 300)};
            case 3: return new Object[] {"byte", (byte) (random.nextInt(256) - 128)};
            case 4: return new Object[] {"float", pick(random, new float[] {0.1f, 1.5f, -2.25f, Float.NaN, Float.NEGATIVE_INFINITY, 1e10f, 3.3e-5f, 16777217f})};
            case 5: return new Object[] {"double", pick(random, new double[] {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY})};
            case 6: return new Object[] {"double", pick(random, new double[] {-0.0, 0.0, Double.MIN_VALUE, Double.MAX_VALUE, 4.9e-324})};
            case 7: return new Object[] {"double", pick(random, new double[] {1e7, 9999999.0, 1e-3, 9.99e-4, 123456789.0, 0.1 + 0.2, 1e21, 100.0})};
            case 8: return new Object[] {"double", random.nextDouble() * Math.pow(10, random.nextInt(20) - 10)};
            case 9: return new Object[] {"java.math.BigInteger", new BigInteger(random.nextBoolean() ? "1180591620717411303424" : "-12")};
            case 10: return new Object[] {"java.math.BigDecimal", new BigDecimal(pick(random, new String[] {"1.10", "2.5", "1E+3", "-0.000001", "123456789.987654321"}))};
            case 11: return new Object[] {"java.util.concurrent.atomic.AtomicInteger", new AtomicInteger(random.nextInt(100))};
            case 12: return new Object[] {"java.util.concurrent.atomic.AtomicLong", new AtomicLong(random.nextLong())};
            case 13: return new Object[] {"java.lang.Integer", Integer.valueOf(random.nextInt(3))};
            case 14: return new Object[] {"java.lang.Double", Double.valueOf(random.nextInt(5) * 0.25)};
            default: return new Object[] {"java.lang.Long", Long.valueOf(random.nextInt(1000))};
        }
    }

    static Object[] value(int depth) throws OpenDataException {
        switch (random.nextInt(depth > 1 ? 14 : 20)) {
            case 0: return new Object[] {"boolean", random.nextBoolean()};
            case 1: return new Object[] {"java.lang.Boolean", Boolean.valueOf(random.nextBoolean())};
            case 2: return new Object[] {"java.lang.String", pick(random, STRINGS)};
            case 3: return new Object[] {"java.util.concurrent.TimeUnit", pick(random, TimeUnit.values())};
            case 4: return new Object[] {"java.time.temporal.TemporalField", IsoFields.QUARTER_OF_YEAR};  // an enum constant with a body
            case 5: return new Object[] {"java.util.Date", new Date(1600000000000L + random.nextInt(1 << 30) * 1000L + random.nextInt(1000))};
            case 6: return new Object[] {"java.lang.Object", null};
            case 7: return new Object[] {"[I", new int[] {1, 2}};
            case 8: return new Object[] {"[Ljava.lang.String;", new String[] {"x"}};
            case 9: case 10: case 11: case 12: case 13: return number();
            case 14: case 15: return new Object[] {"javax.management.openmbean.CompositeData", composite(depth + 1)};
            case 16: case 17: return new Object[] {"javax.management.openmbean.TabularData", tabular(depth + 1)};
            case 18: return new Object[] {"java.util.Optional", Optional.of(5L)};
            default: return new Object[] {"java.lang.Object", new Payload()};
        }
    }

    static OpenType<?> openType(Object v) {
        if (v == null || v instanceof String) return SimpleType.STRING;
        if (v instanceof Integer) return SimpleType.INTEGER;
        if (v instanceof Long) return SimpleType.LONG;
        if (v instanceof Short) return SimpleType.SHORT;
        if (v instanceof Byte) return SimpleType.BYTE;
        if (v instanceof Float) return SimpleType.FLOAT;
        if (v instanceof Double) return SimpleType.DOUBLE;
        if (v instanceof BigInteger) return SimpleType.BIGINTEGER;
        if (v instanceof BigDecimal) return SimpleType.BIGDECIMAL;
        if (v instanceof Boolean) return SimpleType.BOOLEAN;
        if (v instanceof Date) return SimpleType.DATE;
        if (v instanceof CompositeData) return ((CompositeData) v).getCompositeType();
        if (v instanceof TabularData) return ((TabularData) v).getTabularType();
        return null;
    }

    /** A value an open type can hold (open types have no enums, atomics, arrays of objects here). */
    static Object openValue(int depth) throws OpenDataException {
        for (;;) {
            Object v = value(depth)[1];
            if (openType(v) != null && !(v instanceof AtomicInteger) && !(v instanceof AtomicLong)) return v;
        }
    }

    static int compositeCount;

    static CompositeData composite(int depth) throws OpenDataException {
        int n = 1 + random.nextInt(4);
        LinkedHashMap<String, Object> items = new LinkedHashMap<>();
        while (items.size() < n) items.put(pick(random, ATTRIBUTES), openValue(depth));
        String[] names = items.keySet().toArray(new String[0]);
        OpenType<?>[] types = new OpenType<?>[n];
        String[] descriptions = new String[n];
        for (int i = 0; i < n; i++) {
            types[i] = openType(items.get(names[i]));
            descriptions[i] = "item " + names[i];
        }
        CompositeType type = new CompositeType("Composite" + (compositeCount++), pick(random, new String[] {"a composite", "Composite", "with \\ and\nnewline"}),
                names, descriptions, types);
        return new CompositeDataSupport(type, names, items.values().toArray());
    }

    static TabularData tabular(int depth) throws OpenDataException {
        // index columns: 1 or 2, sometimes named like a key property (then renamed with '_'). A
        // nested table's differ from its outer table's: renamed twice (`name__`) one would collide
        // with the once renamed once sanitised, and jmx_exporter 1.x then fails the whole scrape.
        List<String> index = new ArrayList<>();
        index.add(pick(random, depth > 1 ? new String[] {"sub", "idx"} : new String[] {"key", "name", "type", "id"}));
        if (random.nextInt(3) == 0) index.add("slot");
        List<String> columns = new ArrayList<>(index);
        List<OpenType<?>> types = new ArrayList<>();
        for (String c : index) types.add(c.equals("slot") ? SimpleType.INTEGER : SimpleType.STRING);
        String valueColumn = pick(random, new String[] {"value", "Value", null, "count"});
        if (valueColumn != null && !columns.contains(valueColumn)) { columns.add(valueColumn); types.add(SimpleType.DOUBLE); }
        if (random.nextBoolean()) { columns.add("total"); types.add(SimpleType.LONG); }
        Object nested = depth < 2 && random.nextInt(3) == 0 ? (random.nextBoolean() ? composite(depth + 1) : tabular(depth + 1)) : null;
        if (nested != null) { columns.add("nested"); types.add(openType(nested)); }
        if (random.nextBoolean()) { columns.add("flag"); types.add(SimpleType.BOOLEAN); }
        String[] cols = columns.toArray(new String[0]);
        CompositeType row = new CompositeType("Row" + (compositeCount++), pick(random, new String[] {"a row", "Row"}),
                cols, cols, types.toArray(new OpenType<?>[0]));
        TabularDataSupport table = new TabularDataSupport(new TabularType("Table" + (compositeCount++), "a table", row,
                index.toArray(new String[0])));
        Set<List<Object>> seen = new HashSet<>();
        for (int i = 0, n = 1 + random.nextInt(4); i < n; i++) {
            Object[] values = new Object[cols.length];
            List<Object> key = new ArrayList<>();
            for (int c = 0; c < cols.length; c++) {
                OpenType<?> t = types.get(c);
                if (c < index.size()) values[c] = t == SimpleType.INTEGER ? (Object) random.nextInt(4) : pick(random, WORDS);
                else if (t == SimpleType.DOUBLE) values[c] = pick(random, new double[] {1.5, Double.NaN, 0.0, 2e9, -1.0});
                else if (t == SimpleType.LONG) values[c] = (long) random.nextInt(100);
                else if (t == SimpleType.BOOLEAN) values[c] = random.nextBoolean();
                else values[c] = nested;
                if (c < index.size()) key.add(values[c]);
            }
            if (seen.add(key)) table.put(new CompositeDataSupport(row, cols, values));
        }
        return table;
    }

    // --- registration
    static String head(ObjectName name, String path, String attribute) {
        StringBuilder sb = new StringBuilder(name.getDomain()).append('<');
        String keys = name.getKeyPropertyListString();
        sb.append(keys.replace(",", ", ")).append("><").append(path).append('>').append(attribute);
        return sb.toString();
    }

    static void register(ObjectName name, Object bean, List<String> attributes) throws Exception {
        if (SERVER.isRegistered(name)) return;
        SERVER.registerMBean(bean, name);
        for (String a : attributes) HEADS.add(head(name, "", a));
    }

    static ObjectName randomName() throws Exception {
        String domain = pick(random, DOMAINS);
        List<String> keys = new ArrayList<>(Arrays.asList(KEYS));
        Collections.shuffle(keys, random);
        int n = 1 + random.nextInt(4);
        StringBuilder sb = new StringBuilder(domain).append(':');
        for (int i = 0; i < n; i++) {
            if (i > 0) sb.append(',');
            sb.append(keys.get(i)).append('=').append(keyValue());
        }
        return new ObjectName(sb.toString());
    }

    static void randomBean(ObjectName name) throws Exception {
        Bean b = new Bean(pick(random, CLASS_NAMES));
        List<String> attributes = new ArrayList<>();
        for (int i = 0, n = 1 + random.nextInt(6); i < n; i++) {
            String a = pick(random, ATTRIBUTES);
            if (b.values.containsKey(a)) continue;
            Object[] v = value(0);
            b.put(a, (String) v[0], description(a), v[1]);
            attributes.add(a);
        }
        register(name, b, attributes);
    }

    static void gauge(String domain, String type, String name, String topic, int partition, Object value,
                      boolean oddOrder) throws Exception {
        String keys = oddOrder ? "type=" + type + ",name=" + name + ",partition=" + partition + ",topic=" + topic
                : "type=" + type + ",name=" + name + ",topic=" + topic + ",partition=" + partition;
        register(new ObjectName(domain + ":" + keys),
                new Bean(GAUGE).put("Value", "java.lang.Object", "Attribute exposed for management", value),
                Collections.singletonList("Value"));
    }

    /** The same few MBeans whatever the seed, for the named examples
     *  (tests/real/test_examples_vs_jmx_exporter.py). */
    static void examples() throws Exception {
        CompositeType usageType = new CompositeType("Usage", "a composite type", new String[] {"used", "max"},
                new String[] {"used bytes", "max bytes"}, new OpenType<?>[] {SimpleType.LONG, SimpleType.LONG});
        CompositeType rowType = new CompositeType("Row", "a row type", new String[] {"key", "value", "count"},
                new String[] {"key", "value", "count"}, new OpenType<?>[] {SimpleType.STRING, SimpleType.DOUBLE, SimpleType.INTEGER});
        TabularDataSupport table = new TabularDataSupport(new TabularType("Table", "a table type", rowType, new String[] {"key"}));
        table.put(new CompositeDataSupport(rowType, new String[] {"key", "value", "count"}, new Object[] {"a", 1.5, 3}));
        register(new ObjectName("example:type=Descriptions"), new Bean("example.Descriptions")
                .put("NullDescription", "int", null, 1)
                .put("EmptyDescription", "int", "", 2)
                .put("SameDescription", "int", "SameDescription", 3)
                .put("Described", "int", "with \\ a backslash and a\nnewline", 4)
                .put("Usage", "javax.management.openmbean.CompositeData", "usage", new CompositeDataSupport(usageType,
                        new String[] {"used", "max"}, new Object[] {10L, 100L}))
                .put("Table", "javax.management.openmbean.TabularData", "table", table),
                Arrays.asList("NullDescription", "EmptyDescription", "SameDescription", "Described", "Usage", "Table"));
        java.util.concurrent.atomic.LongAdder adder = new java.util.concurrent.atomic.LongAdder();
        adder.add(5);
        register(new ObjectName("example:type=Numbers"), new Bean("example.Numbers")
                .put("Float", "float", "a float", 0.1f)
                .put("FloatBig", "float", "a float", 3.3e-5f)
                .put("BigDecimal", "java.math.BigDecimal", "a big decimal", new BigDecimal("1.10"))
                .put("BigDecimalExp", "java.math.BigDecimal", "a big decimal", new BigDecimal("1E+3"))
                .put("LongAdder", "java.util.concurrent.atomic.LongAdder", "an adder", adder)
                .put("BigLong", "long", "a long", -3338828791294716928L)
                .put("Negative", "int", "below zero", -7)
                .put("Positive", "int", "above zero", 7),
                Arrays.asList("Float", "FloatBig", "BigDecimal", "BigDecimalExp", "LongAdder", "BigLong", "Negative", "Positive"));
        register(new ObjectName("example:type=Enums"), new Bean("example.Enums")
                .put("Plain", "java.util.concurrent.TimeUnit", "an enum", TimeUnit.SECONDS)
                .put("WithBody", "java.time.temporal.TemporalField", "an enum constant with a body", IsoFields.QUARTER_OF_YEAR),
                Arrays.asList("Plain", "WithBody"));
        register(new ObjectName("example:type=Snake"), new Bean("example.Snake")
                .put("FooBar", "int", "camel", 1)
                .put("foo_bar", "int", "snake", 2), Arrays.asList("FooBar", "foo_bar"));
        // label values whose order differs between Java's String.compareTo (UTF-16) and code points
        for (String v : new String[] {"\uFF21", "\uD83D\uDE00", "a", "B"}) {
            register(new ObjectName("example:type=Order,v=" + ObjectName.quote(v)), new Bean("example.Order")
                    .put("Value", "int", "ordered", v.length()), Collections.singletonList("Value"));
        }
    }

    public static void main(String[] args) throws Exception {
        examples();
        random = new Random(Long.parseLong(args[0]));
        // Kafka-shaped per-partition gauges: the sidecar reads these as columns
        String[] topics = {"orders", "a.b-c", "Topic_X", "ünï"};
        String[] families = {"UnderReplicated", "InSyncReplicasCount", "LastStableOffsetLag", "ReplicasCount"};
        for (String family : families) {
            for (String topic : topics) {
                for (int p = 0, n = 2 + random.nextInt(4); p < n; p++) {
                    Object v = family.equals("LastStableOffsetLag") ? (Object) (long) random.nextInt(3)
                            : family.equals("UnderReplicated") ? (Object) (random.nextInt(5) == 0 ? 1 : 0) : (Object) random.nextInt(4);
                    gauge("kafka.cluster", "Partition", family, topic, p, v, topic.equals("Topic_X") && p == 1);
                }
            }
        }
        for (String topic : topics) {
            for (int p = 0; p < 3; p++) gauge("kafka.log", "Log", "Size", topic, p, (long) random.nextInt(1 << 30), false);
        }
        // Kafka-shaped meters, broker-wide and per topic
        for (String topic : new String[] {null, "orders", "a.b-c"}) {
            for (String name : new String[] {"BytesInPerSec", "MessagesInPerSec"}) {
                ObjectName on = new ObjectName("kafka.server:type=BrokerTopicMetrics,name=" + name + (topic == null ? "" : ",topic=" + topic));
                Bean b = new Bean(METER);
                b.put("Count", "long", "Attribute exposed for management", (long) random.nextInt(1 << 20));
                b.put("EventType", "java.lang.String", "Attribute exposed for management", "bytes");
                b.put("RateUnit", "java.util.concurrent.TimeUnit", "Attribute exposed for management", TimeUnit.SECONDS);
                for (String rate : new String[] {"MeanRate", "OneMinuteRate", "FiveMinuteRate", "FifteenMinuteRate"}) {
                    b.put(rate, "double", "Attribute exposed for management", pick(random, new double[] {0.0, 1.5, 1e9, 45.78352056167364}));
                }
                register(on, b, new ArrayList<>(b.values.keySet()));
            }
        }
        // random MBeans, and near-twins whose names collide once sanitised
        for (int i = 0; i < 90; i++) {
            ObjectName name = randomName();
            randomBean(name);
            if (random.nextInt(6) == 0) {
                String text = name.toString();
                String twin = text.contains("-") ? text.replace('-', '.') : text.contains(".") ? text.replace(".", "-") : text + "_";
                try {
                    randomBean(new ObjectName(twin));
                } catch (MalformedObjectNameException e) {
                    // a replacement inside a quoted value can make it invalid: no twin then
                }
            }
        }
        // MXBeans
        for (int i = 0; i < 3; i++) {
            ObjectName name = new ObjectName("rnd.mx:type=Sample,name=s" + i);
            SERVER.registerMBean(new StandardMBean(new Sample(random), SampleMXBean.class, true), name);
            for (String a : new String[] {"Count", "TotalBytes", "Ratio", "Load", "Enabled", "Boxed", "State", "Unit",
                    "Started", "Position", "Names", "Sizes", "Points", "History"}) HEADS.add(head(name, "", a));
        }
        for (String h : HEADS) System.out.println("HEAD " + h.replace("\n", "\\n"));
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) { /* serve until stdin closes */ }
        System.exit(0);
    }
}
