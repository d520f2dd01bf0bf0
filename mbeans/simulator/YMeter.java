import java.util.concurrent.TimeUnit;

/** The simulated clock: nanoseconds since the simulator started, moved by advance() or in real time. */
final class SimClock {
    long nanos;
    final long startEpochMs = System.currentTimeMillis();

    long epochMs() {
        return startEpochMs + nanos / 1_000_000L;
    }
}

/** Yammer metrics 2.2 Meter semantics on the simulated clock. Accessed under the model lock. */
final class YMeter {
    static final long TICK = TimeUnit.SECONDS.toNanos(5);
    static final double M1 = 1 - Math.exp(-5 / 60.0 / 1);
    static final double M5 = 1 - Math.exp(-5 / 60.0 / 5);
    static final double M15 = 1 - Math.exp(-5 / 60.0 / 15);

    private final SimClock clock;
    private final long start;
    private long lastTick;
    long count;
    private final double[] rate = new double[3];
    private final long[] uncounted = new long[3];
    private boolean initialized;

    YMeter(SimClock clock) {
        this.clock = clock;
        this.start = clock.nanos;
        this.lastTick = start;
    }

    void mark(long n) {
        tickIfNecessary();
        count += n;
        for (int k = 0; k < 3; k++) uncounted[k] += n;
    }

    /**
     * n events spread evenly over (from, clock.nanos], as a broker under steady load marks them:
     * the meter ticks at each 5 s boundary inside the interval with the events before it, exactly
     * as Yammer's tickIfNecessary() would under continuous marking.
     */
    void markOver(long n, long from) {
        long to = clock.nanos;
        if (n <= 0) return;
        if (lastTick < from - TICK) tickTo(from); // idle before the interval: catch up first
        long cur = Math.max(from, lastTick);
        while (to > cur && lastTick + TICK + 1 <= to) {
            long boundary = lastTick + TICK + 1;
            long part = boundary <= cur ? 0 : (long) (n * ((double) (boundary - cur) / (to - cur)));
            count += part;
            for (int k = 0; k < 3; k++) uncounted[k] += part;
            n -= part;
            cur = Math.max(cur, boundary);
            lastTick = boundary;
            tick();
        }
        count += n;
        for (int k = 0; k < 3; k++) uncounted[k] += n;
    }

    private void tickTo(long now) {
        long age = now - lastTick;
        if (age > TICK) {
            lastTick = now;
            long ticks = Math.min(age / TICK, 100_000);
            for (long t = 0; t < ticks; t++) tick();
        }
    }

    private void tickIfNecessary() {
        tickTo(clock.nanos); // (ticks beyond 100,000 change nothing: the rates are 0.0 long before)
    }

    private void tick() {
        double[] alpha = {M1, M5, M15};
        for (int k = 0; k < 3; k++) {
            double instant = uncounted[k] / (double) TICK;
            uncounted[k] = 0;
            if (initialized) rate[k] += alpha[k] * (instant - rate[k]);
            else rate[k] = instant;
        }
        initialized = true;
    }

    double rate(int k) {
        tickIfNecessary();
        return rate[k] * 1e9;
    }

    double meanRate() {
        if (count == 0) return 0.0;
        long elapsed = clock.nanos - start;
        if (elapsed <= 0) return 0.0; // Yammer would divide by zero; a real clock never reads 0 elapsed
        return count / (double) elapsed * 1e9;
    }
}
