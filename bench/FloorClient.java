// The floor of read-only remote JMX: what a minimal client, with no rules and no Python, pays to
// read a broker's MBeans. bench/floor.py compiles and runs it; bench/vs_jmx_exporter.py prints the
// sidecar's and jmx_exporter's figures as multiples of it, measured in the same run.
//
//   java -cp DIR FloorClient --url URL [--include P]... [--exclude P]... [--queried P]...
//        [--query 'PATTERN;EXPR']... [--connections 1,2,4] [--polls 3] [--broker-pid PID --clk-tck 100]
//
// What it does, each step printed as one line `FLOOR <step> key=value ...`:
//   started     as soon as main() runs (the caller times the JVM's start up to this line);
//   listing     one queryNames per --include pattern on one connection, minus --exclude (JMX's own
//               pattern matching, here); the names are the set read below;
//   infos       getMBeanInfo once per shape: a name with its topic/partition values left out (a
//               per-partition family shares one), which a client that knows Kafka's MBeans needs
//               only once; not part of a poll;
//   query       each --query, `PATTERN;Value!=0` or `PATTERN;Value!=0&Value!=3`: one queryNames the
//               broker evaluates (the health queries);
//   read        a poll (after one untimed, which warms both JVMs up): one getAttributes per listed name not matching a --queried pattern (those
//               the queries answer), every readable attribute, spread over `connections`
//               connections, each on a thread of its own taking the next chunk of names. One round
//               trip per MBean is the least a read-only client can do for values it cannot ask
//               the broker about.
// With --broker-pid, each step also gives the broker process's CPU seconds (utime + stime from
// /proc/PID/stat) over the step.
//
// Read-only: it calls queryNames, getMBeanInfo and getAttributes, nothing else.

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.AttributeList;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.Query;
import javax.management.QueryExp;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

public final class FloorClient {
    static final int CHUNK = 64;

    final String url;
    final List<ObjectName> include = new ArrayList<>(), exclude = new ArrayList<>(), queried = new ArrayList<>();
    final List<String[]> queries = new ArrayList<>();
    int[] connections = {1, 2, 4};
    int polls = 3;
    long brokerPid = -1;
    double clkTck = 100;

    FloorClient(String url) {
        this.url = url;
    }

