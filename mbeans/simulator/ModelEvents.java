import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The events the py4j Control applies to the model (under its lock), with Kafka's answers to them. */
final class ModelEvents {
    private final Model model;

    ModelEvents(Model model) {
        this.model = model;
    }

    Map<String, Object> apply(Map<String, Object> e) throws Exception {
        String op = Json.str(e.get("op"), "op");
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("ok", true);
        switch (op) {
            case "fail_broker": fail(node(e, "broker")); break;
            case "restore_broker": restore(node(e, "broker"), Json.bool(e.get("catch_up"), true)); break;
            case "shrink_isr": shrinkIsr(part(e), Json.i(e.get("broker"), "broker")); break;
            case "expand_isr": expandIsr(part(e), Json.i(e.get("broker"), "broker")); break;
            case "start_reassignment":
                startReassignment(part(e), Json.ints(e.get("replicas"), "replicas"),
                        e.get("bytes_per_sec") == null ? model.defaultReassignRate : Json.l(e.get("bytes_per_sec"), "bytes_per_sec"),
                        Json.bool(e.get("auto_complete"), true));
                break;
            case "complete_reassignment": completeReassignment(part(e), true); break;
            case "cancel_reassignment": cancelReassignment(part(e)); break;
            case "set_min_isr": {
                int v = Json.i(e.get("min_isr"), "min_isr");
                if (v < 1) throw new UserError("min_isr must be at least 1, got " + v);
                topic(e).minIsr = v;
                break;
            }
            case "create_topic": createTopic(e); break;
            case "delete_topic": deleteTopic(topic(e)); break;
            case "traffic": setTraffic(e); break;
            case "produce": produce(e); break;
            case "advance": {
                double s = Json.d(e.get("seconds"), "seconds");
                if (s < 0) throw new UserError("advance: seconds must not be negative");
                long ns = (long) (s * 1e9);
                if (model.realtime) {
                    model.time.offsetNanos += ns;
                    model.time.advanceTo(model.clock.nanos + ns);
                } else {
                    model.time.advanceTo(model.clock.nanos + ns);
                }
                break;
            }
            case "elect_preferred_leaders": result.put("elected", electPreferred()); break;
            default:
                throw new UserError("unknown event '" + op + "'");
        }
        model.stamp++;
        model.hostingDirty = true;
        model.time.syncHosting();
        result.put("clock_ms", model.clock.nanos / 1_000_000L);
        return result;
    }

    Node node(Map<String, Object> e, String key) {
        int id = Json.i(e.get(key), key);
        Node n = model.nodes.get(id);
        if (n == null) throw new UserError("node " + id + " is not in the cluster (nodes: " + model.nodes.keySet() + ")");
        return n;
    }

    Topic topic(Map<String, Object> e) {
        String name = Json.str(e.get("topic"), "topic");
        Topic t = model.topics.get(name);
        if (t == null) throw new UserError("no topic '" + name + "' (topics: " + shortList(model.topics.keySet()) + ")");
        return t;
    }

    Part part(Map<String, Object> e) {
        Topic t = topic(e);
        int k = Json.i(e.get("partition"), "partition");
        if (k < 0 || k >= t.parts.size()) throw new UserError("topic " + t.name + " has no partition " + k + " (it has " + t.parts.size() + ")");
        return t.parts.get(k);
    }

    static String shortList(Set<String> names) {
        List<String> l = new ArrayList<>(names);
        return l.size() <= 10 ? l.toString() : l.subList(0, 10) + " and " + (l.size() - 10) + " more";
    }

    void fail(Node n) throws Exception {
        if (!n.alive) throw new UserError("node " + n.id + " is already failed");
        n.alive = false;
        n.stop();
        if (n.id == model.activeController) model.activeController = model.nextController(n.id);
        if (!n.broker) return;
        for (Topic t : model.topics.values()) {
            for (Part p : t.parts) {
                if (!Part.has(p.replicas, n.id)) continue;
                // The controller removes a fenced broker from the ISR, except the last member; with
                // ELR (KIP-966, on by default from 4.1) the last member too, which stays eligible
                // (seen on a real 4.1 cluster: an RF 1 partition's only replica stopped gives
                // "Leader: none Isr: (empty) Elr: 3").
                if (Part.has(p.isr, n.id) && (p.isr.length > 1 || model.elrEnabled())) model.setIsr(p, Part.without(p.isr, n.id));
                if (p.leader == n.id) p.leader = model.electLeader(p.replicas, p.isr);
            }
        }
    }

