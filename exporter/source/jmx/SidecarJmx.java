// The JVM side of exporter/source/jmx: connects, lists, reads MBeanInfo and reads attributes in bulk, and
// hands Python one compact String per batch instead of one JPype object per value. Compiled at
// run time by exporter/source/jmx/jvm.py with javax.tools.JavaCompiler (no build step, no jar).
//
// Why: converting a Java value through JPype costs about 20 us per attribute (a Kafka Meter with
// 7 attributes: ~125 us), as much as the RMI round trip itself (~0.15 ms on loopback). Here the
// values become text in Java and Python splits the text with str.split (see convert.py).
//
// Read-only by construction: nothing here calls invoke(), setAttribute() or any MBeanServer
// method that changes state. Calls: queryNames, queryMBeans, getDomains, getObjectInstance,
// getMBeanInfo, getAttributes, getAttribute.
//
// Text format (records separated by RS \u001e, fields by US \u001f; names by \n):
//   read record:  status field, then one field per requested attribute, in request order
//     status  'o' read | 'g' MBean gone (InstanceNotFoundException) | 'e'+message other failure
//     value   'i'+integer | 'd'+Double.toString | 'f'+Double.toString of a Float |
//             'N'+Double.toString(doubleValue)+' '+toString of another Number | 'T' | 'F' | 's'+string | 'e'+enum toString |
//             't'+epoch millis | 'n' null | 'x'+index into Result.complex (CompositeData,
//             TabularData, strings holding separator characters) | 'a' array |
//             'u'+class name (unsupported type) | '-' not returned by the MBean server
//   info record:  status field, class name, then name, type, description per readable attribute
//                 (description: 's'+text, or 'n' for null)
package sidecar.jmx;

import java.io.IOException;
import java.math.BigInteger;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.rmi.server.RMISocketFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectInstance;
import javax.management.ObjectName;
import javax.management.Query;
import javax.management.QueryExp;
import javax.management.openmbean.CompositeData;
import javax.management.openmbean.TabularData;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.rmi.ssl.SslRMIClientSocketFactory;

public final class SidecarJmx {
    static final char RS = '\u001e';
    static final char US = '\u001f';
    /** Most names handed to one worker at a time; fewer when the batch is small, so that every
     *  connection gets work (at least 8 chunks per connection). */
    static final int MAX_CHUNK = 64;

    private SidecarJmx() {}

    private static final ExecutorService POOL = Executors.newCachedThreadPool(new ThreadFactory() {
        final AtomicInteger n = new AtomicInteger();
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, "sidecar-jmx-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        }
    });

    // --- connecting --------------------------------------------------------------------------

    /** Plain RMI sockets with a connect timeout (the JDK's default factory has none). */
    public static final class TimeoutSocketFactory extends RMISocketFactory {
        final int connectTimeoutMs;
        public TimeoutSocketFactory(int connectTimeoutMs) { this.connectTimeoutMs = connectTimeoutMs; }
        public Socket createSocket(String host, int port) throws IOException {
            return connected(host, port, connectTimeoutMs);
        }
        public ServerSocket createServerSocket(int port) throws IOException { return new ServerSocket(port); }
    }

    /** SSL sockets for the RMI registry lookup, with a connect timeout; same protocol and cipher
     *  properties as SslRMIClientSocketFactory (javax.rmi.ssl.client.enabled*). */
    public static final class TimeoutSslSocketFactory extends SslRMIClientSocketFactory {
        private static final long serialVersionUID = 1L;
        final int connectTimeoutMs;
        public TimeoutSslSocketFactory(int connectTimeoutMs) { this.connectTimeoutMs = connectTimeoutMs; }
        public Socket createSocket(String host, int port) throws IOException {
            Socket raw = connected(host, port, connectTimeoutMs);
            try {
                SSLSocket s = (SSLSocket) ((SSLSocketFactory) SSLSocketFactory.getDefault()).createSocket(raw, host, port, true);
                String protocols = System.getProperty("javax.rmi.ssl.client.enabledProtocols");
                if (protocols != null) s.setEnabledProtocols(protocols.split(","));
                String ciphers = System.getProperty("javax.rmi.ssl.client.enabledCipherSuites");
                if (ciphers != null) s.setEnabledCipherSuites(ciphers.split(","));
                return s;
            } catch (IOException e) {
                raw.close();
                throw e;
            }
        }
        public boolean equals(Object o) { return o instanceof TimeoutSslSocketFactory; }
        public int hashCode() { return TimeoutSslSocketFactory.class.hashCode(); }
    }

