import java.io.IOException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.management.MBeanInfo;

/**
 * The cluster: nodes, topics, partitions, traffic; every health value is computed here, Kafka's way.
 * Its events are ModelEvents', the passing of time ModelTime's; all of them run under its lock.
 */
final class Model {
    final int[] version;
    final String versionText, clusterId;
    final boolean kraft;
    final SimClock clock = new SimClock();
    final boolean realtime;
    final LinkedHashMap<Integer, Node> nodes = new LinkedHashMap<>();
    final List<Integer> brokerIds = new ArrayList<>();
    int activeController = -1;
    final LinkedHashMap<String, Topic> topics = new LinkedHashMap<>();
    final LinkedHashMap<String, Traffic> traffic = new LinkedHashMap<>();
    final List<HealthSpec> health = new ArrayList<>();
    final List<HealthSpec> partitionSpecs = new ArrayList<>();
    final Map<String, HealthSpec> topicSpecs = new HashMap<>();
    final Map<String, Inventory.Row> topicTemplates = new HashMap<>();
    final MBeanInfo gaugeInfo, meterInfo;
    final Inventory inventory;
    final long defaultReassignRate;
    final long segmentBytes = 1L << 30;
    final LogValues logValues; // null: sizes and offsets are the model's traffic alone
    static final String LEADER_HOST = "127.0.0.1"; // FetcherStats' brokerHost/brokerPort: the leader's listener
    static final int LEADER_PORT = 9092;
    Node posed;
    long stamp; // bumped whenever a partition's assignment, ISR or leader may have changed
    boolean hostingDirty = true;
    final ModelEvents events = new ModelEvents(this);
    final ModelTime time = new ModelTime(this);
    private long ctrlStamp = -1;
    private final long[] ctrl = new long[8];

    Model(Map<String, Object> spec) throws IOException {
        versionText = Json.str(spec.get("kafka_version"), "kafka_version");
        version = Json.ints(spec.get("version_parts"), "version_parts");
        kraft = "kraft".equals(spec.get("metadata_mode"));
        clusterId = spec.get("cluster_id") == null ? "sim-cluster" : Json.str(spec.get("cluster_id"), "cluster_id");
        realtime = !"manual".equals(spec.get("clock"));
        logValues = spec.get("log_values") == null ? null
                : new LogValues(Json.obj(spec.get("log_values"), "log_values"), segmentBytes);
        defaultReassignRate = spec.get("reassignment_bytes_per_sec") == null ? 10L << 20
                : Json.l(spec.get("reassignment_bytes_per_sec"), "reassignment_bytes_per_sec");

        Map<String, Object> kinds = Json.obj(spec.get("kinds"), "kinds");
        Map<String, Object> gauge = Json.obj(kinds.get("GAUGE"), "kinds.GAUGE");
        Map<String, Object> meter = Json.obj(kinds.get("METER"), "kinds.METER");
        gaugeInfo = Infos.yammer(Json.str(gauge.get("class"), "class"), Json.list(gauge.get("attributes"), "attributes"));
        meterInfo = Infos.yammer(Json.str(meter.get("class"), "class"), Json.list(meter.get("attributes"), "attributes"));

        for (Object o : Json.list(spec.get("health"), "health")) {
            HealthSpec s = new HealthSpec(Json.obj(o, "health"));
            health.add(s);
            if (s.scope.equals("partition")) partitionSpecs.add(s);
            if (s.scope.equals("topic")) topicSpecs.put(s.name, s);
        }
        Set<String> healthKeys = new HashSet<>();
        for (Object o : Json.list(spec.get("health_keys"), "health_keys")) healthKeys.add(Json.str(o, "health_keys"));
        Object inv = spec.get("inventory");
        inventory = inv == null ? null : Inventory.load(Paths.get(Json.str(inv, "inventory")), healthKeys);
        if (inventory != null) {
            for (Inventory.Row r : inventory.rows) if (r.perTopic && r.shape.isMeter) topicTemplates.put(r.name, r);
        }

        Security security = new Security(spec.get("security") == null ? new HashMap<>() : Json.obj(spec.get("security"), "security"));
        readNodes(spec, security);
        readTopics(spec);
    }

