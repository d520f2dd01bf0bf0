import java.lang.management.ManagementFactory;
import java.lang.management.PlatformManagedObject;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.management.DynamicMBean;
import javax.management.InstanceAlreadyExistsException;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanInfo;
import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

/** One node of the cluster: a broker, a controller, or both; with its own MBeanServer when served. */
final class Node {
    final Model model;
    final int id;
    final boolean broker;
    boolean controller;
    boolean alive = true;
    Endpoint endpoint; // null: modelled but not served
    MBeanServer server;
    final Map<String, YMeter> meters = new HashMap<>();
    final Map<String, Map<String, YMeter>> topicMeters = new HashMap<>();
    final Set<Part> hosted = new HashSet<>();
    boolean servesFollowers;                                     // its scope 'L' beans exist
    final Map<Integer, List<ObjectName>> fetchers = new HashMap<>(); // leader id -> scope 'F' beans
    final Map<Part, Following> following = new HashMap<>();      // followed partition -> scope 'P' beans
    long rmStamp = -1;
    final long[] rm = new long[HealthSpec.NUM_RM];

    Node(Model model, int id, boolean broker, boolean controller) {
        this.model = model;
        this.id = id;
        this.broker = broker;
        this.controller = controller;
    }

    /** (Re)creates every MBean of this node: counts start from zero, as a restarted broker's do. */
    void start() throws Exception {
        meters.clear();
        topicMeters.clear();
        hosted.clear();
        servesFollowers = false;
        fetchers.clear();
        following.clear();
        rmStamp = -1;
        server = endpoint == null ? null : MBeanServerFactory.newMBeanServer();
        if (server != null) registerPlatformBeans();
        for (HealthSpec s : model.health) {
            boolean here;
            switch (s.scope) {
                case "broker":
                case "topic":
                    // BrokerTopicStats' broker-wide meters: a real 4.1 dedicated KRaft controller has them too
                    here = broker || (model.kraft && controller && s.type.equals("BrokerTopicMetrics"));
                    break;
                case "controller":
                    here = controller;
                    break;
                default:
                    here = false; // per partition: registered by syncHosting()
            }
            if (!here) continue;
            if (s.kind.equals("METER")) {
                YMeter meter = new YMeter(model.clock);
                meters.put(s.name, meter);
                register(new MeterBean(model, meter, s.eventType, new ObjectName(s.objectName(null, -1)), model.meterInfo));
            } else {
                register(new HealthGauge(this, null, s));
            }
        }
        if (model.inventory != null) {
            for (Inventory.Row r : model.inventory.rows) {
                if (r.scope != '-' || !applies(r.roles)) continue;
                List<Integer> ids = r.template.contains("{broker}") ? model.brokerIds : Collections.singletonList(id);
                for (int b : ids) {
                    String name = r.template.replace("{node}", Integer.toString(id)).replace("{broker}", Integer.toString(b))
                            .replace("{version}", model.versionText);
                    if (r.shape.isMeter && model.topicTemplates.containsKey(r.name) && r.type.equals("BrokerTopicMetrics")) {
                        YMeter meter = new YMeter(model.clock);
                        meters.put(r.name, meter);
                        register(new MeterBean(model, meter, r.values[r.shape.index.get("EventType")], new ObjectName(name), r.shape.info));
                        continue;
                    }
                    Object[] values = new Object[r.values.length];
                    register(staticBean(r, name));
                }
            }
        }
        if (endpoint != null) endpoint.start(server);
    }

    boolean applies(String roles) {
        if (roles.indexOf('b') >= 0 && !broker) return false;
        if (roles.indexOf('c') >= 0 && !controller) return false;
        if (roles.indexOf('k') >= 0 && !model.kraft) return false;
        boolean quorumLeader = model.kraft && id == model.activeController;
        if (roles.indexOf('q') >= 0 && !quorumLeader) return false;
        if (roles.indexOf('o') >= 0 && quorumLeader) return false;
        return true;
    }

    StaticBean staticBean(Inventory.Row r, String name) throws MalformedObjectNameException {
        Object[] values = new Object[r.values.length];
        for (int k = 0; k < values.length; k++) values[k] = Inventory.convert(r.shape.runtime[k], r.values[k], model, this);
        return new StaticBean(model, r.shape, values, new ObjectName(name));
    }

    void stop() {
        if (endpoint != null) endpoint.stop();
        server = null;
        hosted.clear();
        topicMeters.clear();
        servesFollowers = false;
        fetchers.clear();
        following.clear();
    }

