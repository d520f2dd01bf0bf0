"""What the rule engine's tests share: MBeans written as short text, a poll through a fresh
engine, and numbers as JMX hands them over."""
from hypothesis import strategies as st

from kafka_jmx_sidecar.exporter.base.model import Attribute, MBean, ObjectName, Sample
from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine, parse_config

MGMT = "Attribute exposed for management"


def bean(name: str, *attributes, class_name: str = "test") -> MBean:
    attrs = tuple(a if isinstance(a, Attribute) else Attribute(a[0], a[1], a[2] if len(a) > 2 else MGMT)
                  for a in attributes)
    return MBean(ObjectName.parse(name), class_name, attrs)


def run(yaml_text: str, *mbeans: MBean, naming: str = "0.x") -> list[Sample]:
    return RuleEngine(parse_config(yaml_text), naming=naming).samples(mbeans)


def one(yaml_text: str, *mbeans: MBean, naming: str = "0.x") -> Sample:
    out = run(yaml_text, *mbeans, naming=naming)
    assert len(out) == 1, out
    return out[0]


def series(samples):
    return [(s.name, s.labels, s.value) for s in samples]


URP = bean("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", ("Value", 0))
PARTITION = bean("kafka.cluster:type=Partition,name=AtMinIsr,topic=orders,partition=3", ("Value", 1))
METER = bean("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec",
             ("Count", 989), ("OneMinuteRate", 1.5), ("RateUnit", "SECONDS"), ("EventType", "bytes"))

# Any number a numeric leaf can hold: longs, doubles with NaN and infinities, and the usual ones.
NUMBERS = st.one_of(
    st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 3, 7, 0.0, 1.0, -0.0, 1e9, 1.5e-5]),
)