    void restore(Node n, boolean catchUp) throws Exception {
        if (n.alive) throw new UserError("node " + n.id + " is not failed");
        n.alive = true;
        if (model.activeController < 0 && n.controller) model.activeController = n.id;
        if (n.broker) {
            for (Topic t : model.topics.values()) {
                for (Part p : t.parts) {
                    // KIP placeholders: a joining broker takes the place of a missing replica.
                    if (!Part.has(p.replicas, n.id)) {
                        for (int k = 0; k < p.replicas.length; k++) {
                            if (p.replicas[k] < 0) {
                                p.replicas = p.replicas.clone();
                                p.replicas[k] = n.id;
                                break;
                            }
                        }
                    }
                    if (!Part.has(p.replicas, n.id)) continue;
                    if (p.leader < 0 && Part.has(p.isr, n.id)) p.leader = n.id; // its last ISR member is back
                    if (p.leader < 0 && p.isr.length == 0 && Part.has(p.elr, n.id)) {
                        model.setIsr(p, new int[] {n.id}); // KIP-966: an unfenced eligible replica is elected
                        p.leader = n.id;
                    }
                }
            }
        }
        n.start();
        if (n.broker && catchUp) {
            for (Topic t : model.topics.values()) {
                for (Part p : t.parts) {
                    if (Part.has(p.replicas, n.id) && !Part.has(p.isr, n.id) && p.addingIndex(n.id) < 0 && p.leader >= 0) {
                        model.setIsr(p, Part.with(p.isr, n.id));
                        model.nodes.get(p.leader).mark("IsrExpandsPerSec", 1);
                    }
                }
            }
        }
    }

    Node leaderNode(Part p, String what) {
        if (p.leader < 0) throw new UserError(what + ": " + p.topic.name + "-" + p.index + " has no leader");
        return model.nodes.get(p.leader);
    }

    void shrinkIsr(Part p, int broker) {
        Node leader = leaderNode(p, "shrink_isr");
        if (broker == p.leader) throw new UserError("shrink_isr: broker " + broker + " leads " + p.topic.name + "-" + p.index
                + "; a leader never drops itself (use fail_broker)");
        if (!Part.has(p.isr, broker)) throw new UserError("shrink_isr: broker " + broker + " is not in the ISR "
                + Arrays.toString(p.isr) + " of " + p.topic.name + "-" + p.index);
        model.setIsr(p, Part.without(p.isr, broker));
        leader.mark("IsrShrinksPerSec", 1);
    }

    void expandIsr(Part p, int broker) throws Exception {
        Node leader = leaderNode(p, "expand_isr");
        if (!Part.has(p.replicas, broker)) throw new UserError("expand_isr: broker " + broker + " is not a replica "
                + Arrays.toString(p.replicas) + " of " + p.topic.name + "-" + p.index);
        if (Part.has(p.isr, broker)) throw new UserError("expand_isr: broker " + broker + " is already in the ISR of "
                + p.topic.name + "-" + p.index);
        Node b = model.nodes.get(broker);
        if (b == null || !b.alive) throw new UserError("expand_isr: broker " + broker + " is not alive");
        model.setIsr(p, Part.with(p.isr, broker));
        int k = p.addingIndex(broker);
        if (k >= 0 && p.copied != null) p.copied[k] = p.size;
        leader.mark("IsrExpandsPerSec", 1);
        if (p.reassigning() && p.autoComplete) completeReassignment(p, false);
    }

    void checkBrokers(int[] ids, String what) {
        Set<Integer> seen = new HashSet<>();
        for (int r : ids) {
            if (!seen.add(r)) throw new UserError(what + ": replica " + r + " listed twice in " + Arrays.toString(ids));
            if (r < 0) continue;
            Node n = model.nodes.get(r);
            if (n == null || !n.broker) throw new UserError(what + ": " + r + " is not a broker of the cluster (brokers: " + model.brokerIds + ")");
        }
    }

    void startReassignment(Part p, int[] target, long rate, boolean auto) throws Exception {
        if (p.reassigning()) throw new UserError("start_reassignment: " + p.topic.name + "-" + p.index
                + " is already being reassigned; complete or cancel it first");
        if (target.length == 0) throw new UserError("start_reassignment: the target replica list is empty");
        checkBrokers(target, "start_reassignment");
        for (int r : target) if (r < 0) throw new UserError("start_reassignment: placeholder " + r + " cannot be a target");
        if (rate <= 0) throw new UserError("start_reassignment: bytes_per_sec must be positive");
        int[] adding = Part.minus(target, p.replicas);
        int[] removing = Part.minus(p.replicas, target);
        if (adding.length == 0 && removing.length == 0) return; // Kafka: nothing to do
        p.original = p.replicas;
        p.replicas = Model.concat(target, removing);
        p.adding = adding;
        p.removing = removing;
        p.copied = new long[adding.length];
        p.carry = new long[adding.length];
        p.rate = rate;
        p.autoComplete = auto;
        if (auto) completeReassignment(p, false);
    }

