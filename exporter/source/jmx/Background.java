package sidecar.jmx;

import java.util.concurrent.Future;
import javax.management.MBeanServerConnection;

/** Reads started now and collected later (get()): a poll asks the broker its queries on its own
 *  call while these run over the connections. One batch after another on a pool thread, each
 *  spread over the connections as SidecarJmx.read spreads it; the first failure ends the rest. */
public final class Background {
    private final Future<Result[]> future;

    private Background(Future<Result[]> future) {
        this.future = future;
    }

    /** One attribute of every member of each of `members` (Members objects), then `rest` (null:
     *  nothing); get() returns their Results in that order (null after a failure). */
    public static Background start(MBeanServerConnection[] conns, Object[] members, String attribute,
                                   SidecarJmx.Plan rest, long deadlineMs, long stallMs) {
        Members[] families = new Members[members.length];
        for (int f = 0; f < members.length; f++) families[f] = (Members) members[f];
        return new Background(SidecarJmx.POOL.submit(() -> {
            Result[] out = new Result[families.length + 1];
            for (int f = 0; f < families.length; f++) {
                out[f] = SidecarJmx.readMembers(conns, families[f], null, attribute, deadlineMs, stallMs);
                if (out[f].failure != null) return out;
            }
            if (rest != null) out[families.length] = SidecarJmx.read(conns, rest, deadlineMs, stallMs);
            return out;
        }));
    }

    /** The Results, waiting for them; an interrupted wait (the sidecar stopping) gives them up. */
    public Result[] get() throws Exception {
        return SidecarJmx.awaited(future, 0);
    }

    public void cancel() {
        future.cancel(true);
    }
}
