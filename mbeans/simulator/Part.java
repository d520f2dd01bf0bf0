import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

final class Topic {
    final String name;
    int minIsr;
    final List<Part> parts = new ArrayList<>();

    Topic(String name, int minIsr) {
        this.name = name;
        this.minIsr = minIsr;
    }
}

/** One partition as the controller knows it, plus its log's size and an ongoing reassignment. */
final class Part {
    final Topic topic;
    final int index;
    int[] replicas, isr, adding = new int[0], removing = new int[0];
    int[] elr = new int[0]; // KIP-966 eligible leader replicas (KRaft 4.1+)
    int leader;
    long size, leo, logStart;
    // reassignment in progress
    int[] original;
    long[] copied;
    long[] carry;
    long rate;
    boolean autoComplete;

    Part(Topic topic, int index) {
        this.topic = topic;
        this.index = index;
    }

    boolean reassigning() {
        return adding.length > 0 || removing.length > 0;
    }

    static boolean has(int[] a, int v) {
        for (int x : a) if (x == v) return true;
        return false;
    }

    static int[] without(int[] a, int v) {
        int n = 0;
        for (int x : a) if (x != v) n++;
        int[] r = new int[n];
        n = 0;
        for (int x : a) if (x != v) r[n++] = x;
        return r;
    }

    static int[] with(int[] a, int v) {
        int[] r = Arrays.copyOf(a, a.length + 1);
        r[a.length] = v;
        return r;
    }

    /** a minus b, keeping a's order (ids are distinct in Kafka's lists). */
    static int[] minus(int[] a, int[] b) {
        int n = 0;
        int[] r = new int[a.length];
        for (int x : a) if (!has(b, x)) r[n++] = x;
        return Arrays.copyOf(r, n);
    }

    static int[] intersect(int[] a, int[] b) {
        int n = 0;
        int[] r = new int[a.length];
        for (int x : a) if (has(b, x)) r[n++] = x;
        return Arrays.copyOf(r, n);
    }

    int addingIndex(int broker) {
        for (int k = 0; k < adding.length; k++) if (adding[k] == broker) return k;
        return -1;
    }
}

/** A produce/consume load on one topic or on all ("*"), in bytes and messages per second. */
final class Traffic {
    final String topic;
    long bytesIn, messagesIn, bytesOut;
    long carryIn, carryMsgs, carryOut;

    Traffic(String topic) {
        this.topic = topic;
    }
}