    private void registerPlatformBeans() {
        for (Class<? extends PlatformManagedObject> c : ManagementFactory.getPlatformManagementInterfaces()) {
            try {
                for (PlatformManagedObject o : ManagementFactory.getPlatformMXBeans(c)) {
                    try {
                        server.registerMBean(o, o.getObjectName());
                    } catch (InstanceAlreadyExistsException ignored) {
                    } catch (Exception e) {
                        if (Simulator.DEBUG) System.err.println("platform bean " + o.getObjectName() + ": " + e);
                    }
                }
            } catch (RuntimeException e) {
                if (Simulator.DEBUG) System.err.println("platform beans " + c + ": " + e);
            }
        }
    }

    void register(DynamicMBean bean) throws Exception {
        if (server == null) return;
        ObjectName n = ((SimBean) bean).name();
        server.registerMBean(bean, n);
    }

    /**
     * Partition and Log MBeans for newly hosted partitions. Parsing ObjectNames is half the cost of
     * registering and is thread-safe, so thousands of them are parsed in parallel; the MBeanServer's
     * repository takes one registration at a time.
     */
    void registerPartitions(List<Part> parts) throws Exception {
        hosted.addAll(parts);
        if (server == null || parts.isEmpty()) return;
        List<HealthSpec> specs = model.partitionSpecs;
        int per = specs.size();
        ObjectName[] names = new ObjectName[parts.size() * per];
        java.util.stream.IntStream range = java.util.stream.IntStream.range(0, parts.size());
        (parts.size() >= 1000 ? range.parallel() : range).forEach(k -> {
            Part p = parts.get(k);
            for (int j = 0; j < per; j++) {
                try {
                    names[k * per + j] = new ObjectName(specs.get(j).objectName(p.topic.name, p.index));
                } catch (MalformedObjectNameException e) {
                    throw new IllegalStateException(e);
                }
            }
        });
        for (int k = 0; k < parts.size(); k++) {
            for (int j = 0; j < per; j++) server.registerMBean(new HealthGauge(this, parts.get(k), specs.get(j)), names[k * per + j]);
        }
    }

    void unregisterPartition(Part p) throws Exception {
        hosted.remove(p);
        if (server == null) return;
        for (HealthSpec s : model.partitionSpecs) {
            try {
                server.unregisterMBean(new ObjectName(s.objectName(p.topic.name, p.index)));
            } catch (InstanceNotFoundException ignored) {
            }
        }
    }

    void mark(String name, long n) {
        markOver(name, n, -1);
    }

    /** Mark n events on a broker-wide meter: at once (from < 0) or spread over (from, now]. */
    void markOver(String name, long n, long from) {
        YMeter m = meters.get(name);
        if (m == null || n <= 0) return;
        if (from < 0) m.mark(n);
        else m.markOver(n, from);
    }

    /** A per-topic BrokerTopicMetrics meter: created (and registered) on its first use, as Kafka does. */
    void markTopic(String topic, String name, long n, long from) throws Exception {
        if (n <= 0) return;
        YMeter m = topicMeter(topic, name);
        if (m == null) return;
        if (from < 0) m.mark(n);
        else m.markOver(n, from);
    }

    /** The per-topic meter, created and registered now if this is the topic's first such event; null if not modelled. */
    YMeter topicMeter(String topic, String name) throws Exception {
        String eventType;
        MBeanInfo info;
        HealthSpec hs = model.topicSpecs.get(name);
        Inventory.Row row = model.topicTemplates.get(name);
        if (hs != null) {
            eventType = hs.eventType;
            info = model.meterInfo;
        } else if (row != null && applies(row.roles)) {
            eventType = row.values[row.shape.index.get("EventType")];
            info = row.shape.info;
        } else {
            return null;
        }
        Map<String, YMeter> byName = topicMeters.computeIfAbsent(topic, t -> new HashMap<>());
        YMeter m = byName.get(name);
        if (m == null) {
            m = new YMeter(model.clock);
            byName.put(name, m);
            if (server != null) {
                String on = "kafka.server:type=BrokerTopicMetrics,name=" + name + ",topic=" + topic;
                register(new MeterBean(model, m, eventType, new ObjectName(on), info));
            }
        }
        return m;
    }

