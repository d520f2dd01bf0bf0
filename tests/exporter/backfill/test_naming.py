"""The rule engine on backfilled MBean values (exporter/backfill/naming.py): what the live engine
makes of the same MBeans, including `value:`, `valueFactor`, a rule that depends on the value, and
the config's ObjectName filters."""
from __future__ import annotations

from kafka_jmx_sidecar.exporter.backfill.naming import Naming, named_series
from kafka_jmx_sidecar.exporter.base.model import Attribute, MBean, ObjectName
from kafka_jmx_sidecar.exporter.rule_engine import RuleEngine, parse_config
from kafka_jmx_sidecar.mbeans.catalog import ATTRIBUTE_DESCRIPTION

CONFIG = r"""
lowercaseOutputName: true
excludeObjectNames: ["kafka.cluster:type=Partition,name=Hidden,*"]
rules:
  # depends on the value: a 1 in OfflinePartitionsCount is named apart
  - pattern: 'kafka.controller<type=KafkaController, name=OfflinePartitionsCount><>Value: 1'
    name: one_offline
    value: 100
  - pattern: 'kafka.controller<type=KafkaController, name=(\w+)><>Value'
    name: controller_$1
    valueFactor: 0.5
  - pattern: 'kafka.cluster<type=Partition, name=(\w+), leader=(\w+), topic=(.+), partition=(\d+)><>Value'
    name: p_$1
    type: GAUGE
    labels: {topic: "$3", partition: "$4", leader: "$2"}
"""
ROWS = [  # objectname, attribute, value, k0, k1
    ("kafka.controller:type=KafkaController,name=OfflinePartitionsCount", "Value", 0.0, 0, 1),
    ("kafka.controller:type=KafkaController,name=OfflinePartitionsCount", "Value", 1.0, 2, 3),
    ("kafka.controller:type=KafkaController,name=OfflinePartitionsCount", "Value", 4.0, 4, 4),
    ("kafka.cluster:type=Partition,name=AtMinIsr,leader=2,topic=a,partition=0", "Value", 1.0, 0, 4),
    ("kafka.cluster:type=Partition,name=Hidden,leader=2,topic=a,partition=0", "Value", 1.0, 0, 4),
    ("kafka.server:type=Unmatched,name=X", "Value", 1.0, 0, 4),
]


def test_same_as_the_live_engine(spark):
    config = parse_config(CONFIG)
    df = spark.createDataFrame(ROWS, "objectname string, attribute string, value double, k0 long, k1 long")
    got = sorted((r.series, r.type, r.value, r.k0, r.k1) for r in named_series(df, Naming(config)).collect())
    # hand-worked from the rules
    assert got == [
        ("controller_OfflinePartitionsCount".lower(), "unknown", 0.0, 0, 1),
        ("controller_offlinepartitionscount", "unknown", 2.0, 4, 4),
        ("one_offline", "unknown", 100.0, 2, 3),
        ('p_atminisr{leader="2",partition="0",topic="a"}', "gauge", 1.0, 0, 4),  # labels sorted, as the engine does
    ]
    # and the live engine names the same MBeans the same (the hidden one is filtered at the read)
    engine = RuleEngine(config)
    for objectname, _, value, _, _ in ROWS:
        name = ObjectName.parse(objectname)
        if not config.wants_mbean(name):
            continue
        mbean = MBean(name, "Gauge", (Attribute("Value", int(value), ATTRIBUTE_DESCRIPTION, "java.lang.Object"),))
        for s in engine.samples([mbean]):
            labels = ",".join(f'{k}="{v}"' for k, v in s.labels)
            text = s.name + ("{" + labels + "}" if labels else "")
            assert any(g[0] == text and g[2] == s.value for g in got), (text, s.value)
