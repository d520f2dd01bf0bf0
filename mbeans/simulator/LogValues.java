import java.util.HashMap;
import java.util.Map;

/**
 * Per-partition log values in the shape a production broker shows (mbeans/simulator/values.py
 * describes the classes and holds their shares): most partitions idle, some busy, a few lagging;
 * the same partitions get the same values for the same seed. Off (every value the model's own,
 * sizes and offsets 0 until traffic) unless the spec has "log_values".
 *
 * What each class serves, as a real broker does (tests/real/test_simulator_vs_broker.py):
 *   empty    never written: Size 0, offsets 0, one segment;
 *   expired  idle past retention: the segments deleted, Size 0, LogStartOffset = LogEndOffset > 0;
 *   idle     data kept, nothing written: its own Size, offsets and segments, unchanged;
 *   busy     written to: Size and LogEndOffset grow with the wall clock (between any two polls,
 *            whatever the model's clock), some with an open transaction (LastStableOffsetLag > 0);
 *   lagging  idle or not, a follower behind its leader: its fetcher's lag grows with the wall clock.
 * The model's own traffic (produce, reassignment copies) adds to these.
 */
final class LogValues {
    static final int EMPTY = 0, EXPIRED = 1, IDLE = 2, BUSY = 3;

    /** One partition's values at wall-clock time 0 and their growth. */
    static final class Profile {
        int kind;
        long size, leo, start, segments, bytesPerSec, recordsPerSec, lsoLagPerSec, lagBase, lagPerSec;
    }

    final long seed;
    final double empty, expired, busy, lagging, transactional;
    final long segmentBytes, batchHeader, recordOverhead; // values.py: what a log stores per record
    final long[] valueBytes, recordsPerBatch; // the ranges drawn from
    final long t0 = System.nanoTime();
    private final Map<Part, Profile> profiles = new HashMap<>();

    LogValues(Map<String, Object> spec, long segmentBytes) {
        seed = Json.l(spec.get("seed"), "log_values.seed");
        empty = share(spec, "empty");
        expired = share(spec, "expired");
        busy = share(spec, "busy");
        lagging = share(spec, "lagging");
        transactional = share(spec, "transactional");
        if (empty + expired + busy > 1) throw new UserError("log_values: empty + expired + busy is more than 1");
        this.segmentBytes = segmentBytes;
        batchHeader = Json.l(spec.get("batch_header"), "log_values.batch_header");
        recordOverhead = Json.l(spec.get("record_overhead"), "log_values.record_overhead");
        valueBytes = range(spec, "value_bytes");
        recordsPerBatch = range(spec, "records_per_batch");
    }

    static long[] range(Map<String, Object> spec, String key) {
        java.util.List<Object> l = Json.list(spec.get(key), "log_values." + key);
        return new long[] {Json.l(l.get(0), key), Json.l(l.get(1), key)};
    }

    static double share(Map<String, Object> spec, String key) {
        Object v = spec.get(key);
        double d = v instanceof Number ? ((Number) v).doubleValue() : -1;
        if (d < 0 || d > 1) throw new UserError("log_values." + key + ": a share between 0 and 1");
        return d;
    }

    /** SplitMix64: a partition's own stream of numbers from (seed, topic, partition). */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    final class Draw {
        long state;

        Draw(Part p) {
            state = mix(seed ^ mix(p.topic.name.hashCode() * 0x9e3779b97f4a7c15L + p.index));
        }

        double uniform() {
            state += 0x9e3779b97f4a7c15L;
            return (mix(state) >>> 11) * 0x1.0p-53;
        }

        /** Log-uniform between lo and hi. */
        long between(double lo, double hi) {
            return (long) Math.exp(Math.log(lo) + uniform() * (Math.log(hi) - Math.log(lo)));
        }
    }

    Profile profile(Part p) {
        Profile out = profiles.get(p);
        if (out == null) {
            out = draw(p);
            profiles.put(p, out);
        }
        return out;
    }

    private Profile draw(Part p) {
        Draw d = new Draw(p);
        Profile f = new Profile();
        double u = d.uniform();
        f.kind = u < empty ? EMPTY : u < empty + expired ? EXPIRED : u < empty + expired + busy ? BUSY : IDLE;
        long value = d.between(valueBytes[0], valueBytes[1]);
        long perBatch = d.between(recordsPerBatch[0], recordsPerBatch[1]);
        // bytes a record takes in the log (values.py's stored_bytes)
        double stored = value + recordOverhead + batchHeader / (double) perBatch;
        if (f.kind != EMPTY) {
            f.leo = d.between(10, 5e9 / stored);
            long kept = f.kind == EXPIRED ? 0 : d.uniform() < 0.5 ? f.leo : d.between(1, f.leo + 1);
            f.start = f.leo - kept;
            f.size = (long) (kept * stored);
            // the segments retention left and those rolled by time (segment.ms), the active one included
            f.segments = f.kind == EXPIRED ? 1 : 1 + f.size / segmentBytes + (d.uniform() < 0.3 ? d.between(1, 12) : 0);
        } else {
            f.segments = 1;
        }
        if (f.kind == BUSY) {
            f.recordsPerSec = d.between(1, 5000);
            f.bytesPerSec = (long) (f.recordsPerSec * stored);
            if (d.uniform() < transactional) f.lsoLagPerSec = Math.max(1, f.recordsPerSec / 2);
        }
        if (d.uniform() < lagging) {
            f.lagBase = d.between(1, 1e6);
            f.lagPerSec = d.between(100, 10000);
        }
        return f;
    }

    double seconds() {
        return (System.nanoTime() - t0) / 1e9;
    }

    long size(Part p) {
        Profile f = profile(p);
        return f.size + (long) (f.bytesPerSec * seconds());
    }

    long logEndOffset(Part p) {
        Profile f = profile(p);
        return f.leo + (long) (f.recordsPerSec * seconds());
    }

    long logStartOffset(Part p) {
        return profile(p).start;
    }

    long segments(Part p) {
        Profile f = profile(p);
        return f.segments + (f.bytesPerSec * (long) seconds()) / segmentBytes;
    }

    /** An open transaction's records the log holds back from readers: grows, then commits each minute. */
    long lastStableOffsetLag(Part p) {
        Profile f = profile(p);
        return f.lsoLagPerSec == 0 ? 0 : 1 + (long) (f.lsoLagPerSec * (seconds() % 60));
    }

    /** A follower's lag behind its leader: a lagging one's grows with the wall clock. */
    long fetcherLag(Part p) {
        Profile f = profile(p);
        return f.lagPerSec == 0 ? 0 : f.lagBase + (long) (f.lagPerSec * seconds());
    }
}