    public static void main(String[] args) throws Exception {
        System.out.println("FLOOR started");
        System.out.flush();
        String url = null;
        List<String[]> opts = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) usage("bad argument " + args[i]);
            if (args[i].equals("--url")) url = args[++i];
            else opts.add(new String[] {args[i], args[++i]});
        }
        if (url == null) usage("--url is required");
        FloorClient f = new FloorClient(url);
        for (String[] o : opts) f.option(o[0], o[1]);
        if (f.include.isEmpty()) f.include.add(ObjectName.WILDCARD);
        f.run();
    }

    static void usage(String why) {
        System.err.println("FloorClient: " + why);
        System.exit(2);
    }

    void option(String key, String value) throws Exception {
        switch (key) {
            case "--include": include.add(new ObjectName(value)); break;
            case "--exclude": exclude.add(new ObjectName(value)); break;
            case "--queried": queried.add(new ObjectName(value)); break;
            case "--query": {
                int at = value.indexOf(';');
                if (at < 0) usage("--query is PATTERN;EXPR");
                queries.add(new String[] {value.substring(0, at), value.substring(at + 1)});
                break;
            }
            case "--connections": {
                String[] parts = value.split(",");
                connections = new int[parts.length];
                for (int i = 0; i < parts.length; i++) connections[i] = Integer.parseInt(parts[i].trim());
                break;
            }
            case "--polls": polls = Integer.parseInt(value); break;
            case "--broker-pid": brokerPid = Long.parseLong(value); break;
            case "--clk-tck": clkTck = Double.parseDouble(value); break;
            default: usage("unknown option " + key);
        }
    }

    // --- the broker's CPU --------------------------------------------------------------------

    /** The broker's CPU seconds so far (user + system), or NaN without --broker-pid. */
    double brokerCpu() {
        if (brokerPid < 0) return Double.NaN;
        try {
            String stat = new String(Files.readAllBytes(Paths.get("/proc/" + brokerPid + "/stat")));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            // after "pid (comm) ": state is field 3, utime 14 and stime 15 (1-based)
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / clkTck;
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    static String fmt(double seconds) {
        return Double.isNaN(seconds) ? "nan" : String.format("%.4f", seconds);
    }

    // --- steps -------------------------------------------------------------------------------

    static MBeanServerConnection[] connect(String url, int n, List<JMXConnector> opened) throws IOException {
        MBeanServerConnection[] out = new MBeanServerConnection[n];
        for (int i = 0; i < n; i++) {
            JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(url), null);
            opened.add(c);
            out[i] = c.getMBeanServerConnection();
        }
        return out;
    }

    void run() throws Exception {
        int most = 1;
        for (int c : connections) most = Math.max(most, c);
        List<JMXConnector> opened = new ArrayList<>();
        try {
            long t0 = System.nanoTime();
            MBeanServerConnection[] conns = connect(url, most, opened);
            System.out.println("FLOOR connect connections=" + most + " seconds=" + fmt((System.nanoTime() - t0) / 1e9));

            List<ObjectName> names = listing(conns[0]);
            List<ObjectName> read = new ArrayList<>();
            for (ObjectName n : names) if (!matches(n, queried)) read.add(n);
            String[][] attrs = infos(conns[0], read);
            for (String[] q : queries) query(conns[0], q[0], q[1]);
            poll(conns, read, attrs, false);  // warms both JVMs up (JIT), untimed
            for (int c : connections) {
                MBeanServerConnection[] use = java.util.Arrays.copyOf(conns, c);
                for (int p = 0; p < polls; p++) poll(use, read, attrs, true);
            }
        } finally {
            for (JMXConnector c : opened) {
                try { c.close(); } catch (IOException ignored) { }
            }
        }
        System.out.println("FLOOR done");
    }

    static boolean matches(ObjectName n, List<ObjectName> patterns) {
        for (ObjectName p : patterns) if (p.apply(n)) return true;
        return false;
    }

    List<ObjectName> listing(MBeanServerConnection conn) throws IOException {
        double cpu0 = brokerCpu();
        long t0 = System.nanoTime();
        Set<ObjectName> all = new LinkedHashSet<>();
        for (ObjectName p : include) all.addAll(conn.queryNames(p, null));
        List<ObjectName> kept = new ArrayList<>(all.size());
        for (ObjectName n : all) if (!matches(n, exclude)) kept.add(n);
        System.out.println("FLOOR listing seconds=" + fmt((System.nanoTime() - t0) / 1e9) + " names=" + kept.size()
                + " round_trips=" + include.size() + " broker_cpu=" + fmt(brokerCpu() - cpu0));
        return kept;
    }

    /** A name's shape: its key properties with the topic and partition values left out. */
    static String shape(ObjectName n) {
        StringBuilder sb = new StringBuilder(n.getDomain()).append(':');
        for (Map.Entry<String, String> e : new java.util.TreeMap<>(n.getKeyPropertyList()).entrySet()) {
            String k = e.getKey();
            sb.append(k).append('=');
            if (!k.equals("topic") && !k.equals("partition")) sb.append(e.getValue());
            sb.append(',');
        }
        return sb.toString();
    }

    /** The readable attributes of each name, getMBeanInfo once per shape. */
    String[][] infos(MBeanServerConnection conn, List<ObjectName> names) throws Exception {
        long t0 = System.nanoTime();
        Map<String, String[]> byShape = new HashMap<>();
        String[][] out = new String[names.size()][];
        int trips = 0;
        for (int i = 0; i < names.size(); i++) {
            String s = shape(names.get(i));
            String[] a = byShape.get(s);
            if (a == null) {
                trips++;
                List<String> readable = new ArrayList<>();
                try {
                    MBeanInfo info = conn.getMBeanInfo(names.get(i));
                    for (MBeanAttributeInfo ai : info.getAttributes()) if (ai.isReadable()) readable.add(ai.getName());
                } catch (javax.management.InstanceNotFoundException gone) {
                    // gone since the listing: read nothing of it
                }
                a = readable.toArray(new String[0]);
                byShape.put(s, a);
            }
            out[i] = a;
        }
        System.out.println("FLOOR infos seconds=" + fmt((System.nanoTime() - t0) / 1e9) + " shapes=" + byShape.size()
                + " round_trips=" + trips);
        return out;
    }

    /** EXPR: `Value!=0`, `Value==1`, terms joined by `&`. */
    static QueryExp expression(String text) {
        QueryExp q = null;
        for (String term : text.split("&")) {
            boolean not = term.contains("!=");
            String[] parts = term.split(not ? "!=" : "==");
            QueryExp one = Query.eq(Query.attr(parts[0].trim()), Query.value(Long.parseLong(parts[1].trim())));
            if (not) one = Query.not(one);
            q = q == null ? one : Query.and(q, one);
        }
        return q;
    }

    void query(MBeanServerConnection conn, String pattern, String expr) throws Exception {
        ObjectName p = new ObjectName(pattern);
        QueryExp q = expression(expr);
        double cpu0 = brokerCpu();
        long t0 = System.nanoTime();
        int hits = conn.queryNames(p, q).size();
        System.out.println("FLOOR query pattern=" + pattern + " expr=" + expr + " seconds="
                + fmt((System.nanoTime() - t0) / 1e9) + " hits=" + hits + " broker_cpu=" + fmt(brokerCpu() - cpu0));
    }

    /** One getAttributes per name, `conns.length` threads each on its own connection. */
    void poll(MBeanServerConnection[] conns, List<ObjectName> names, String[][] attrs, boolean report)
            throws Exception {
        AtomicInteger next = new AtomicInteger();
        AtomicLong values = new AtomicLong();
        AtomicInteger gone = new AtomicInteger();
        Throwable[] failure = new Throwable[1];
        int chunks = (names.size() + CHUNK - 1) / CHUNK;
        double cpu0 = brokerCpu();
        long t0 = System.nanoTime();
        Thread[] threads = new Thread[conns.length];
        for (int k = 0; k < conns.length; k++) {
            final MBeanServerConnection conn = conns[k];
            threads[k] = new Thread(() -> {
                int c;
                while ((c = next.getAndIncrement()) < chunks) {
                    for (int i = c * CHUNK, end = Math.min(names.size(), i + CHUNK); i < end; i++) {
                        try {
                            AttributeList got = conn.getAttributes(names.get(i), attrs[i]);
                            values.addAndGet(got.size());
                        } catch (javax.management.InstanceNotFoundException e) {
                            gone.incrementAndGet();
                        } catch (Exception e) {
                            synchronized (failure) { if (failure[0] == null) failure[0] = e; }
                            return;
                        }
                    }
                }
            }, "floor-" + k);
            threads[k].start();
        }
        for (Thread t : threads) t.join();
        double seconds = (System.nanoTime() - t0) / 1e9;
        if (failure[0] != null) throw new IOException("a read failed", failure[0]);
        if (report) System.out.println("FLOOR read connections=" + conns.length + " seconds=" + fmt(seconds) + " mbeans="
                + names.size() + " round_trips=" + names.size() + " values=" + values.get() + " gone=" + gone.get()
                + " broker_cpu=" + fmt(brokerCpu() - cpu0));
    }
}