    /**
     * A follower fetches partition p from this node, its leader: the first such fetch registers the
     * scope 'L' beans, each topic's first its TotalFetchRequestsPerSec (ReplicaManager marks the
     * meter for every partition a fetch reads, follower fetches included).
     */
    void serveFollower(Part p) throws Exception {
        servedFetch();
        if (topicMeters.containsKey(p.topic.name) && topicMeters.get(p.topic.name).containsKey("TotalFetchRequestsPerSec")) return;
        YMeter m = topicMeter(p.topic.name, "TotalFetchRequestsPerSec");
        if (m == null) return;
        m.mark(1);
        markOver("TotalFetchRequestsPerSec", 1, -1);
    }

    /** Another node fetched from this one (a follower, or a KRaft node reading the metadata log). */
    void servedFetch() throws Exception {
        if (servesFollowers) return;
        servesFollowers = true;
        for (Inventory.Row r : model.inventory.rows) {
            if (r.scope == 'L' && applies(r.roles)) register(staticBean(r, r.template));
        }
    }

    /**
     * This node, a follower, now fetches exactly `follows` (partition -> its leader): Kafka's
     * ReplicaFetcherManager adds and removes partitions per leader and shuts a fetcher thread down
     * once it has none, taking its FetcherStats and replica-fetcher-metrics with it; a partition's
     * FetcherLagMetrics go when it leaves its fetcher (leader change, reassignment, leadership).
     */
    void syncFetchers(Map<Part, Integer> follows) throws Exception {
        for (Iterator<Map.Entry<Part, Following>> it = following.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Part, Following> e = it.next();
            Integer leader = follows.get(e.getKey());
            if (leader != null && leader == e.getValue().leader) continue;
            unregisterAll(e.getValue().names);
            it.remove();
        }
        Set<Integer> leaders = new HashSet<>(follows.values());
        for (Iterator<Map.Entry<Integer, List<ObjectName>>> it = fetchers.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Integer, List<ObjectName>> e = it.next();
            if (leaders.contains(e.getKey())) continue;
            unregisterAll(e.getValue());
            it.remove();
        }
        for (int leader : leaders) {
            if (fetchers.containsKey(leader)) continue;
            List<ObjectName> names = new ArrayList<>();
            for (Inventory.Row r : model.inventory.rows) {
                if (server == null) break; // not served: only the bookkeeping
                if (r.scope != 'F' || !applies(r.roles)) continue;
                StaticBean b = staticBean(r, r.template.replace("{leader}", Integer.toString(leader))
                        .replace("{leader_host}", Model.LEADER_HOST).replace("{leader_port}", Integer.toString(Model.LEADER_PORT)));
                register(b);
                names.add(b.objectName);
            }
            fetchers.put(leader, names);
        }
        List<Part> added = new ArrayList<>();
        for (Part p : follows.keySet()) if (!following.containsKey(p)) added.add(p);
        List<Inventory.Row> rows = new ArrayList<>();
        if (server != null) { // not served: only the bookkeeping
            for (Inventory.Row r : model.inventory.rows) if (r.scope == 'P' && applies(r.roles)) rows.add(r);
        }
        // as registerPartitions: ObjectNames parsed in parallel for a big cluster, registered one by one
        int per = rows.size();
        ObjectName[] names = new ObjectName[added.size() * per];
        java.util.stream.IntStream range = java.util.stream.IntStream.range(0, added.size());
        (added.size() >= 1000 ? range.parallel() : range).forEach(k -> {
            Part p = added.get(k);
            for (int j = 0; j < per; j++) {
                try {
                    names[k * per + j] = new ObjectName(rows.get(j).template.replace("{leader}", Integer.toString(follows.get(p)))
                            .replace("{topic}", p.topic.name).replace("{partition}", Integer.toString(p.index)));
                } catch (MalformedObjectNameException e) {
                    throw new IllegalStateException(e);
                }
            }
        });
        for (int k = 0; k < added.size(); k++) {
            Part p = added.get(k);
            Following f = new Following(follows.get(p));
            for (int j = 0; j < per; j++) {
                register(new FetcherLagBean(this, p, rows.get(j).shape, names[k * per + j]));
                f.names.add(names[k * per + j]);
            }
            following.put(p, f);
        }
    }

    void unregisterAll(List<ObjectName> names) {
        if (server == null) return;
        for (ObjectName on : names) {
            try {
                server.unregisterMBean(on);
            } catch (Exception ignored) {
            }
        }
    }

    void dropTopic(String topic) {
        Map<String, YMeter> byName = topicMeters.remove(topic);
        if (byName == null || server == null) return;
        for (String name : byName.keySet()) {
            try {
                server.unregisterMBean(new ObjectName("kafka.server:type=BrokerTopicMetrics,name=" + name + ",topic=" + topic));
            } catch (Exception ignored) {
            }
        }
    }
}