    /** The nodes, the active controller, the served ports, the posed node and the offline ones. */
    private void readNodes(Map<String, Object> spec, Security security) throws IOException {
        Set<Integer> controllers = new LinkedHashSet<>();
        for (int c : Json.ints(spec.get("controllers"), "controllers")) controllers.add(c);
        for (int b : Json.ints(spec.get("brokers"), "brokers")) {
            brokerIds.add(b);
            nodes.put(b, new Node(this, b, true, kraft ? controllers.contains(b) : true));
        }
        for (int c : controllers) {
            if (!nodes.containsKey(c)) {
                if (!kraft) throw new UserError("controller " + c + " is not a broker: dedicated controllers need KRaft");
                nodes.put(c, new Node(this, c, false, true));
            }
        }
        if (kraft) {
            for (int c : controllers) {
                activeController = c;
                break;
            }
        } else {
            activeController = controllers.isEmpty() ? Collections.min(brokerIds) : controllers.iterator().next();
        }
        Map<String, Object> ports = Json.obj(spec.get("ports"), "ports");
        for (Map.Entry<String, Object> e : ports.entrySet()) {
            Node n = nodes.get(Integer.parseInt(e.getKey()));
            if (n == null) throw new UserError("ports: node " + e.getKey() + " is not in the cluster");
            int port = Json.i(e.getValue(), "port");
            n.endpoint = port == 0 ? Endpoint.onFreePort(security) : new Endpoint(port, security);
        }
        posed = nodes.get(Json.i(spec.get("posed"), "posed"));
        if (posed == null || posed.endpoint == null) throw new UserError("the posed node must be in the cluster and served");
        for (int d : Json.ints(spec.get("offline"), "offline")) {
            Node n = nodes.get(d);
            if (n == null) throw new UserError("offline node " + d + " is not in the cluster");
            n.alive = false;
        }
        if (activeController >= 0 && !nodes.get(activeController).alive) activeController = nextController(-1);
    }

    private void readTopics(Map<String, Object> spec) {
        for (Object o : Json.list(spec.get("topics"), "topics")) {
            Map<String, Object> t = Json.obj(o, "topic");
            Topic topic = new Topic(Json.str(t.get("name"), "topic.name"), Json.i(t.getOrDefault("min_isr", 1L), "min_isr"));
            if (topics.containsKey(topic.name)) throw new UserError("topic " + topic.name + " defined twice");
            List<Object> ps = Json.list(t.get("partitions"), "partitions");
            for (int k = 0; k < ps.size(); k++) {
                Map<String, Object> pm = Json.obj(ps.get(k), "partition");
                Part p = new Part(topic, k);
                p.replicas = Json.ints(pm.get("replicas"), "replicas");
                p.isr = Json.ints(pm.get("isr"), "isr");
                p.leader = pm.get("leader") == null ? -1 : Json.i(pm.get("leader"), "leader");
                p.adding = Json.ints(pm.get("adding_replicas"), "adding_replicas");
                p.removing = Json.ints(pm.get("removing_replicas"), "removing_replicas");
                p.size = pm.get("size_bytes") == null ? 0 : Json.l(pm.get("size_bytes"), "size_bytes");
                p.leo = pm.get("log_end_offset") == null ? 0 : Json.l(pm.get("log_end_offset"), "log_end_offset");
                if (p.reassigning()) {
                    p.original = Part.minus(p.replicas, p.adding);
                    p.copied = new long[p.adding.length];
                    p.carry = new long[p.adding.length];
                    p.rate = pm.get("bytes_per_sec") == null ? defaultReassignRate : Json.l(pm.get("bytes_per_sec"), "bytes_per_sec");
                    p.autoComplete = true;
                    for (int a = 0; a < p.adding.length; a++) if (Part.has(p.isr, p.adding[a])) p.copied[a] = p.size;
                }
                topic.parts.add(p);
            }
            topics.put(topic.name, topic);
        }
    }

    boolean ge(int major, int minor) {
        int a = version.length > 0 ? version[0] : 0, b = version.length > 1 ? version[1] : 0;
        return a > major || (a == major && b >= minor);
    }

    void startNodes() throws Exception {
        for (Node n : nodes.values()) {
            if (n.alive) n.start();
        }
        hostingDirty = true;
        time.syncHosting();
    }

    // ----- Kafka's rules ---------------------------------------------------------------------------

