package sidecar.jmx;

import java.util.concurrent.Future;
import javax.management.MBeanServerConnection;

/** Reads started now and collected later (get(k)): a poll asks the broker its queries on its own
 *  call while these run over the connections. One batch after another on a pool thread, each
 *  spread over the connections as SidecarJmx.read spreads it; the first failure ends the rest.
 *  Each batch's Result is handed over as soon as it is read, so that the caller works on one
 *  family's values while the next is read. */
public final class Background {
    private final Result[] out;
    private int ready;  // out[0] .. out[ready - 1] are read
    private boolean over;  // the reads ended: all read, one failed, or the task threw
    private Future<?> future;

    private Background(int batches) {
        out = new Result[batches];
    }

    /** One attribute of every member of each of `members` (Members objects), then `rest` (null:
     *  nothing); get(k) returns the k-th Result in that order. */
    public static Background start(MBeanServerConnection[] conns, Object[] members, String attribute,
                                   SidecarJmx.Plan rest, long deadlineMs, long stallMs) {
        Members[] families = new Members[members.length];
        for (int f = 0; f < members.length; f++) families[f] = (Members) members[f];
        Background b = new Background(families.length + 1);
        b.future = SidecarJmx.POOL.submit(() -> {
            try {
                for (int f = 0; f < families.length; f++) {
                    Result r = SidecarJmx.readMembers(conns, families[f], null, attribute, deadlineMs, stallMs);
                    b.publish(r);
                    if (r.failure != null) return null;
                }
                b.publish(rest != null ? SidecarJmx.read(conns, rest, deadlineMs, stallMs) : null);
                return null;
            } finally {
                b.end();
            }
        });
        return b;
    }

    private synchronized void publish(Result r) {
        out[ready++] = r;
        notifyAll();
    }

    private synchronized void end() {
        over = true;
        notifyAll();
    }

    /** The k-th Result, waiting for it only (null: nothing to read there, or an earlier read
     *  failed); the task's exception when it threw before. Each is taken once. An interrupted wait (the sidecar
     *  stopping) gives the reads up. */
    public Result get(int k) throws Exception {
        synchronized (this) {
            try {
                while (ready <= k && !over) wait();
            } catch (InterruptedException e) {
                future.cancel(true);
                throw e;
            }
            if (ready > k) {
                Result r = out[k];
                out[k] = null;  // taken once: its text is not held while the rest is read
                return r;
            }
        }
        SidecarJmx.awaited(future, 0);  // over without it: the task's exception, if it threw
        return null;
    }

    public void cancel() {
        future.cancel(true);
    }
}
