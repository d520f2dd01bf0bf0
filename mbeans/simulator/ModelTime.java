import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Time passing on the model: traffic, reassignment copies, and the beans that follow hosting and replication. */
final class ModelTime {
    private final Model model;
    long offsetNanos; // advance() in real-time mode

    ModelTime(Model model) {
        this.model = model;
    }

    void startClock() {
        if (!model.realtime) return;
        final long t0 = System.nanoTime();
        Thread t = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
                synchronized (model) {
                    try {
                        advanceTo(System.nanoTime() - t0 + offsetNanos);
                    } catch (Exception e) {
                        System.err.println("warning: clock tick failed: " + e);
                    }
                }
            }
        }, "sim-clock");
        t.setDaemon(true);
        t.start();
    }

    void advanceTo(long target) throws Exception {
        boolean changed = false;
        while (model.clock.nanos < target) {
            long step = Math.min(1_000_000_000L, target - model.clock.nanos);
            model.clock.nanos += step;
            changed |= step(step);
        }
        if (changed) {
            model.stamp++;
            syncHosting();
        }
    }

    /** One step of at most a second; true when a partition's ISR or assignment changed. */
    private boolean step(long ns) throws Exception {
        boolean changed = false;
        for (Traffic tr : new ArrayList<>(model.traffic.values())) {
            long in = tr.bytesIn * ns + tr.carryIn;
            long msgs = tr.messagesIn * ns + tr.carryMsgs;
            long out = tr.bytesOut * ns + tr.carryOut;
            tr.carryIn = in % 1_000_000_000L;
            tr.carryMsgs = msgs % 1_000_000_000L;
            tr.carryOut = out % 1_000_000_000L;
            distribute(tr.topic, in / 1_000_000_000L, msgs / 1_000_000_000L, out / 1_000_000_000L, model.clock.nanos - ns);
        }
        for (Topic t : model.topics.values()) {
            for (Part p : t.parts) {
                if (p.adding.length == 0 || p.copied == null || p.leader < 0) continue;
                Node leader = model.nodes.get(p.leader);
                for (int k = 0; k < p.adding.length; k++) {
                    int a = p.adding[k];
                    Node n = a < 0 ? null : model.nodes.get(a);
                    if (n == null || !n.alive || Part.has(p.isr, a)) continue;
                    long budget = p.rate * ns + p.carry[k];
                    p.carry[k] = budget % 1_000_000_000L;
                    long bytes = Math.min(budget / 1_000_000_000L, p.size - p.copied[k]);
                    if (bytes > 0) {
                        p.copied[k] += bytes;
                        // ReplicaFetcherThread / ReplicaManager: reassignment bytes are also replication bytes.
                        long from = model.clock.nanos - ns;
                        n.markOver("ReassignmentBytesInPerSec", bytes, from);
                        n.markOver("ReplicationBytesInPerSec", bytes, from);
                        leader.markOver("ReassignmentBytesOutPerSec", bytes, from);
                        leader.markOver("ReplicationBytesOutPerSec", bytes, from);
                    }
                    if (p.copied[k] >= p.size && p.autoComplete) {
                        model.setIsr(p, Part.with(p.isr, a)); // caught up: the leader expands the ISR
                        leader.mark("IsrExpandsPerSec", 1);
                        changed = true;
                    }
                }
                if (p.autoComplete) model.events.completeReassignment(p, false);
            }
        }
        return changed;
    }

    /** Produce (and consume) on a topic's partitions, evenly over those with a leader. */
    void distribute(String topic, long bytes, long msgs, long out, long from) throws Exception {
        if (bytes == 0 && msgs == 0 && out == 0) return;
        List<Part> targets = new ArrayList<>();
        for (Topic t : model.topics.values()) {
            if (!topic.equals("*") && !t.name.equals(topic)) continue;
            for (Part p : t.parts) if (p.leader >= 0) targets.add(p);
        }
        int n = targets.size();
        if (n == 0) return;
        for (int k = 0; k < n; k++) {
            Part p = targets.get(k);
            long b = bytes / n + (k < bytes % n ? 1 : 0);
            long m = msgs / n + (k < msgs % n ? 1 : 0);
            long o = out / n + (k < out % n ? 1 : 0);
            if (b == 0 && m == 0 && o == 0) continue;
            Node leader = model.nodes.get(p.leader);
            String tn = p.topic.name;
            if (b > 0 || m > 0) {
                leader.markTopic(tn, "BytesInPerSec", b, from);
                leader.markOver("BytesInPerSec", b, from);
                leader.markTopic(tn, "MessagesInPerSec", m, from);
                leader.markOver("MessagesInPerSec", m, from);
                leader.markTopic(tn, "TotalProduceRequestsPerSec", 1, from);
                leader.markOver("TotalProduceRequestsPerSec", 1, from);
                p.size += b;
                p.leo += m;
                for (int f : p.isr) {
                    if (f == p.leader) continue;
                    Node fn = model.nodes.get(f);
                    if (fn == null || !fn.alive) continue;
                    fn.markOver("ReplicationBytesInPerSec", b, from);
                    leader.markOver("ReplicationBytesOutPerSec", b, from);
                }
            }
            if (o > 0) {
                leader.markTopic(tn, "BytesOutPerSec", o, from);
                leader.markOver("BytesOutPerSec", o, from);
            }
        }
    }

    /** Registers and unregisters Partition/Log beans so each live served broker has one set per hosted replica. */
    void syncHosting() throws Exception {
        if (!model.hostingDirty) return;
        model.hostingDirty = false;
        for (Node n : model.nodes.values()) {
            if (!n.alive || !n.broker) continue;
            Set<Part> want = new HashSet<>();
            List<Part> added = new ArrayList<>();
            for (Topic t : model.topics.values()) {
                for (Part p : t.parts) {
                    if (Part.has(p.replicas, n.id)) {
                        want.add(p);
                        if (!n.hosted.contains(p)) added.add(p);
                    }
                }
            }
            n.registerPartitions(added);
            if (want.size() != n.hosted.size()) {
                for (Iterator<Part> it = new ArrayList<>(n.hosted).iterator(); it.hasNext(); ) {
                    Part p = it.next();
                    if (!want.contains(p)) n.unregisterPartition(p);
                }
            }
        }
        syncReplication();
    }

    /** Every live replica that is not its partition's leader fetches from the live leader, in sync or not. */
    void syncReplication() throws Exception {
        if (model.inventory == null) return;
        for (Node n : model.nodes.values()) {
            if (!n.alive || !n.broker) continue;
            Map<Part, Integer> follows = new HashMap<>();
            for (Topic t : model.topics.values()) {
                for (Part p : t.parts) {
                    if (p.leader < 0 || p.leader == n.id || !Part.has(p.replicas, n.id)) continue;
                    Node leader = model.nodes.get(p.leader);
                    if (leader == null || !leader.alive) continue;
                    follows.put(p, p.leader);
                    leader.serveFollower(p);
                }
            }
            n.syncFetchers(follows);
        }
        // KRaft: every other live node fetches the metadata log from the quorum leader
        Node quorumLeader = model.kraft ? model.nodes.get(model.activeController) : null;
        if (quorumLeader != null && quorumLeader.alive) {
            for (Node n : model.nodes.values()) {
                if (n != quorumLeader && n.alive) {
                    quorumLeader.servedFetch();
                    break;
                }
            }
        }
    }
}
