// The JVM side of exporter/source/jmx: lists, reads MBeanInfo and reads attributes in bulk, and
// hands Python one compact String per batch instead of one JPype object per value. Compiled at
// run time by exporter/source/jmx/jvm.py with javax.tools.JavaCompiler (no build step, no jar),
// with the package's other files: Connecting and Sockets (connections, connect timeouts), Names,
// Members, Split and Result (what Python gets back), Splitter (listSplit's steps), Batch (bulk
// work over several connections), Background (reads while a poll queries), Together (member
// queries asked at once) and Records (the text format below).
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
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.Query;
import javax.management.QueryExp;

import static sidecar.jmx.Records.*;

public final class SidecarJmx {
    static final char RS = '\u001e';
    static final char US = '\u001f';
    /** Most names handed to one worker at a time; fewer when the batch is small, so that every
     *  connection gets work (at least 8 chunks per connection). */
    static final int MAX_CHUNK = 64;

    private SidecarJmx() {}

    static final ExecutorService POOL = Executors.newCachedThreadPool(new ThreadFactory() {
        final AtomicInteger n = new AtomicInteger();
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, "sidecar-jmx-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        }
    });

    // --- names -------------------------------------------------------------------------------

    /** c.call() on a pool thread, given up after timeoutMs (0: no limit). RMI's connector
     *  retries a failed call after checking and re-opening its connection, which multiplies the
     *  socket read timeout; this bounds the whole. Interrupting the caller (the sidecar stopping)
     *  gives up at once: a socket read cannot be interrupted, the wait for it can. */
    static <T> T bounded(java.util.concurrent.Callable<T> c, long timeoutMs) throws Exception {
        if (timeoutMs <= 0) return c.call();
        Future<T> f = POOL.submit(c);
        try {
            return awaited(f, timeoutMs);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new SocketTimeoutException("no answer within " + timeoutMs + " ms");
        }
    }

