package sidecar.jmx;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Future;
import javax.management.MBeanServerConnection;
import javax.management.ObjectInstance;
import javax.management.ObjectName;
import javax.management.Query;
import javax.management.QueryExp;

import static sidecar.jmx.SidecarJmx.*;

/** One listSplit: what it has listed so far, and the steps that list the rest. */
final class Splitter {
    final MBeanServerConnection conn;
    final ObjectName[] in, ex;
    final long timeoutMs;
    final Split out = new Split();
    final Set<ObjectName> others = new HashSet<>();  // the names read whole (not yet excluded)
    final Map<ObjectName, long[]> origin = new HashMap<>();  // rest name -> {first pattern, class hash}
    final Map<String, int[]> perDomain = new HashMap<>();  // names matched before exclusion
    final Map<String, Integer> classIndex = new HashMap<>();  // class names of the names read whole

    Splitter(MBeanServerConnection conn, ObjectName[] in, ObjectName[] ex, long timeoutMs) {
        this.conn = conn;
        this.in = in;
        this.ex = ex;
        this.timeoutMs = timeoutMs;
        out.rest = new Names();
        out.patternSizes = new int[in.length];
    }

    /** The names of no family's type (queryMBeans per include pattern, with their class names:
     *  `not` the families' types, two patterns for Kafka's per-partition gauges, where `not` the
     *  families would match each of the broker's names against each family), and how many
     *  domains the broker has. The names of a family's type in no family: strays(). */
    void listOthers(ObjectName[] families) throws Exception {
        List<ObjectName> types = new ArrayList<>();
        for (ObjectName f : families) {
            ObjectName t = typeOf(f);
            if (!types.contains(t)) types.add(t);
        }
        QueryExp notTyped = types.isEmpty() ? null : Query.not(anyOf(types.toArray(new ObjectName[0])));
        for (int k = 0; k < in.length; k++) {
            if (!typed(in[k], types)) addOthers(k, in[k], notTyped);  // else `not` the types leaves none
        }
        out.serverDomains = bounded(() -> conn.getDomains(), timeoutMs).length;
        out.rest.roundTrips++;
    }

    static ObjectName typeOf(ObjectName family) throws Exception {
        return new ObjectName(family.getDomain() + ":type=" + family.getKeyProperty("type") + ",*");
    }

    /** queryMBeans(pattern, q) as names of include pattern k, read whole. */
    void addOthers(int k, ObjectName pattern, QueryExp q) throws Exception {
        Set<ObjectInstance> got = bounded(() -> conn.queryMBeans(pattern, q), timeoutMs);
        out.rest.roundTrips++;
        out.patternSizes[k] += got.size();
        for (ObjectInstance oi : got) {
            ObjectName n = oi.getObjectName();
            if (others.add(n)) {
                String cls = oi.getClassName();
                origin.put(n, new long[] {k, cls == null ? 0 : cls.hashCode(), classOf(cls)});
                perDomain.computeIfAbsent(n.getDomain(), d -> new int[1])[0]++;
                out.listedTotal++;
            }
        }
    }

    /** The index of class name cls among the names read whole's (-1: none given). */
    int classOf(String cls) {
        return cls == null ? -1 : classIndex.computeIfAbsent(cls, c -> classIndex.size());
    }

    /** The names of a family's type that no family holds (another gauge of that type): none
     *  when an include pattern is every name and the listing holds as many names as the broker
     *  (one round trip); else asked per include pattern that may hold some, of those names only. */
    void strays(ObjectName[] families) throws Exception {
        boolean everything = false;
        for (ObjectName p : in) everything |= p.equals(ObjectName.WILDCARD);
        if (everything) {
            int count = bounded(() -> conn.getMBeanCount(), timeoutMs);
            out.rest.roundTrips++;
            if (count == out.listedTotal) return;
        }
        List<ObjectName> types = new ArrayList<>();
        for (ObjectName f : families) if (!types.contains(typeOf(f))) types.add(typeOf(f));
        for (ObjectName t : types) {
            List<ObjectName> of = new ArrayList<>();
            for (ObjectName f : families) if (typeOf(f).equals(t)) of.add(f);
            QueryExp notFamily = Query.not(anyOf(of.toArray(new ObjectName[0])));
            for (int k = 0; k < in.length; k++) {
                ObjectName p = in[k];
                boolean held = false;
                for (ObjectName f : of) held |= within(p, f);
                if (held || !mayMatch(p, t)) continue;
                // the narrower of the two as the pattern the broker scans, the other in the query
                boolean narrow = !p.isDomainPattern() && p.getKeyProperty("type") != null && !p.isPropertyValuePattern("type");
                addOthers(k, narrow ? p : t, Query.and(narrow ? t : p, notFamily));
            }
        }
    }

    /** Family f's names, asked on conn meanwhile the caller goes on: the include patterns as
     *  the query unless one holds the whole family; not asked (null) when none may hold a member. */
    Future<Set<ObjectName>> ask(MBeanServerConnection c, ObjectName family) {
        int[] cover = coverage(family);
        boolean whole = false, some = false;
        for (int k : cover) {
            whole |= k == ALL;
            some |= k != NONE;
        }
        if (!some) return null;
        final QueryExp q = whole ? null : anyOf(in);
        return POOL.submit(() -> c.queryNames(family, q));
    }

    static final int NONE = 0, SOME = 1, ALL = 2;

    /** Per include pattern, which of the family's members it matches: all, none, or some (each
     *  name then matched as the broker matches it). */
    int[] coverage(ObjectName family) {
        int[] out = new int[in.length];
        for (int k = 0; k < in.length; k++) out[k] = holds(in[k], family) ? ALL : mayHold(in[k], family) ? SOME : NONE;
        return out;
    }

