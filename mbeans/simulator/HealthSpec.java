import java.util.Map;

/** One row of mbeans/catalog.py for this Kafka version. */
final class HealthSpec {
    static final int UNKNOWN = 0, RM_URP = 1, RM_UNDER_MIN = 2, RM_AT_MIN = 3, RM_REASSIGNING = 4, RM_LEADERS = 5,
            RM_PARTITIONS = 6, RM_OFFLINE_REPLICAS = 7, RM_LATE_TXN = 8, RM_PRODUCER_IDS = 9,
            P_URP = 20, P_UNDER_MIN = 21, P_AT_MIN = 22, P_ISR = 23, P_REPLICAS = 24, P_LSO_LAG = 25,
            L_SIZE = 30, L_LEO = 31, L_START = 32, L_SEGMENTS = 33, L_RETENTION_PERCENT = 34,
            C_OFFLINE = 40, C_ACTIVE = 41, C_IMBALANCE = 42, C_PARTITIONS = 43, C_TOPICS = 44, C_ACTIVE_BROKERS = 45,
            C_FENCED = 46;
    static final int NUM_RM = 10;

    final String domain, type, name, kind, scope, valueClass, eventType;
    final int code;

    HealthSpec(Map<String, Object> m) {
        domain = Json.str(m.get("domain"), "health.domain");
        type = Json.str(m.get("type"), "health.type");
        name = Json.str(m.get("name"), "health.name");
        kind = Json.str(m.get("kind"), "health.kind");
        scope = Json.str(m.get("scope"), "health.scope");
        valueClass = m.get("value_class") == null ? "java.lang.Integer" : Json.str(m.get("value_class"), "value_class");
        eventType = m.get("event_type") == null ? null : Json.str(m.get("event_type"), "event_type");
        code = codeOf(type, name);
        if (code == UNKNOWN && kind.equals("GAUGE")) {
            System.err.println("warning: the simulator does not model " + domain + ":type=" + type + ",name=" + name
                    + "; it serves 0");
        }
    }

    static int codeOf(String type, String name) {
        switch (type + "/" + name) {
            case "ReplicaManager/UnderReplicatedPartitions": return RM_URP;
            case "ReplicaManager/UnderMinIsrPartitionCount": return RM_UNDER_MIN;
            case "ReplicaManager/AtMinIsrPartitionCount": return RM_AT_MIN;
            case "ReplicaManager/ReassigningPartitions": return RM_REASSIGNING;
            case "ReplicaManager/LeaderCount": return RM_LEADERS;
            case "ReplicaManager/PartitionCount": return RM_PARTITIONS;
            case "ReplicaManager/OfflineReplicaCount": return RM_OFFLINE_REPLICAS;
            case "ReplicaManager/PartitionsWithLateTransactionsCount": return RM_LATE_TXN;
            case "ReplicaManager/ProducerIdCount": return RM_PRODUCER_IDS;
            case "Partition/UnderReplicated": return P_URP;
            case "Partition/UnderMinIsr": return P_UNDER_MIN;
            case "Partition/AtMinIsr": return P_AT_MIN;
            case "Partition/InSyncReplicasCount": return P_ISR;
            case "Partition/ReplicasCount": return P_REPLICAS;
            case "Partition/LastStableOffsetLag": return P_LSO_LAG;
            case "Log/Size": return L_SIZE;
            case "Log/LogEndOffset": return L_LEO;
            case "Log/LogStartOffset": return L_START;
            case "Log/NumLogSegments": return L_SEGMENTS;
            case "Log/RetentionSizeInPercent": return L_RETENTION_PERCENT;
            case "KafkaController/OfflinePartitionsCount": return C_OFFLINE;
            case "KafkaController/ActiveControllerCount": return C_ACTIVE;
            case "KafkaController/PreferredReplicaImbalanceCount": return C_IMBALANCE;
            case "KafkaController/GlobalPartitionCount": return C_PARTITIONS;
            case "KafkaController/GlobalTopicCount": return C_TOPICS;
            case "KafkaController/ActiveBrokerCount": return C_ACTIVE_BROKERS;
            case "KafkaController/FencedBrokerCount": return C_FENCED;
            default: return UNKNOWN;
        }
    }

    String objectName(String topic, int partition) {
        StringBuilder b = new StringBuilder(96).append(domain).append(":type=").append(type).append(",name=").append(name);
        if (topic != null) b.append(",topic=").append(topic);
        if (partition >= 0) b.append(",partition=").append(partition);
        return b.toString();
    }

    Object box(long v) {
        switch (valueClass) {
            case "java.lang.Long": return v;
            case "java.lang.Byte": return (byte) v;
            case "java.lang.Short": return (short) v;
            case "java.lang.Double": return (double) v;
            default: return (int) v;
        }
    }
}