    /** Partition.replicationFactor: 2.5+ the assignment without adding replicas (Seq.diff); before, all. */
    int replicationFactor(Part p) {
        if (!ge(2, 5) || p.adding.length == 0) return p.replicas.length;
        int[] rest = p.replicas.clone();
        int n = rest.length;
        for (int a : p.adding) {
            for (int k = 0; k < rest.length; k++) {
                if (rest[k] == a && rest[k] != Integer.MIN_VALUE) {
                    rest[k] = Integer.MIN_VALUE;
                    n--;
                    break;
                }
            }
        }
        return n;
    }

    boolean underReplicated(Part p) {
        if (ge(2, 5)) return replicationFactor(p) - p.isr.length > 0; // KIP-352
        return p.isr.length < p.replicas.length;
    }

    /** Kafka 3.7+ caps min.insync.replicas by the replica count the leader knows (all assigned replicas). */
    int minIsr(Part p) {
        if (ge(3, 7)) return Math.min(p.topic.minIsr, p.replicas.length);
        return p.topic.minIsr;
    }

    boolean leads(Node n, Part p) {
        return n.alive && n.broker && p.leader == n.id;
    }

    long value(Node n, Part p, HealthSpec s) {
        int c = s.code;
        if (c >= HealthSpec.RM_URP && c <= HealthSpec.RM_PRODUCER_IDS) return replicaManager(n)[c];
        if (c >= HealthSpec.C_OFFLINE) return controllerValue(n, c);
        if (p == null) return 0;
        boolean lead = leads(n, p);
        switch (c) {
            case HealthSpec.P_URP: return lead && underReplicated(p) ? 1 : 0;
            case HealthSpec.P_UNDER_MIN: return lead && p.isr.length < minIsr(p) ? 1 : 0;
            case HealthSpec.P_AT_MIN: return lead && p.isr.length == minIsr(p) ? 1 : 0;
            case HealthSpec.P_ISR: return lead ? p.isr.length : 0;
            case HealthSpec.P_REPLICAS: return lead ? replicationFactor(p) : 0;
            case HealthSpec.P_LSO_LAG: return logValues == null ? 0 : logValues.lastStableOffsetLag(p);
            case HealthSpec.L_SIZE: return replicaSize(n, p) + (logValues == null ? 0 : logValues.size(p));
            case HealthSpec.L_LEO: return replicaLogEndOffset(n, p) + (logValues == null ? 0 : logValues.logEndOffset(p));
            case HealthSpec.L_START: return p.logStart + (logValues == null ? 0 : logValues.logStartOffset(p));
            case HealthSpec.L_SEGMENTS: return (logValues == null ? 1 : logValues.segments(p)) + replicaSize(n, p) / segmentBytes;
            case HealthSpec.L_RETENTION_PERCENT: return 0; // KIP-1257: no retention.bytes in the model (unlimited)
            default: return 0;
        }
    }

    long replicaLogEndOffset(Node n, Part p) {
        long size = replicaSize(n, p);
        return p.size == 0 || size >= p.size ? p.leo : (long) (p.leo * (size / (double) p.size));
    }

    long replicaSize(Node n, Part p) {
        int k = p.addingIndex(n.id);
        if (k >= 0 && p.copied != null && !Part.has(p.isr, n.id)) return p.copied[k];
        return p.size;
    }

    long[] replicaManager(Node n) {
        if (n.rmStamp == stamp) return n.rm;
        Arrays.fill(n.rm, 0);
        for (Topic t : topics.values()) {
            for (Part p : t.parts) {
                if (Part.has(p.replicas, n.id)) n.rm[HealthSpec.RM_PARTITIONS]++;
                if (!leads(n, p)) continue;
                n.rm[HealthSpec.RM_LEADERS]++;
                if (underReplicated(p)) n.rm[HealthSpec.RM_URP]++;
                int min = minIsr(p);
                if (p.isr.length < min) n.rm[HealthSpec.RM_UNDER_MIN]++;
                if (p.isr.length == min) n.rm[HealthSpec.RM_AT_MIN]++;
                if (p.reassigning()) n.rm[HealthSpec.RM_REASSIGNING]++;
            }
        }
        n.rmStamp = stamp;
        return n.rm;
    }

