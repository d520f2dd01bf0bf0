import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.Descriptor;
import javax.management.DynamicMBean;
import javax.management.ImmutableDescriptor;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanOperationInfo;
import javax.management.MBeanParameterInfo;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import javax.management.ReflectionException;

/** MBeanInfo as Kafka's reporters build it: Yammer standard MBeans, Kafka's KafkaMbean, AppInfo. */
final class Infos {
    static final String STANDARD_DESCRIPTION = "Information on the management interface of the MBean";
    static final String ATTRIBUTE_DESCRIPTION = "Attribute exposed for management";
    static final String OPERATION_DESCRIPTION = "Operation exposed for management";
    static final String KAFKA_MBEAN = "org.apache.kafka.common.metrics.JmxReporter$KafkaMbean";
    static final String APP_INFO = "org.apache.kafka.common.utils.AppInfoParser$AppInfo";
    static final String YAMMER = "com.yammer.metrics.reporting.JmxReporter$";

    static MBeanInfo build(String className, String[] names, String[] declared, String[] descriptions) {
        MBeanAttributeInfo[] attrs = new MBeanAttributeInfo[names.length];
        for (int k = 0; k < names.length; k++) {
            attrs[k] = new MBeanAttributeInfo(names[k], declared[k], descriptions[k], true, false, false);
        }
        if (className.equals(KAFKA_MBEAN)) {
            return new MBeanInfo(className, "", attrs, null, null, null);
        }
        List<MBeanOperationInfo> ops = new ArrayList<>();
        String iface;
        if (className.startsWith(YAMMER)) {
            iface = className + "MBean";
            ops.add(new MBeanOperationInfo("objectName", OPERATION_DESCRIPTION, new MBeanParameterInfo[0],
                    "javax.management.ObjectName", MBeanOperationInfo.UNKNOWN));
            if (className.endsWith("$Histogram") || className.endsWith("$Timer")) {
                ops.add(new MBeanOperationInfo("values", OPERATION_DESCRIPTION, new MBeanParameterInfo[0],
                        "[D", MBeanOperationInfo.UNKNOWN));
            }
        } else {
            iface = className + "MBean";
        }
        Descriptor d = new ImmutableDescriptor("immutableInfo=true", "interfaceClassName=" + iface, "mxbean=false");
        return new MBeanInfo(className, STANDARD_DESCRIPTION, attrs, new javax.management.MBeanConstructorInfo[0],
                ops.toArray(new MBeanOperationInfo[0]), new javax.management.MBeanNotificationInfo[0], d);
    }

    static MBeanInfo yammer(String className, List<Object> attributes) {
        int n = attributes.size();
        String[] names = new String[n], declared = new String[n], desc = new String[n];
        for (int k = 0; k < n; k++) {
            List<Object> pair = Json.list(attributes.get(k), "attributes");
            names[k] = Json.str(pair.get(0), "attribute name");
            declared[k] = Json.str(pair.get(1), "attribute type");
            desc[k] = ATTRIBUTE_DESCRIPTION;
        }
        return build(className, names, declared, desc);
    }
}

/** Base of every simulated MBean: reads go through the model's lock. */
abstract class SimBean implements DynamicMBean {
    abstract Object read(String attribute) throws AttributeNotFoundException;

    abstract ObjectName name();

    abstract Object lock();

    public Object getAttribute(String attribute) throws AttributeNotFoundException {
        synchronized (lock()) {
            return read(attribute);
        }
    }

    public AttributeList getAttributes(String[] attributes) {
        AttributeList out = new AttributeList();
        synchronized (lock()) {
            for (String a : attributes) {
                try {
                    out.add(new Attribute(a, read(a)));
                } catch (AttributeNotFoundException ignored) {
                }
            }
        }
        return out;
    }

    public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
        throw new AttributeNotFoundException("read-only: " + attribute.getName());
    }

    public AttributeList setAttributes(AttributeList attributes) {
        return new AttributeList();
    }

    public Object invoke(String op, Object[] params, String[] sig) throws ReflectionException {
        if (op.equals("objectName") && (params == null || params.length == 0)) return name();
        if (op.equals("values") && (params == null || params.length == 0)) return new double[0];
        throw new ReflectionException(new NoSuchMethodException(op), "no operation " + op);
    }
}

