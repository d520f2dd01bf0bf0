package sidecar.jmx;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.management.MBeanServerConnection;
import javax.management.ObjectInstance;
import javax.management.ObjectName;
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
}