    int[] target(Part p) {
        return Part.minus(p.replicas, p.removing);
    }

    /** The controller completes a reassignment once every target replica is in the ISR. */
    void completeReassignment(Part p, boolean force) throws Exception {
        if (!p.reassigning()) {
            if (force) throw new UserError("complete_reassignment: " + p.topic.name + "-" + p.index + " is not being reassigned");
            return;
        }
        int[] target = target(p);
        if (force) {
            for (int a : p.adding) {
                Node n = model.nodes.get(a);
                if (n != null && n.alive && p.leader >= 0 && !Part.has(p.isr, a)) {
                    model.setIsr(p, Part.with(p.isr, a));
                    model.nodes.get(p.leader).mark("IsrExpandsPerSec", 1);
                }
            }
        }
        int[] missing = Part.minus(target, p.isr);
        if (missing.length > 0) {
            if (force) throw new UserError("complete_reassignment: target replicas " + Arrays.toString(missing)
                    + " of " + p.topic.name + "-" + p.index + " are not in the ISR (failed or not caught up)");
            return;
        }
        model.hostingDirty = true;
        p.replicas = target;
        model.setIsr(p, Part.intersect(p.isr, target));
        p.adding = new int[0];
        p.removing = new int[0];
        p.original = null;
        p.copied = null;
        p.carry = null;
        if (!Part.has(target, p.leader)) p.leader = model.electLeader(target, p.isr);
    }

    void cancelReassignment(Part p) {
        if (!p.reassigning()) throw new UserError("cancel_reassignment: " + p.topic.name + "-" + p.index + " is not being reassigned");
        int[] original = p.original;
        int[] isr = Part.intersect(p.isr, original);
        if (isr.length == 0) {
            // Kafka's PartitionReassignmentRevert: an empty ISR would need an unclean leader election.
            throw new UserError("cancel_reassignment: no original replica of " + p.topic.name + "-" + p.index
                    + " is in the ISR " + Arrays.toString(p.isr) + "; reverting would need an unclean leader election");
        }
        p.replicas = original;
        model.setIsr(p, isr);
        model.hostingDirty = true;
        p.adding = new int[0];
        p.removing = new int[0];
        p.original = null;
        p.copied = null;
        p.carry = null;
        if (!Part.has(original, p.leader)) p.leader = model.electLeader(original, p.isr);
    }

    int electPreferred() {
        int n = 0;
        for (Topic t : model.topics.values()) {
            for (Part p : t.parts) {
                if (p.replicas.length == 0) continue;
                int pref = p.replicas[0];
                if (pref < 0 || pref == p.leader || !Part.has(p.isr, pref)) continue;
                Node node = model.nodes.get(pref);
                if (node == null || !node.alive) continue;
                p.leader = pref;
                n++;
            }
        }
        return n;
    }

