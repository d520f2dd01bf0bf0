package sidecar.jmx;

import java.util.Arrays;

/** The members `family,topic=T,partition=P` of one family `domain:type=X,name=Y`, sorted by
 *  (topic, partition) and kept as one long each (topic index << 32 | partition): 8 bytes a
 *  member instead of a ~150-byte name, and a member's position by binary search. */
public final class Members {
    public final String family;
    public final String[] topics;  // distinct, sorted
    final long[] keys;

    Members(String family, String[] topics, long[] keys) {
        this.family = family;
        this.topics = topics;
        this.keys = keys;
    }

    public int size() { return keys.length; }

    /** The topic index column (for Python's copy). */
    public int[] topicColumn() {
        int[] out = new int[keys.length];
        for (int i = 0; i < out.length; i++) out[i] = (int) (keys[i] >>> 32);
        return out;
    }

    /** The partition column (for Python's copy). */
    public int[] partitionColumn() {
        int[] out = new int[keys.length];
        for (int i = 0; i < out.length; i++) out[i] = (int) keys[i];
        return out;
    }

    public String name(int i) { return family + ",topic=" + topics[(int) (keys[i] >>> 32)] + ",partition=" + (int) keys[i]; }

    public String topicsText() { return String.join("\n", topics); }

    int position(String t, int p) {
        int ti = Arrays.binarySearch(topics, t);
        if (ti < 0) return -1;
        int k = Arrays.binarySearch(keys, ((long) ti << 32) | p);
        return k < 0 ? -1 : k;
    }

    String[] names(int[] positions) {
        int n = positions == null ? keys.length : positions.length;
        String[] out = new String[n];
        for (int i = 0; i < n; i++) out[i] = name(positions == null ? i : positions[i]);
        return out;
    }
}