    /** f's value, waited for up to timeoutMs (0: no limit); an interrupted wait (the sidecar
     *  stopping) cancels f; a failure of f is thrown as itself. */
    static <T> T awaited(Future<T> f, long timeoutMs) throws Exception {
        try {
            return timeoutMs <= 0 ? f.get() : f.get(timeoutMs, TimeUnit.MILLISECONDS);
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
     *  The other names first (Splitter.listOthers; on a first listing over several connections,
     *  the first family's asked meanwhile), then the families' names, the next family's asked on
     *  another connection (given several) while one family's are taken apart, so that no more
     *  than two families' ObjectNames (~0.5 KB each once deserialized) are alive at once, and one
     *  family's where their `previous` members add up past `answerMost` (the JVM holds an answer
     *  whole); each family's with the include patterns as the query, unless one of them holds the
     *  whole family. An ObjectName pattern used as a QueryExp is matched as the broker matches
     *  any pattern query. */
    public static Split listSplit(MBeanServerConnection[] conns, String[] include, String[] exclude,
                                  String[] families, Object[] previous, int answerMost, long timeoutMs)
            throws Exception {
        Splitter s = new Splitter(conns[0], objectNames(include, ""), objectNames(exclude, ""), timeoutMs);
        ObjectName[] fam = objectNames(families, ",*");
        // a first listing (no sizes known, families paired) asks the first family's names
        // meanwhile the others are listed: the others' answer is smaller than a family's
        Future<Set<ObjectName>> next = conns.length > 1 && families.length > 0 && sizeOf(previous, 0) == 0
                ? s.ask(conns[1], fam[0]) : null;
        s.listOthers(fam);
        s.out.families = new Members[families.length];
        s.out.hashes = new int[families.length][];
        s.out.keyHashes = new int[families.length][];
        s.out.memberPatterns = new int[families.length][];
        for (int f = 0; f < families.length; f++) {
            Future<Set<ObjectName>> found = next != null ? next : s.ask(conns[f % conns.length], fam[f]);
            Members was = f < previous.length ? (Members) previous[f] : null;
            // one connection: one call at a time (the broker then sees one client connection);
            // two answers at once only while the last listing says they are small together
            boolean pair = f + 1 < families.length && conns.length > 1
                    && sizeOf(previous, f) + sizeOf(previous, f + 1) <= answerMost;
            next = pair ? s.ask(conns[(f + 1) % conns.length], fam[f + 1]) : null;
            s.listFamily(f, families[f], fam[f], found, was);
        }
        s.strays(fam);
        s.finish();
        return s.out;
    }

    /** The members previous[f] held (0: none, or no listing before). */
    static int sizeOf(Object[] previous, int f) {
        return f < previous.length && previous[f] != null ? ((Members) previous[f]).size() : 0;
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

    /** Whether every name matching p matches the family pattern f (`d:type=X,name=Y,*`). */
    static boolean within(ObjectName p, ObjectName f) {
        if (p.isDomainPattern() || !p.getDomain().equals(f.getDomain())) return false;
        for (Map.Entry<String, String> e : f.getKeyPropertyList().entrySet()) {
            if (!e.getValue().equals(p.getKeyProperty(e.getKey())) || p.isPropertyValuePattern(e.getKey())) return false;
        }
        return true;
    }

    /** Whether p matches every name of the family pattern f (`d:type=X,name=Y,*`). */
    static boolean holds(ObjectName p, ObjectName f) {
        if (p.equals(ObjectName.WILDCARD)) return true;
        if (p.isDomainPattern() && !p.getDomain().equals("*") || !p.isDomainPattern() && !p.getDomain().equals(f.getDomain())
                || !p.isPropertyListPattern()) return false;
        for (Map.Entry<String, String> e : p.getKeyPropertyList().entrySet()) {
            if (!e.getValue().equals(f.getKeyProperty(e.getKey())) || p.isPropertyValuePattern(e.getKey())) return false;
        }
        return true;
    }

    /** Whether p may match some name of the family pattern f: not when its domain or a key f
     *  fixes (type, name) is another. */
    static boolean mayHold(ObjectName p, ObjectName f) {
        if (!p.isDomainPattern() && !p.getDomain().equals(f.getDomain())) return false;
        for (Map.Entry<String, String> e : f.getKeyPropertyList().entrySet()) {
            String v = p.getKeyProperty(e.getKey());
            if (v != null && !p.isPropertyValuePattern(e.getKey()) && !v.equals(e.getValue())) return false;
        }
        return true;
    }

    /** Whether every name p matches has one of `types` (`d:type=X,*`). */
    static boolean typed(ObjectName p, List<ObjectName> types) {
        for (ObjectName t : types) if (within(p, t)) return true;
        return false;
    }

    /** Whether p may match names of the type pattern t (`d:type=X,*`): false only when p's domain
     *  or type cannot be t's. */
    static boolean mayMatch(ObjectName p, ObjectName t) {
        if (!p.isDomainPattern() && !p.getDomain().equals(t.getDomain())) return false;
        String type = p.getKeyProperty("type");
        if (type != null && !p.isPropertyValuePattern("type")) return type.equals(t.getKeyProperty("type"));
        return type != null || p.isPropertyListPattern();
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
        return positions(queryFound(conn, pattern, query, timeoutMs), given);
    }

    static Set<ObjectName> queryFound(MBeanServerConnection conn, String pattern, QueryExp query, long timeoutMs)
            throws Exception {
        final ObjectName p = new ObjectName(pattern);
        return bounded(() -> conn.queryNames(p, query), timeoutMs);
    }

    /** Per family of `given` (Members), the sorted positions of its members among `found`. */
    static int[][] positions(Set<ObjectName> found, Object[] given) {
        // Object[]: Python cannot name the array class of a class loaded by the helper's loader
        Members[] families = new Members[given.length];
        for (int f = 0; f < given.length; f++) families[f] = (Members) given[f];
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

    /** Appends the record of item i; returns the round trips it took. */
    interface Task {
        int run(MBeanServerConnection conn, int i, StringBuilder sb, List<Object> complex) throws IOException;
    }

    /** Runs task for i in [0, n) on conns.length threads (one per connection), chunk by chunk;
     *  records are concatenated in index order. One IOException stops the whole batch, and so
     *  do stallMs without any item finishing (a stopped broker) and the deadline (0: none). */
    static Result run(MBeanServerConnection[] conns, int n, long deadlineMs, long stallMs, Task task) {
        long t0 = System.nanoTime();
        Batch b = new Batch(conns, n, deadlineMs, stallMs, task);
        List<Future<?>> futures = new ArrayList<>();
        int workers = Math.max(1, Math.min(conns.length, b.chunks.length));
        for (int w = 0; w < workers; w++) {
            final int k = w;
            futures.add(POOL.submit(() -> b.work(k)));
        }
        b.watch(futures);
        Result r = b.result();
        r.nanos = System.nanoTime() - t0;
        return r;
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

}
