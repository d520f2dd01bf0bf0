package sidecar.jmx;

public final class Split {
    public Names rest;
    public int[] restHash;  // getCanonicalName().hashCode() of each rest name, in rest order
    public Members[] families;  // in the order asked for; a family with no member is empty
    public int[][] hashes;  // per family, each member's getCanonicalName().hashCode() (not kept);
                            // null where the family is the `previous` one given, unchanged
    // getCanonicalKeyPropertyListString().hashCode() of each rest name and member: the order of
    // names sharing a bucket of jmx_exporter's set, without their text
    public int[] restKeyHash;
    public int[][] keyHashes;
    // What jmx_exporter's visiting order depends on beyond the names kept: it adds every name
    // the include patterns match to its HashSet before removing the excluded ones (so the
    // table is sized for all of them), and the broker's repository holds a table per domain
    // sized for all that domain's MBeans. "domain\ncount\n..." of the names matched before
    // exclusion, and how many domains the broker has.
    public int listedTotal;
    public String domainCounts = "";
    public int serverDomains;
    // Names sharing a bucket of jmx_exporter's set come in the order it added them: those of
    // its first include pattern first, and within one pattern's result in the order of the
    // set of ObjectInstances the broker returned (hashed with the class name). Per rest name:
    // the first include pattern that matched it and its class name's hashCode(); per family
    // member the first pattern (null with one include pattern); per pattern, what it matched.
    public int[] restPattern;
    public int[] restClass;
    public String[] classNames;  // the rest names' class names, each once
    public int[] restClassIndex;  // per rest name, its class name's index in classNames (-1: none)
    public int[][] memberPatterns;
    public int[] patternSizes;
}