    void createTopic(Map<String, Object> e) {
        String name = Json.str(e.get("name"), "name");
        if (!name.matches("[a-zA-Z0-9._-]+") || name.length() > 249)
            throw new UserError("create_topic: '" + name + "' is not a valid topic name (use [a-zA-Z0-9._-], at most 249 characters)");
        if (model.topics.containsKey(name)) throw new UserError("create_topic: topic '" + name + "' already exists");
        int minIsr = Json.i(e.getOrDefault("min_isr", 1L), "min_isr");
        if (minIsr < 1) throw new UserError("create_topic: min_isr must be at least 1");
        Topic t = new Topic(name, minIsr);
        Object parts = e.get("partitions");
        if (parts instanceof List) {
            List<Object> ps = Json.list(parts, "partitions");
            for (int k = 0; k < ps.size(); k++) {
                Map<String, Object> pm = Json.obj(ps.get(k), "partition");
                Part p = new Part(t, k);
                p.replicas = Json.ints(pm.get("replicas"), "replicas");
                checkBrokers(p.replicas, "create_topic");
                if (pm.containsKey("isr")) {
                    p.isr = Json.ints(pm.get("isr"), "isr");
                } else {
                    int n = 0;
                    int[] isr = new int[p.replicas.length];
                    for (int r : p.replicas) if (r >= 0 && model.nodes.get(r).alive) isr[n++] = r;
                    p.isr = Arrays.copyOf(isr, n);
                }
                for (int r : p.isr) if (!Part.has(p.replicas, r)) throw new UserError("create_topic: ISR member " + r + " is not a replica");
                p.leader = pm.get("leader") == null ? model.electLeader(p.replicas, p.isr) : Json.i(pm.get("leader"), "leader");
                if (p.leader >= 0 && !Part.has(p.isr, p.leader)) throw new UserError("create_topic: leader " + p.leader + " is not in the ISR");
                t.parts.add(p);
            }
        } else {
            int count = Json.i(parts, "partitions");
            int rf = Json.i(e.getOrDefault("replication_factor", 1L), "replication_factor");
            boolean under = Json.bool(e.get("allow_under_replicated"), false);
            if (count < 1 || rf < 1) throw new UserError("create_topic: partitions and replication_factor must be at least 1");
            List<Integer> live = new ArrayList<>();
            for (int b : model.brokerIds) if (model.nodes.get(b).alive) live.add(b);
            int have = Math.min(rf, live.size());
            if (live.size() < rf) {
                int needed = Math.min(minIsr, rf);
                if (!under) throw new UserError("create_topic: replication factor " + rf + " is larger than the "
                        + live.size() + " live brokers; pass allow_under_replicated to create it with placeholder replicas (-1, -2, ...)");
                if (live.size() < needed) throw new UserError("create_topic: even with placeholders at least min(min_isr, RF) = "
                        + needed + " live brokers are needed, " + live.size() + " are live");
            }
            if (live.isEmpty()) throw new UserError("create_topic: no live broker");
            for (int k = 0; k < count; k++) {
                Part p = new Part(t, k);
                p.replicas = new int[rf];
                for (int j = 0; j < rf; j++) p.replicas[j] = j < have ? live.get((k + j) % live.size()) : -(j - have + 1);
                p.isr = Arrays.copyOf(p.replicas, have);
                p.leader = p.replicas[0];
                t.parts.add(p);
            }
        }
        model.topics.put(name, t);
    }

    void deleteTopic(Topic t) throws Exception {
        model.topics.remove(t.name);
        model.traffic.remove(t.name);
        for (Node n : model.nodes.values()) {
            for (Part p : t.parts) if (n.hosted.contains(p)) n.unregisterPartition(p);
            n.dropTopic(t.name);
        }
    }

    void setTraffic(Map<String, Object> e) {
        String topic = e.get("topic") == null ? "*" : Json.str(e.get("topic"), "topic");
        if (!topic.equals("*") && !model.topics.containsKey(topic)) throw new UserError("traffic: no topic '" + topic + "'");
        Traffic tr = model.traffic.computeIfAbsent(topic, Traffic::new);
        tr.bytesIn = e.get("bytes_in_per_sec") == null ? 0 : Json.l(e.get("bytes_in_per_sec"), "bytes_in_per_sec");
        tr.messagesIn = e.get("messages_in_per_sec") == null ? 0 : Json.l(e.get("messages_in_per_sec"), "messages_in_per_sec");
        tr.bytesOut = e.get("bytes_out_per_sec") == null ? 0 : Json.l(e.get("bytes_out_per_sec"), "bytes_out_per_sec");
        if (tr.bytesIn < 0 || tr.messagesIn < 0 || tr.bytesOut < 0) throw new UserError("traffic: rates must not be negative");
        if (tr.bytesIn == 0 && tr.messagesIn == 0 && tr.bytesOut == 0) model.traffic.remove(topic);
    }

    void produce(Map<String, Object> e) throws Exception {
        String topic = e.get("topic") == null ? "*" : Json.str(e.get("topic"), "topic");
        if (!topic.equals("*") && !model.topics.containsKey(topic)) throw new UserError("produce: no topic '" + topic + "'");
        long bytes = e.get("bytes") == null ? 0 : Json.l(e.get("bytes"), "bytes");
        long msgs = e.get("messages") == null ? 0 : Json.l(e.get("messages"), "messages");
        long out = e.get("bytes_out") == null ? 0 : Json.l(e.get("bytes_out"), "bytes_out");
        if (bytes < 0 || msgs < 0 || out < 0) throw new UserError("produce: amounts must not be negative");
        model.time.distribute(topic, bytes, msgs, out, -1);
    }
}
