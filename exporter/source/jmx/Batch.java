package sidecar.jmx;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.MBeanServerConnection;

import static sidecar.jmx.SidecarJmx.*;

/** One run(): the workers (one per connection) take the next chunk of items in turn; the
 *  calling thread watches them. The first failure wins and stops the batch. */
final class Batch {
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