    long controllerValue(Node n, int code) {
        if (!n.controller) return 0;
        boolean active = n.id == activeController;
        if (code == HealthSpec.C_ACTIVE) return active ? 1 : 0;
        if (!kraft && !active) return 0; // ZooKeeper: only the active controller reports
        if (ctrlStamp != stamp) {
            Arrays.fill(ctrl, 0);
            for (Topic t : topics.values()) {
                ctrl[4]++;
                for (Part p : t.parts) {
                    ctrl[3]++;
                    if (p.leader < 0) ctrl[0]++;
                    int preferred = p.replicas.length == 0 ? -1 : p.replicas[0];
                    if (p.leader != preferred) ctrl[2]++;
                }
            }
            for (int b : brokerIds) {
                if (nodes.get(b).alive) ctrl[5]++;
                else ctrl[6]++;
            }
            ctrlStamp = stamp;
        }
        switch (code) {
            case HealthSpec.C_OFFLINE: return ctrl[0];
            case HealthSpec.C_IMBALANCE: return ctrl[2];
            case HealthSpec.C_PARTITIONS: return ctrl[3];
            case HealthSpec.C_TOPICS: return ctrl[4];
            case HealthSpec.C_ACTIVE_BROKERS: return ctrl[5];
            case HealthSpec.C_FENCED: return kraft ? ctrl[6] : 0; // ZooKeeper has no fencing: a dead broker is gone
            default: return 0;
        }
    }

    int nextController(int except) {
        for (Node n : nodes.values()) {
            if (n.id != except && n.alive && n.controller && (kraft || n.broker)) return n.id;
        }
        return -1;
    }

    /** First replica in assignment order that is in the ISR and alive: Kafka's clean leader election. */
    int electLeader(int[] order, int[] isr) {
        for (int r : order) {
            if (r >= 0 && Part.has(isr, r)) {
                Node n = nodes.get(r);
                if (n != null && n.alive) return r;
            }
        }
        return -1;
    }

    /** KIP-966 eligible leader replicas: on by default for KRaft clusters created by 4.1 and later. */
    boolean elrEnabled() {
        return kraft && ge(4, 1);
    }

    /**
     * A new ISR, and the ELR the controller keeps with it (PartitionChangeBuilder): cleared while the
     * ISR holds min ISR replicas; below that, the former ISR members and eligible replicas not in
     * the new ISR (a fail_broker is a clean shutdown: the replica stays eligible).
     */
    void setIsr(Part p, int[] isr) {
        int[] old = p.isr;
        p.isr = isr;
        if (!elrEnabled()) return;
        if (isr.length >= minIsr(p)) {
            p.elr = new int[0];
            return;
        }
        p.elr = Part.minus(concat(p.elr, Part.minus(old, p.elr)), isr);
    }

    static int[] concat(int[] a, int[] b) {
        int[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    // ----- read back -------------------------------------------------------------------------------

    List<Object> partitionStates() {
        List<Object> out = new ArrayList<>();
        for (Topic t : topics.values()) {
            for (Part p : t.parts) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("topic", t.name);
                m.put("partition", p.index);
                m.put("leader", p.leader);
                m.put("replicas", p.replicas);
                m.put("isr", p.isr);
                m.put("adding_replicas", p.adding);
                m.put("removing_replicas", p.removing);
                m.put("elr", p.elr);
                m.put("min_isr", t.minIsr);
                m.put("size_bytes", p.size);
                out.add(m);
            }
        }
        return out;
    }

    Map<String, Object> clusterInfo() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kafka_version", versionText);
        m.put("metadata_mode", kraft ? "kraft" : "zookeeper");
        m.put("brokers", brokerIds);
        List<Integer> controllers = new ArrayList<>(), live = new ArrayList<>(), liveBrokers = new ArrayList<>();
        Map<String, Object> urls = new LinkedHashMap<>();
        for (Node n : nodes.values()) {
            if (n.controller) controllers.add(n.id);
            if (n.alive) live.add(n.id);
            if (n.alive && n.broker) liveBrokers.add(n.id);
            if (n.endpoint != null) urls.put(Integer.toString(n.id), n.endpoint.url());
        }
        m.put("controllers", controllers);
        m.put("live_nodes", live);
        m.put("live_brokers", liveBrokers);
        m.put("active_controller", activeController);
        m.put("posed", posed.id);
        m.put("urls", urls);
        m.put("clock_ms", clock.nanos / 1_000_000L);
        m.put("epoch_ms", clock.epochMs());
        int parts = 0;
        for (Topic t : topics.values()) parts += t.parts.size();
        m.put("topics", topics.size());
        m.put("partitions", parts);
        return m;
    }
}