/** A health gauge (ReplicaManager, Partition, Log, KafkaController), computed from the model on read. */
final class HealthGauge extends SimBean {
    final Node node;
    final Part part;
    final HealthSpec spec;

    HealthGauge(Node node, Part part, HealthSpec spec) {
        this.node = node;
        this.part = part;
        this.spec = spec;
    }

    Object lock() {
        return node.model;
    }

    public MBeanInfo getMBeanInfo() {
        return node.model.gaugeInfo;
    }

    Object read(String attribute) throws AttributeNotFoundException {
        if (!attribute.equals("Value")) throw new AttributeNotFoundException(attribute);
        return spec.box(node.model.value(node, part, spec));
    }

    ObjectName name() {
        try {
            return new ObjectName(spec.objectName(part == null ? null : part.topic.name, part == null ? -1 : part.index));
        } catch (MalformedObjectNameException e) {
            throw new IllegalStateException(e);
        }
    }
}

/** A Yammer Meter MBean over a model meter. */
final class MeterBean extends SimBean {
    final Model model;
    final YMeter meter;
    final String eventType;
    final ObjectName objectName;
    final MBeanInfo info;

    MeterBean(Model model, YMeter meter, String eventType, ObjectName objectName, MBeanInfo info) {
        this.model = model;
        this.meter = meter;
        this.eventType = eventType;
        this.objectName = objectName;
        this.info = info;
    }

    Object lock() {
        return model;
    }

    public MBeanInfo getMBeanInfo() {
        return info;
    }

    ObjectName name() {
        return objectName;
    }

    Object read(String a) throws AttributeNotFoundException {
        switch (a) {
            case "Count": return meter.count;
            case "EventType": return eventType;
            case "RateUnit": return TimeUnit.SECONDS;
            case "MeanRate": return meter.meanRate();
            case "OneMinuteRate": return meter.rate(0);
            case "FiveMinuteRate": return meter.rate(1);
            case "FifteenMinuteRate": return meter.rate(2);
            default: throw new AttributeNotFoundException(a);
        }
    }
}

/** An inventory bean: the captured broker's values, served as they were. */
final class StaticBean extends SimBean {
    final Object lock;
    final Inventory.Shape shape;
    final Object[] values;
    final ObjectName objectName;

    StaticBean(Object lock, Inventory.Shape shape, Object[] values, ObjectName objectName) {
        this.lock = lock;
        this.shape = shape;
        this.values = values;
        this.objectName = objectName;
    }

    Object lock() {
        return lock;
    }

    public MBeanInfo getMBeanInfo() {
        return shape.info;
    }

    ObjectName name() {
        return objectName;
    }

    Object read(String a) throws AttributeNotFoundException {
        Integer k = shape.index.get(a);
        if (k == null) throw new AttributeNotFoundException(a);
        return values[k];
    }
}

/** A partition a follower fetches, from which leader, and its scope 'P' beans. */
final class Following {
    final int leader;
    final List<ObjectName> names = new ArrayList<>();

    Following(int leader) {
        this.leader = leader;
    }
}

/** FetcherLagMetrics ConsumerLag of a followed partition: how far this replica's log is behind the leader's. */
final class FetcherLagBean extends SimBean {
    final Node node;
    final Part part;
    final Inventory.Shape shape;
    final ObjectName objectName;

    FetcherLagBean(Node node, Part part, Inventory.Shape shape, ObjectName objectName) {
        this.node = node;
        this.part = part;
        this.shape = shape;
        this.objectName = objectName;
    }

    Object lock() {
        return node.model;
    }

    public MBeanInfo getMBeanInfo() {
        return shape.info;
    }

    ObjectName name() {
        return objectName;
    }

    Object read(String a) throws AttributeNotFoundException {
        if (!a.equals("Value")) throw new AttributeNotFoundException(a);
        LogValues values = node.model.logValues;
        return Math.max(0L, part.leo - node.model.replicaLogEndOffset(node, part))
                + (values == null ? 0 : values.fetcherLag(part));
    }
}