    /** A plain socket connected within timeoutMs (closed again when that fails). */
    static Socket connected(String host, int port, int timeoutMs) throws IOException {
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(host, port), timeoutMs);
        } catch (IOException e) {
            s.close();
            throw e;
        }
        return s;
    }

    private static boolean factoryInstalled;

    /** Installs the plain-socket factory once per JVM (RMISocketFactory can be set only once). */
    public static synchronized boolean installSocketFactory(int connectTimeoutMs) throws IOException {
        if (factoryInstalled || RMISocketFactory.getSocketFactory() != null) return false;
        RMISocketFactory.setSocketFactory(new TimeoutSocketFactory(connectTimeoutMs));
        factoryInstalled = true;
        return true;
    }

    /** JMXConnectorFactory.connect, bounded by connectTimeoutMs as a whole (registry lookup,
     *  authentication, stub connection). On timeout the attempt is abandoned and closed later. */
    public static JMXConnector connect(String url, String user, String password, boolean ssl,
                                       int connectTimeoutMs) throws Exception {
        final JMXServiceURL serviceUrl = new JMXServiceURL(url);
        final Map<String, Object> env = new HashMap<>();
        // no heartbeat thread: the client notices a broken connection at its next call and
        // reconnects itself, so no RMI call happens that the round-trip counters do not see
        env.put("jmx.remote.x.client.connection.check.period", 0L);
        if (user != null && !user.isEmpty()) {
            env.put(JMXConnector.CREDENTIALS, new String[] {user, password == null ? "" : password});
        }
        if (ssl) {
            env.put("com.sun.jndi.rmi.factory.socket", new TimeoutSslSocketFactory(connectTimeoutMs));
        }
        Future<JMXConnector> f = POOL.submit(() -> JMXConnectorFactory.connect(serviceUrl, env));
        try {
            return f.get(connectTimeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException | InterruptedException e) {
            // a timeout, or the caller interrupted (the sidecar stopping): the attempt is abandoned
            f.cancel(true);
            POOL.submit(() -> {  // close whatever the abandoned attempt still produces
                try { closeQuietly(f.get()); } catch (Exception ignored) { }
            });
            if (e instanceof InterruptedException) throw e;
            throw new SocketTimeoutException("connect timed out after " + connectTimeoutMs + " ms");
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof Exception) throw (Exception) c;
            throw e;
        }
    }

    public static void closeQuietly(JMXConnector c) {
        if (c == null) return;
        POOL.submit(() -> {
            try { c.close(); } catch (Exception ignored) { }
        });
    }

    // --- names -------------------------------------------------------------------------------

    public static final class Names {
        /** The names' toString() (the broker's key order). Kept as text, not as ObjectNames: an
         *  ObjectName holds its parsed keys (~0.35 KB more per name, 140 MB at 400,000 MBeans);
         *  parsing one again for each call costs about a microsecond. */
        public String[] names;
        /** names joined by '\n' (ObjectNames cannot contain a raw newline). */
        public String text;
        public int roundTrips;
    }

    /** c.call() on a pool thread, given up after timeoutMs (0: no limit). RMI's connector
     *  retries a failed call after checking and re-opening its connection, which multiplies the
     *  socket read timeout; this bounds the whole. Interrupting the caller (the sidecar stopping)
     *  gives up at once: a socket read cannot be interrupted, the wait for it can. */
    static <T> T bounded(java.util.concurrent.Callable<T> c, long timeoutMs) throws Exception {
        if (timeoutMs <= 0) return c.call();
        Future<T> f = POOL.submit(c);
        try {
            return f.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new SocketTimeoutException("no answer within " + timeoutMs + " ms");
        } catch (InterruptedException e) {
            f.cancel(true);
            throw e;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) throw (Exception) cause;
            throw e;
        }
    }

    /** Union of queryNames(include[i], null), minus names matching any exclude pattern (matched
     *  here with ObjectName.apply: JMX's own pattern rules, no round trip), sorted by name. */
    public static Names listNames(MBeanServerConnection conn, String[] include, String[] exclude,
                                  long timeoutMs) throws Exception {
        Names out = new Names();
        return sorted(kept(conn, include, exclude, timeoutMs, out), out);
    }

    static List<ObjectName> kept(MBeanServerConnection conn, String[] include, String[] exclude,
                                 long timeoutMs, Names out) throws Exception {
        Set<ObjectName> all = new HashSet<>();
        for (String p : include) {
            final ObjectName pattern = new ObjectName(p);
            all.addAll(bounded(() -> conn.queryNames(pattern, null), timeoutMs));
            out.roundTrips++;
        }
        ObjectName[] ex = objectNames(exclude, "");
        List<ObjectName> kept = new ArrayList<>(all.size());
        for (ObjectName n : all) if (!excluded(n, ex)) kept.add(n);
        return kept;
    }

    // --- per-partition families as columns ------------------------------------------------------

    /** The members `family,topic=T,partition=P` of one family `domain:type=X,name=Y`, sorted by
     *  (topic, partition) and kept as one long each (topic index << 32 | partition): 8 bytes a
     *  member instead of a ~150-byte name, and a member's position by binary search. */
    public static final class Members {
        public final String family;
        public final String[] topics;  // distinct, sorted
        final long[] keys;

        Members(String family, String[] topics, long[] keys) {
            this.family = family;
            this.topics = topics;
            this.keys = keys;
        }

        public int size() { return keys.length; }

        /** The topic index column (for Python's copy). */
        public int[] topicColumn() {
            int[] out = new int[keys.length];
            for (int i = 0; i < out.length; i++) out[i] = (int) (keys[i] >>> 32);
            return out;
        }

        /** The partition column (for Python's copy). */
        public int[] partitionColumn() {
            int[] out = new int[keys.length];
            for (int i = 0; i < out.length; i++) out[i] = (int) keys[i];
            return out;
        }

        public String name(int i) { return family + ",topic=" + topics[(int) (keys[i] >>> 32)] + ",partition=" + (int) keys[i]; }

        public String topicsText() { return String.join("\n", topics); }

        int position(String t, int p) {
            int ti = Arrays.binarySearch(topics, t);
            if (ti < 0) return -1;
            int k = Arrays.binarySearch(keys, ((long) ti << 32) | p);
            return k < 0 ? -1 : k;
        }

        String[] names(int[] positions) {
            int n = positions == null ? keys.length : positions.length;
            String[] out = new String[n];
            for (int i = 0; i < n; i++) out[i] = name(positions == null ? i : positions[i]);
            return out;
        }
    }

    public static final class Split {
        public Names rest;
        public int[] restHash;  // getCanonicalName().hashCode() of each rest name, in rest order
        public Members[] families;  // in the order asked for; a family with no member is empty
        public int[][] hashes;  // per family, each member's getCanonicalName().hashCode() (not kept);
                                // null where the family is the `previous` one given, unchanged
        // What jmx_exporter's visiting order depends on beyond the names kept: it adds every name
        // the include patterns match to its HashSet before removing the excluded ones (so the
        // table is sized for all of them), and the broker's repository holds a table per domain
        // sized for all that domain's MBeans. "domain\ncount\n..." of the names matched before
        // exclusion, and how many domains the broker has.
        public int listedTotal;
        public String domainCounts = "";
        public int serverDomains;
        // Names sharing a bucket of jmx_exporter's set come in the order it added them: those of
        // its first include pattern first, and within one pattern's result in the order of the
        // set of ObjectInstances the broker returned (hashed with the class name). Per rest name:
        // the first include pattern that matched it and its class name's hashCode(); per family
        // member the first pattern (null with one include pattern); per pattern, what it matched.
        public int[] restPattern;
        public int[] restClass;
        public int[][] memberPatterns;
        public int[] patternSizes;
    }

    /** "type=X,name=Y,topic=T,partition=P" -> {"type=X,name=Y", T, P}, or null for any other shape
     *  (quoted values, other keys or order, a partition that is not a plain number). */
    static String[] memberParts(String keys) {
        if (keys.indexOf('"') >= 0 || !keys.startsWith("type=")) return null;
        int c1 = keys.indexOf(',');
        if (c1 < 0 || !keys.startsWith("name=", c1 + 1)) return null;
        int c2 = keys.indexOf(',', c1 + 1);
        if (c2 < 0 || !keys.startsWith("topic=", c2 + 1)) return null;
        int c3 = keys.indexOf(',', c2 + 1);
        if (c3 < 0 || !keys.startsWith("partition=", c3 + 1) || keys.indexOf(',', c3 + 1) >= 0) return null;
        String p = keys.substring(c3 + 11);
        if (p.isEmpty() || p.length() > 9 || (p.length() > 1 && p.charAt(0) == '0')) return null;
        for (int i = 0; i < p.length(); i++) if (p.charAt(i) < '0' || p.charAt(i) > '9') return null;
        return new String[] {keys.substring(0, c2), keys.substring(c2 + 7, c3), p};
    }

    /** listNames with the members of `families` ("domain:type=X,name=Y") taken out as columns:
     *  the JVM then keeps 12 bytes per member instead of its name (400,000 at 40,000 partitions).
     *  Listed a family at a time, so that no more than one family's ObjectNames (~0.5 KB each once
     *  deserialized) are alive at once: the other names with `not (member of a family)` evaluated
     *  by the broker, then each family's names with the include patterns as the query. An
     *  ObjectName pattern used as a QueryExp is matched as the broker matches any pattern query. */
    public static Split listSplit(MBeanServerConnection conn, String[] include, String[] exclude,
                                  String[] families, Object[] previous, long timeoutMs) throws Exception {
        Splitter s = new Splitter(conn, objectNames(include, ""), objectNames(exclude, ""), timeoutMs);
        ObjectName[] fam = objectNames(families, ",*");
        s.listOthers(fam.length == 0 ? null : Query.not(anyOf(fam)));
        s.out.families = new Members[families.length];
        s.out.hashes = new int[families.length][];
        s.out.memberPatterns = new int[families.length][];
        // a family's names that are not shaped like a member are read whole, with the others
        boolean everything = false;
        for (ObjectName p : s.in) everything |= p.equals(ObjectName.WILDCARD);
        QueryExp included = everything || s.in.length == 0 ? null : anyOf(s.in);
        for (int f = 0; f < families.length; f++) {
            Members was = previous != null && f < previous.length ? (Members) previous[f] : null;
            s.listFamily(f, families[f], fam[f], included, was);
        }
        s.finish();
        return s.out;
    }

    /** One listSplit: what it has listed so far, and the steps that list the rest. */
    static final class Splitter {
        final MBeanServerConnection conn;
        final ObjectName[] in, ex;
        final long timeoutMs;
        final Split out = new Split();
        final Set<ObjectName> others = new HashSet<>();  // the names read whole (not yet excluded)
        final Map<ObjectName, long[]> origin = new HashMap<>();  // rest name -> {first pattern, class hash}
        final Map<String, int[]> perDomain = new HashMap<>();  // names matched before exclusion

        Splitter(MBeanServerConnection conn, ObjectName[] in, ObjectName[] ex, long timeoutMs) {
            this.conn = conn;
            this.in = in;
            this.ex = ex;
            this.timeoutMs = timeoutMs;
            out.rest = new Names();
            out.patternSizes = new int[in.length];
        }

        /** The names no family holds (queryMBeans per include pattern: with their class names),
         *  and how many domains the broker has. */
        void listOthers(QueryExp notMember) throws Exception {
            for (int k = 0; k < in.length; k++) {
                final ObjectName p = in[k];
                Set<ObjectInstance> got = bounded(() -> conn.queryMBeans(p, notMember), timeoutMs);
                out.rest.roundTrips++;
                out.patternSizes[k] += got.size();
                for (ObjectInstance oi : got) {
                    if (others.add(oi.getObjectName())) {
                        String cls = oi.getClassName();
                        origin.put(oi.getObjectName(), new long[] {k, cls == null ? 0 : cls.hashCode()});
                    }
                }
            }
            for (ObjectName n : others) perDomain.computeIfAbsent(n.getDomain(), d -> new int[1])[0]++;
            out.listedTotal = others.size();
            out.serverDomains = bounded(() -> conn.getDomains(), timeoutMs).length;
            out.rest.roundTrips++;
        }

        /** Family f's members as columns into out (the `was` object when they are its members,
         *  unchanged); its names shaped unlike a member go to the others. */
        void listFamily(int f, String family, ObjectName pattern, QueryExp included, Members was) throws Exception {
            Set<ObjectName> found = in.length == 0 ? Set.of()
                    : bounded(() -> conn.queryNames(pattern, included), timeoutMs);
            if (in.length > 0) out.rest.roundTrips++;
            out.listedTotal += found.size();
            if (!found.isEmpty()) perDomain.computeIfAbsent(pattern.getDomain(), d -> new int[1])[0] += found.size();
            List<Object[]> ms = new ArrayList<>(found.size());
            for (ObjectName n : found) {
                int first = firstPattern(n);
                if (excluded(n, ex)) continue;
                String[] parts = memberParts(n.getKeyPropertyListString());
                if (parts == null || !family.equals(n.getDomain() + ":" + parts[0])) {
                    others.add(n);
                    String cls = bounded(() -> conn.getObjectInstance(n), timeoutMs).getClassName();
                    origin.put(n, new long[] {first, cls == null ? 0 : cls.hashCode()});
                } else {
                    ms.add(new Object[] {parts[1], Integer.parseInt(parts[2]), n.getCanonicalName().hashCode(), first});
                }
            }
            found = null;  // before the next family's names arrive
            int[] hash = columns(family, ms, out.families, f);
            if (in.length > 1) {
                int[] firsts = new int[ms.size()];
                for (int i = 0; i < firsts.length; i++) firsts[i] = (Integer) ms.get(i)[3];
                out.memberPatterns[f] = firsts;
            }
            if (was != null && was.family.equals(family) && Arrays.equals(was.keys, out.families[f].keys)
                    && Arrays.equals(was.topics, out.families[f].topics)) {
                out.families[f] = was;  // unchanged since the last listing: the same object, no hashes
                hash = null;
            }
            out.hashes[f] = hash;
        }

        /** The first include pattern that matches n (0 with one pattern or none), counting n in
         *  each pattern's size: the patterns jmx_exporter's queries would return it for. */
        int firstPattern(ObjectName n) {
            int first = 0;
            if (in.length > 1) {
                first = -1;
                for (int k = 0; k < in.length; k++) {
                    if (in[k].apply(n)) {
                        out.patternSizes[k]++;
                        if (first < 0) first = k;
                    }
                }
            } else if (in.length == 1) {
                out.patternSizes[0]++;
            }
            return first;
        }

        /** The per-domain counts as text, and the others, excluded ones taken out, sorted with
         *  their canonical name hashes, first patterns and class name hashes. */
        void finish() {
            StringBuilder counts = new StringBuilder();
            for (Map.Entry<String, int[]> e : perDomain.entrySet()) {
                counts.append(e.getKey()).append('\n').append(e.getValue()[0]).append('\n');
            }
            out.domainCounts = counts.toString();
            List<ObjectName> rest = new ArrayList<>(others.size());
            for (ObjectName n : others) if (!excluded(n, ex)) rest.add(n);
            sorted(rest, out.rest);
            out.restHash = new int[rest.size()];
            Map<String, Integer> restPos = new HashMap<>();
            for (int i = 0; i < out.rest.names.length; i++) restPos.put(out.rest.names[i], i);
            out.restPattern = new int[rest.size()];
            out.restClass = new int[rest.size()];
            for (ObjectName n : rest) {
                int at = restPos.get(n.toString());
                out.restHash[at] = n.getCanonicalName().hashCode();
                long[] o = origin.get(n);
                out.restPattern[at] = (int) o[0];
                out.restClass[at] = (int) o[1];
            }
        }
    }

    static ObjectName[] objectNames(String[] texts, String suffix) throws Exception {
        ObjectName[] out = new ObjectName[texts.length];
        for (int i = 0; i < out.length; i++) out[i] = new ObjectName(texts[i] + suffix);
        return out;
    }

    static QueryExp anyOf(ObjectName[] patterns) {
        QueryExp q = patterns[0];
        for (int i = 1; i < patterns.length; i++) q = Query.or(q, patterns[i]);
        return q;
    }

    static boolean excluded(ObjectName n, ObjectName[] ex) {
        for (ObjectName e : ex) if (e.apply(n)) return true;
        return false;
    }

    /** Members {topic, partition, hash} sorted by (topic, partition) into out[f]; their hashes. */
    static int[] columns(String family, List<Object[]> ms, Members[] out, int f) {
        ms.sort((a, b) -> {
            int c = ((String) a[0]).compareTo((String) b[0]);
            return c != 0 ? c : Integer.compare((Integer) a[1], (Integer) b[1]);
        });
        List<String> topics = new ArrayList<>();
        int n = ms.size();
        long[] keys = new long[n];
        int[] hash = new int[n];
        for (int i = 0; i < n; i++) {
            Object[] m = ms.get(i);
            if (topics.isEmpty() || !topics.get(topics.size() - 1).equals(m[0])) topics.add(((String) m[0]).intern());
            keys[i] = ((long) (topics.size() - 1) << 32) | (Integer) m[1];
            hash[i] = (Integer) m[2];
        }
        out[f] = new Members(family, topics.toArray(new String[0]), keys);
        return hash;
    }

    /** One attribute of the members at `positions` (null: all), one getAttributes each: read records. */
    public static Result readMembers(MBeanServerConnection[] conns, Members m, int[] positions, String attribute,
                                     long deadlineMs, long stallMs) {
        String[] names = m.names(positions);
        return read(conns, new Plan(names, new String[][] {{attribute}}, new int[names.length]), deadlineMs, stallMs);
    }

    /** queryNames(pattern, query) in one round trip, answered as the positions of the members of
     *  each of `families` it returned (names that are no member are left out). */
    public static int[][] queryMembers(MBeanServerConnection conn, String pattern, QueryExp query, Object[] given,
                                       long timeoutMs) throws Exception {
        // Object[]: Python cannot name the array class of a class loaded by the helper's loader
        Members[] families = new Members[given.length];
        for (int f = 0; f < given.length; f++) families[f] = (Members) given[f];
        final ObjectName p = new ObjectName(pattern);
        Set<ObjectName> found = bounded(() -> conn.queryNames(p, query), timeoutMs);
        Map<String, Integer> index = new HashMap<>();
        for (int f = 0; f < families.length; f++) index.put(families[f].family, f);
        int[][] hits = new int[families.length][];
        int[] count = new int[families.length];
        for (int f = 0; f < families.length; f++) hits[f] = new int[16];
        for (ObjectName n : found) {
            String[] parts = memberParts(n.getKeyPropertyListString());
            Integer f = parts == null ? null : index.get(n.getDomain() + ":" + parts[0]);
            if (f == null) continue;
            int at = families[f].position(parts[1], Integer.parseInt(parts[2]));
            if (at < 0) continue;
            if (count[f] == hits[f].length) hits[f] = Arrays.copyOf(hits[f], 2 * count[f]);
            hits[f][count[f]++] = at;
        }
        for (int f = 0; f < families.length; f++) {
            hits[f] = Arrays.copyOf(hits[f], count[f]);
            Arrays.sort(hits[f]);
        }
        return hits;
    }

    /** queryNames(pattern, query): one round trip; the query is evaluated inside the broker. */
    public static Names query(MBeanServerConnection conn, String pattern, QueryExp query, long timeoutMs)
            throws Exception {
        Names out = new Names();
        final ObjectName p = new ObjectName(pattern);
        Set<ObjectName> found = bounded(() -> conn.queryNames(p, query), timeoutMs);
        out.roundTrips = 1;
        return sorted(new ArrayList<>(found), out);
    }

    static Names sorted(List<ObjectName> names, Names out) {
        final int n = names.size();
        final String[] text = new String[n];
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) { text[i] = names.get(i).toString(); order[i] = i; }
        Arrays.sort(order, (a, b) -> text[a].compareTo(text[b]));
        out.names = new String[n];
        StringBuilder sb = new StringBuilder(n * 80);
        for (int i = 0; i < n; i++) {
            out.names[i] = text[order[i]];
            if (i > 0) sb.append('\n');
            sb.append(text[order[i]]);
        }
        out.text = sb.toString();
        return out;
    }

    /** Names from '\n'-joined text (for names not in a listing), each checked to be an ObjectName. */
    public static String[] parseNames(String text) throws Exception {
        if (text.isEmpty()) return new String[0];
        String[] parts = text.split("\n", -1);
        for (String part : parts) new ObjectName(part);
        return parts;
    }

    public static String[] select(String[] names, int[] indices) {
        String[] out = new String[indices.length];
        for (int i = 0; i < indices.length; i++) out[i] = names[indices[i]];
        return out;
    }

    // --- bulk work over several connections --------------------------------------------------

    public static final class Result {
        public String text;
        public Object[] complex = new Object[0];
        public long roundTrips;
        /** Set when a connection failed (IOException) or the deadline passed; text is then null. */
        public Throwable failure;
        public int failedConnection = -1;
    }

    /** Appends the record of item i; returns the round trips it took. */
    interface Task {
        int run(MBeanServerConnection conn, int i, StringBuilder sb, List<Object> complex) throws IOException;
    }

    /** Runs task for i in [0, n) on conns.length threads (one per connection), chunk by chunk;
     *  records are concatenated in index order. One IOException stops the whole batch, and so
     *  do stallMs without any item finishing (a stopped broker) and the deadline (0: none). */
    static Result run(MBeanServerConnection[] conns, int n, long deadlineMs, long stallMs, Task task) {
        Batch b = new Batch(conns, n, deadlineMs, stallMs, task);
        List<Future<?>> futures = new ArrayList<>();
        int workers = Math.max(1, Math.min(conns.length, b.chunks.length));
        for (int w = 0; w < workers; w++) {
            final int k = w;
            futures.add(POOL.submit(() -> b.work(k)));
        }
        b.watch(futures);
        return b.result();
    }

    /** One run(): the workers (one per connection) take the next chunk of items in turn; the
     *  calling thread watches them. The first failure wins and stops the batch. */
    static final class Batch {
        final MBeanServerConnection[] conns;
        final int n;
        final long deadlineMs, stallMs;
        final Task task;
        final int chunk;
        final String[] chunks;  // each chunk's records, joined by RS
        final AtomicInteger next = new AtomicInteger();
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicLong roundTrips = new AtomicLong();
        final AtomicLong progress = new AtomicLong();
        final List<Object> complex = new ArrayList<>();
        Throwable failure;  // guarded by this
        int failedConn = -1;

        Batch(MBeanServerConnection[] conns, int n, long deadlineMs, long stallMs, Task task) {
            this.conns = conns;
            this.n = n;
            this.deadlineMs = deadlineMs;
            this.stallMs = stallMs;
            this.task = task;
            chunk = Math.max(1, Math.min(MAX_CHUNK, n / (8 * Math.max(1, conns.length))));
            chunks = new String[(n + chunk - 1) / chunk];
        }

        synchronized void fail(Throwable e, int conn) {
            if (failure == null) {
                failure = e;
                failedConn = conn;
            }
        }

        /** Worker k: chunks on connection k until none is left, the batch stops or the deadline
         *  passes. */
        void work(int k) {
            List<Object> local = new ArrayList<>();
            int c;
            while (!stop.get() && (c = next.getAndIncrement()) < chunks.length) {
                if (deadlineMs > 0 && System.currentTimeMillis() > deadlineMs) {
                    fail(new TimeoutException("the batch did not finish before its deadline"), -1);
                    stop.set(true);
                    break;
                }
                try {
                    chunks[c] = records(conns[k], c, local);
                } catch (Throwable e) {
                    fail(e, k);
                    stop.set(true);
                }
            }
        }

        /** Chunk c's records, read on conn. */
        String records(MBeanServerConnection conn, int c, List<Object> local) throws IOException {
            StringBuilder sb = new StringBuilder(chunk * 16);
            int end = Math.min(n, (c + 1) * chunk);
            for (int i = c * chunk; i < end; i++) {
                if (i > c * chunk) sb.append(RS);
                int before = local.size();
                roundTrips.addAndGet(task.run(conn, i, sb, local));
                progress.incrementAndGet();
                if (local.size() > before) share(sb, local, before);
            }
            return sb.toString();
        }

        /** The complex values of one record, from local[from..] to the shared list; their
         *  placeholders in sb (complexRef) rewritten to the shared indices. */
        void share(StringBuilder sb, List<Object> local, int from) {
            synchronized (complex) {
                for (int j = from; j < local.size(); j++) {
                    String marker = "\u0000" + j + "\u0000";
                    int at = sb.indexOf(marker);
                    sb.replace(at, at + marker.length(), Integer.toString(complex.size()));
                    complex.add(local.get(j));
                }
            }
            local.subList(from, local.size()).clear();
        }

        /** Waits for the workers, and gives up on them when no item finished for stallMs, the
         *  deadline passed a second ago or the caller is interrupted: stuck workers then end with
         *  their socket timeouts. */
        void watch(List<Future<?>> futures) {
            long seen = -1, since = System.currentTimeMillis();
            for (Future<?> f : futures) {
                while (true) {
                    try {
                        f.get(50, TimeUnit.MILLISECONDS);
                        break;
                    } catch (TimeoutException e) {
                        long now = System.currentTimeMillis(), p = progress.get();
                        if (p != seen) { seen = p; since = now; }
                        Exception why = overdue(now, since);
                        if (why != null) {
                            fail(why, -1);
                            stop.set(true);
                            return;
                        }
                    } catch (InterruptedException e) {  // the sidecar is stopping: give up the batch
                        fail(e, -1);
                        stop.set(true);
                        return;
                    } catch (Exception e) {
                        fail(e, -1);
                        break;
                    }
                }
            }
        }

        /** Why the batch is given up at `now` (no item finished since `since`), or null. */
        Exception overdue(long now, long since) {
            if (stallMs > 0 && now - since > stallMs) {
                return new SocketTimeoutException("no answer within " + stallMs + " ms");
            }
            if (deadlineMs > 0 && now > deadlineMs + 1000) {
                return new TimeoutException("the batch did not finish before its deadline");
            }
            return null;
        }

        /** The records joined in index order, or the failure. */
        Result result() {
            Result result = new Result();
            result.roundTrips = roundTrips.get();
            synchronized (this) {
                if (failure != null) {
                    result.failure = failure;
                    result.failedConnection = failedConn;
                    return result;
                }
            }
            StringBuilder all = new StringBuilder();
            for (int c = 0; c < chunks.length; c++) {
                if (c > 0) all.append(RS);
                all.append(chunks[c]);
            }
            result.text = all.toString();
            result.complex = complex.toArray();
            return result;
        }
    }

    static String clean(String s) {
        if (s == null) return "";
        StringBuilder sb = null;
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == RS || ch == US || ch == '\u001c' || ch == '\u001d' || ch == '\u0000') {
                if (sb == null) sb = new StringBuilder(s.substring(0, i));
                sb.append(' ');
            } else if (sb != null) {
                sb.append(ch);
            }
        }
        return sb == null ? s : sb.toString();
    }

    static boolean hasSeparator(String s) {
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == RS || ch == US || ch == '\u001c' || ch == '\u001d' || ch == '\u0000') return true;
        }
        return false;
    }

    static void status(StringBuilder sb, Exception e) {
        if (e instanceof InstanceNotFoundException) sb.append('g');
        else sb.append('e').append(clean(e.getClass().getName() + ": " + e.getMessage()));
    }

    /** A listed name's text as an ObjectName again (it parsed when listed, so it parses now). */
    static ObjectName objectName(String text) {
        try {
            return new ObjectName(text);
        } catch (javax.management.MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }

    // --- MBeanInfo ---------------------------------------------------------------------------

    /** getMBeanInfo for each name (one round trip each): class name and readable attributes. */
    public static Result infos(MBeanServerConnection[] conns, String[] names, long deadlineMs, long stallMs) {
        return run(conns, names.length, deadlineMs, stallMs, (conn, i, sb, complex) -> {
            MBeanInfo info;
            try {
                info = conn.getMBeanInfo(objectName(names[i]));
            } catch (IOException e) {
                if (!untransferable(e)) throw e;
                status(sb, e);
                return 1;
            } catch (Exception e) {
                status(sb, e);
                return 1;
            }
            sb.append('o').append(US).append(clean(info.getClassName()));
            MBeanAttributeInfo[] attrs = info.getAttributes();
            if (attrs == null) return 1;
            for (MBeanAttributeInfo a : attrs) {
                if (a == null || !a.isReadable()) continue;
                // a null description is not an empty one: jmx_exporter's HELP tells them apart
                String d = a.getDescription();
                sb.append(US).append(clean(a.getName())).append(US).append(clean(a.getType()))
                  .append(US).append(d == null ? "n" : "s" + clean(d));
            }
            return 1;
        });
    }

    // --- attributes --------------------------------------------------------------------------

    /** What to read: names[i] with the attribute names attrSets[attrSet[i]]. Built once per name
     *  list and reused every poll, so a poll sends nothing but this handle from Python. */
    public static final class Plan {
        public final String[] names;
        public final String[][] attrSets;
        public final int[] attrSet;
        public Plan(String[] names, String[][] attrSets, int[] attrSet) {
            this.names = names;
            this.attrSets = attrSets;
            this.attrSet = attrSet;
        }
        public int size() { return names.length; }
    }

    /** A value the server could not send or we cannot receive (not Serializable, a class this
     *  JVM lacks): a property of the attribute, not a broken connection. */
    static boolean untransferable(Throwable e) {
        for (int depth = 0; e != null && depth < 10; depth++, e = e.getCause()) {
            if (e instanceof java.io.NotSerializableException || e instanceof java.io.WriteAbortedException
                    || e instanceof ClassNotFoundException || e instanceof java.io.InvalidClassException) {
                return true;
            }
        }
        return false;
    }

    static String rootMessage(Throwable e) {
        Throwable r = e;
        for (int depth = 0; r.getCause() != null && depth < 10; depth++) r = r.getCause();
        return r.getClass().getName() + ": " + r.getMessage();
    }

    /** One getAttributes per MBean; values encoded as documented at the top of this file. When
     *  one value cannot cross the wire, the MBean's attributes are read one by one instead (as
     *  jmx_exporter does) and that one is marked 'u'. */
    public static Result read(MBeanServerConnection[] conns, Plan plan, long deadlineMs, long stallMs) {
        return run(conns, plan.names.length, deadlineMs, stallMs, (conn, i, sb, complex) -> {
            String[] want = plan.attrSets[plan.attrSet[i]];
            ObjectName name = objectName(plan.names[i]);
            AttributeList got;
            try {
                got = conn.getAttributes(name, want);
            } catch (IOException e) {
                if (!untransferable(e)) throw e;
                return 1 + oneByOne(conn, name, want, sb, complex);
            } catch (Exception e) {
                status(sb, e);
                return 1;
            }
            sb.append('o');
            Object[] values = new Object[want.length];
            boolean[] present = new boolean[want.length];
            int hint = 0;
            for (Object o : got) {
                if (!(o instanceof Attribute)) continue;
                Attribute a = (Attribute) o;
                String attr = a.getName();
                int at = -1;
                for (int j = 0; j < want.length; j++) {
                    int k = (hint + j) % want.length;
                    if (want[k].equals(attr)) { at = k; break; }
                }
                if (at < 0) continue;
                values[at] = a.getValue();
                present[at] = true;
                hint = at + 1;
            }
            for (int j = 0; j < want.length; j++) {
                sb.append(US);
                if (!present[j]) sb.append('-');
                else encode(sb, values[j], complex);
            }
            return 1;
        });
    }

    static int oneByOne(MBeanServerConnection conn, ObjectName name, String[] want, StringBuilder sb,
                        List<Object> complex) throws IOException {
        int start = sb.length();
        int calls = 0;
        sb.append('o');
        for (String a : want) {
            sb.append(US);
            calls++;
            try {
                encode(sb, conn.getAttribute(name, a), complex);
            } catch (InstanceNotFoundException e) {
                sb.setLength(start);
                sb.append('g');
                return calls;
            } catch (IOException e) {
                if (!untransferable(e)) throw e;
                sb.append('u').append(clean("not transferable: " + rootMessage(e)));
            } catch (Exception e) {
                sb.append('-');
            }
        }
        return calls;
    }

    /** The same order of type tests as jmx_exporter's JmxScraper.processBeanValue. */
    static void encode(StringBuilder sb, Object v, List<Object> complex) {
        if (v == null) {
            sb.append('n');
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte
                || v instanceof BigInteger || v instanceof AtomicInteger || v instanceof AtomicLong) {
            sb.append('i').append(v.toString());
        } else if (v instanceof Double) {
            sb.append('d').append(Double.toString((Double) v));
        } else if (v instanceof Float) {
            // the float's own digits are printed on the Python side (Float.toString of JDK 19+)
            sb.append('f').append(Double.toString(((Float) v).doubleValue()));
        } else if (v instanceof Number) {
            // BigDecimal and the like: rules see toString() (`1.10`, `1E+3`), samples doubleValue()
            String text = v.toString();
            if (hasSeparator(text)) complexRef(sb, v, complex);
            else sb.append('N').append(Double.toString(((Number) v).doubleValue())).append(' ').append(text);
        } else if (v instanceof Boolean) {
            sb.append(((Boolean) v) ? 'T' : 'F');
        } else if (v instanceof String) {
            String s = (String) v;
            if (hasSeparator(s)) complexRef(sb, s, complex);
            else sb.append('s').append(s);
        } else if (v instanceof Date) {
            sb.append('t').append(((Date) v).getTime());
        } else if (v instanceof CompositeData || v instanceof TabularData) {
            complexRef(sb, v, complex);
        } else if (v.getClass().isArray()) {
            sb.append('a');
        } else if (v instanceof Optional) {
            Optional<?> o = (Optional<?>) v;
            encode(sb, o.isPresent() ? o.get() : null, complex);
        } else if (v.getClass().isEnum()) {  // as jmx_exporter tests it: not a constant with a body
            String s = v.toString();
            if (hasSeparator(s)) complexRef(sb, s, complex);
            else sb.append('e').append(s);
        } else {
            sb.append('u').append(clean(v.getClass().getName()));
        }
    }

    static void complexRef(StringBuilder sb, Object v, List<Object> complex) {
        // a placeholder index local to the worker; run() rewrites it to the shared index
        sb.append('x').append('\u0000').append(complex.size()).append('\u0000');
        complex.add(v);
    }
}