    Set<ObjectName> answer(Future<Set<ObjectName>> f) throws Exception {
        if (f == null) return Set.of();  // not asked
        try {
            return timeoutMs > 0 ? f.get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS) : f.get();
        } catch (java.util.concurrent.TimeoutException e) {
            f.cancel(true);
            throw new java.net.SocketTimeoutException("no answer within " + timeoutMs + " ms");
        } catch (InterruptedException e) {
            f.cancel(true);
            throw e;
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) throw (Exception) cause;
            throw e;
        }
    }

    /** Family f's members as columns into out (the `was` object when they are its members,
     *  unchanged); its names shaped unlike a member go to the others. */
    void listFamily(int f, String family, ObjectName pattern, Future<Set<ObjectName>> asked, Members was)
            throws Exception {
        Set<ObjectName> found = answer(asked);
        if (asked != null) out.rest.roundTrips++;
        int[] cover = coverage(pattern);
        out.listedTotal += found.size();
        if (!found.isEmpty()) perDomain.computeIfAbsent(pattern.getDomain(), d -> new int[1])[0] += found.size();
        List<Object[]> ms = new ArrayList<>(found.size());
        for (ObjectName n : found) {
            int first = firstPattern(n, cover);
            if (excluded(n, ex)) continue;
            String[] parts = memberParts(n.getKeyPropertyListString());
            if (parts == null || !family.equals(n.getDomain() + ":" + parts[0])) {
                others.add(n);
                String cls = bounded(() -> conn.getObjectInstance(n), timeoutMs).getClassName();
                origin.put(n, new long[] {first, cls == null ? 0 : cls.hashCode(), classOf(cls)});
            } else {
                ms.add(new Object[] {parts[1], Integer.parseInt(parts[2]), n.getCanonicalName().hashCode(), first,
                                     n.getCanonicalKeyPropertyListString().hashCode()});
            }
        }
        found = null;  // before the next family's names are taken apart
        int[][] hashes = columns(family, ms, out.families, f);
        int[] hash = hashes[0];
        out.keyHashes[f] = hashes[1];
        if (in.length > 1) {
            int[] firsts = new int[ms.size()];
            for (int i = 0; i < firsts.length; i++) firsts[i] = (Integer) ms.get(i)[3];
            out.memberPatterns[f] = firsts;
        }
        if (was != null && was.family.equals(family) && Arrays.equals(was.keys, out.families[f].keys)
                && Arrays.equals(was.topics, out.families[f].topics)) {
            out.families[f] = was;  // unchanged since the last listing: the same object, no hashes
            hash = null;
            out.keyHashes[f] = null;
        }
        out.hashes[f] = hash;
    }

    /** The first include pattern that matches n (0 with one pattern or none), counting n in
     *  each pattern's size: the patterns jmx_exporter's queries would return it for. `cover`:
     *  the patterns' coverage of n's family, so that only those matching some of it are applied. */
    int firstPattern(ObjectName n, int[] cover) {
        int first = 0;
        if (in.length > 1) {
            first = -1;
            for (int k = 0; k < in.length; k++) {
                if (cover[k] == ALL || cover[k] == SOME && in[k].apply(n)) {
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
        out.classNames = new String[classIndex.size()];
        for (Map.Entry<String, Integer> e : classIndex.entrySet()) out.classNames[e.getValue()] = e.getKey();
        List<ObjectName> rest = new ArrayList<>(others.size());
        for (ObjectName n : others) if (!excluded(n, ex)) rest.add(n);
        sorted(rest, out.rest);
        out.restHash = new int[rest.size()];
        out.restKeyHash = new int[rest.size()];
        Map<String, Integer> restPos = new HashMap<>();
        for (int i = 0; i < out.rest.names.length; i++) restPos.put(out.rest.names[i], i);
        out.restPattern = new int[rest.size()];
        out.restClass = new int[rest.size()];
        out.restClassIndex = new int[rest.size()];
        for (ObjectName n : rest) {
            int at = restPos.get(n.toString());
            out.restHash[at] = n.getCanonicalName().hashCode();
            out.restKeyHash[at] = n.getCanonicalKeyPropertyListString().hashCode();
            long[] o = origin.get(n);
            out.restPattern[at] = (int) o[0];
            out.restClass[at] = (int) o[1];
            out.restClassIndex[at] = (int) o[2];
        }
    }

        /** Members {topic, partition, hash, first pattern, key hash} sorted by (topic, partition)
         *  into out[f]; their hashes and key hashes. */
        static int[][] columns(String family, List<Object[]> ms, Members[] out, int f) {
            ms.sort((a, b) -> {
                int c = ((String) a[0]).compareTo((String) b[0]);
                return c != 0 ? c : Integer.compare((Integer) a[1], (Integer) b[1]);
            });
            List<String> topics = new ArrayList<>();
            int n = ms.size();
            long[] keys = new long[n];
            int[] hash = new int[n], keyHash = new int[n];
            for (int i = 0; i < n; i++) {
                Object[] m = ms.get(i);
                if (topics.isEmpty() || !topics.get(topics.size() - 1).equals(m[0])) topics.add(((String) m[0]).intern());
                keys[i] = ((long) (topics.size() - 1) << 32) | (Integer) m[1];
                hash[i] = (Integer) m[2];
                keyHash[i] = (Integer) m[4];
            }
            out[f] = new Members(family, topics.toArray(new String[0]), keys);
            return new int[][] {hash, keyHash};
        }
}
