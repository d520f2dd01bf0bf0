package sidecar.jmx;

import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.QueryExp;

/** Several member queries asked at once, one per connection at a time: the broker scans its
 *  domain for each on a thread of its own, where one connection would scan for them one after
 *  the other. Started now, each answer collected later (get(k)) as soon as it is in: the caller
 *  works on one answer while the others are asked. `lanes` (one permit per connection) may be
 *  shared with queries started later, so that all of them ask one per connection at a time. An answer is SidecarJmx.queryMembers' (per
 *  family, the positions of the members returned), with the seconds it took. A query started
 *  with no families (null) is answered as the names it returned until get(k, families) says
 *  whose members they are: it may start before the families are listed. A query starts, in
 *  the order given, once the answers expected of those in flight and its own add up to
 *  `answerMost` names at most (or nothing is in flight): the JVM holds each answer whole. After a
 *  failure no query starts; get(k) of one not answered throws it. */
public final class Together {
    public final int[][][] hits;
    public final long[] nanos;
    private final Set<ObjectName>[] found;  // the answers of queries started with no families
    private final int[] expected;
    private final int answerMost;
    private int next;
    private int inFlight;  // names expected of the queries asked and not answered yet
    private Exception failure;
    private Future<?>[] workers;

    private Together(int[] expected, int answerMost) {
        hits = new int[expected.length][][];
        @SuppressWarnings("unchecked") Set<ObjectName>[] f = new Set[expected.length];
        found = f;
        nanos = new long[expected.length];
        this.expected = expected;
        this.answerMost = answerMost;
    }

    public static Semaphore lanes(int connections) {
        return new Semaphore(connections);
    }

    public static Together start(MBeanServerConnection[] conns, Semaphore lanes, String[] patterns, QueryExp[] queries,
                                 Object[][] families, int[] expected, int answerMost, long timeoutMs) {
        Together t = new Together(expected, answerMost);
        int n = Math.min(conns.length, patterns.length);
        t.workers = new Future<?>[n];
        for (int w = 0; w < n; w++) {
            final MBeanServerConnection conn = conns[w];
            t.workers[w] = SidecarJmx.POOL.submit(() -> {
                try {
                    for (int q = t.take(); q >= 0; q = t.take()) {
                        lanes.acquire();
                        try {
                            long started = System.nanoTime();
                            Set<ObjectName> names = SidecarJmx.queryFound(conn, patterns[q], queries[q], timeoutMs);
                            int[][] h = families[q] == null ? null : SidecarJmx.positions(names, families[q]);
                            t.answer(q, h, h == null ? names : null, System.nanoTime() - started);
                        } finally {
                            lanes.release();
                        }
                    }
                } catch (Exception e) {
                    t.fail(e);
                }
            });
        }
        return t;
    }

    /** The k-th query's answer, waiting for it only; the first failure when it is not answered.
     *  A query started with no families is answered as the positions of the members of
     *  `families` (Members; null for the others). An interrupted wait (the sidecar stopping)
     *  gives every query up. */
    public int[][] get(int k, Object[] families) throws Exception {
        synchronized (this) {
            try {
                while (hits[k] == null && found[k] == null && failure == null) wait();
            } catch (InterruptedException e) {
                cancel();
                throw e;
            }
            if (hits[k] == null && found[k] != null) {
                if (families == null) throw new IllegalArgumentException("query " + k + " was started with no families");
                hits[k] = SidecarJmx.positions(found[k], families);
                found[k] = null;
            }
            if (hits[k] != null) return hits[k];
            throw failure;
        }
    }

    public void cancel() {
        for (Future<?> w : workers) w.cancel(true);
    }

    /** The next query to ask (-1: none left, or one failed), once the answers in flight allow it. */
    private synchronized int take() throws InterruptedException {
        while (failure == null && next < expected.length && inFlight > 0 && inFlight + expected[next] > answerMost) wait();
        if (failure != null || next >= expected.length) return -1;
        inFlight += expected[next];
        return next++;
    }

    private synchronized void answer(int q, int[][] h, Set<ObjectName> names, long took) {
        nanos[q] = took;
        hits[q] = h;
        found[q] = names;
        inFlight -= expected[q];
        notifyAll();
    }

    private synchronized void fail(Exception e) {
        if (failure == null) failure = e;
        notifyAll();
    }
}
