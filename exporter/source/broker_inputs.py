"""What the broker source reads whatever the rules want: which broker it is (app-info and the
cluster id), the replication meters (the reassignment series' inputs) and every hosted
partition's ISR size and replica count (the recompute's inputs), asked by value when the
configuration does not list those families."""
from __future__ import annotations

from array import array
from typing import Any

from kafka_jmx_sidecar.exporter.base.model import BeanTable, ObjectName
from kafka_jmx_sidecar.exporter.source.family import TABULATED, family_pattern
from kafka_jmx_sidecar.exporter.source.jmx import JmxClient
from kafka_jmx_sidecar.mbeans import catalog
from kafka_jmx_sidecar.mbeans.broker_recompute import HostedPartitions
from kafka_jmx_sidecar.mbeans.reassignment import METERS

# The recompute's per-partition inputs (exporter/recompute/stage.py): the ISR's size and the replica
# count each hosted partition's gauges show.
ISR_KEY = next(s.key for s in catalog.PARTITION if s.quantity == "isr_count")
REPLICAS_KEY = next(s.key for s in catalog.PARTITION if s.quantity == "replicas_count")

# The reassignment series' inputs (exporter/reassignment/stage.py): the broker-wide replication meters.
_METER_NAMES = {s.name: s.object_name for s in METERS}


def _exists_in(spec: catalog.MBeanSpec, version: str) -> bool:
    try:
        return spec.exists_in(version)
    except ValueError:  # not a Kafka release: read it and see
        return True


def meter_names(version: str | None) -> list[str]:
    """The replication meters the broker's release has (all of them when it is not known)."""
    return [_METER_NAMES[s.name] for s in METERS if version is None or _exists_in(s, version)]


def read_meters(client: JmxClient, names: list[str]) -> dict[str, float]:
    """The replication meters' counts: one getAttributes each."""
    return {mb.name.get("name"): float(a.value) for mb in client.read(names, attributes=["Count"])
            for a in mb.attributes if a.name == "Count" and isinstance(a.value, (int, float))}


def read_identity(client: JmxClient) -> tuple[str | None, str | None, str | None, str | None]:
    """(id, release, cluster id, what is missing of the first two): app-info's id key and
    Version, the ClusterId gauge's Value; one query and one read, whatever the filters say."""
    names = [str(n) for n in client.query_names(catalog.APP_INFO_PATTERN) if n.get(catalog.APP_INFO_ID_KEY)]
    read = {str(mb.name): {a.name: a.value for a in mb.attributes} for mb in client.read(
        names[:1] + list(catalog.CLUSTER_ID_NAMES), attributes=[catalog.APP_INFO_VERSION, catalog.CLUSTER_ID_VALUE])}
    cluster_id = next((v for n in catalog.CLUSTER_ID_NAMES
                       if isinstance(v := read.get(n, {}).get(catalog.CLUSTER_ID_VALUE), str) and v), None)
    if not names:
        return None, None, cluster_id, f"the broker has no {catalog.APP_INFO_PATTERN.replace(',*', ',id=N')} MBean"
    version = read.get(names[0], {}).get(catalog.APP_INFO_VERSION)
    broker_id = ObjectName.parse(names[0]).get(catalog.APP_INFO_ID_KEY)
    if not isinstance(version, str) or not version:
        return broker_id, None, cluster_id, f"{names[0]} has no {catalog.APP_INFO_VERSION} attribute"
    return broker_id, version, cluster_id, None


def _column(t: BeanTable) -> Any:
    """A table's values with absent members as 0."""
    if not t.present.count(0):
        return t.values
    return array(t.values.typecode, (v if p else 0 for v, p in zip(t.values, t.present)))


def aligned(replicas: BeanTable, isr: BeanTable) -> HostedPartitions:
    """The two families' columns member by member (the ReplicasCount members: every hosted
    partition). Both are listed sorted by (topic, partition), so they are usually aligned as they are."""
    if isr.topic is replicas.topic or (list(isr.topics) == list(replicas.topics) and isr.topic == replicas.topic
                                       and isr.partition == replicas.partition):
        isr_values = _column(isr)
    else:
        at = {(isr.topics[isr.topic[i]], isr.partition[i]): i for i in range(len(isr)) if isr.present[i]}
        isr_values = array("q", [isr.values[at[k]] if k in at else 0 for k in
                                 ((replicas.topics[t], p) for t, p in zip(replicas.topic, replicas.partition))])
    return HostedPartitions(replicas.topics, replicas.topic, replicas.partition, isr_values, _column(replicas))


def queried_counts(client: JmxClient) -> HostedPartitions:
    """The counts when the configuration does not list them: one query per small value (the
    replica count's 0 names every hosted partition), the few larger ones read. ~13 queries,
    each a scan of kafka.cluster (~0.2 s at 40,000 partitions): list them instead
    (includeObjectNames) on big brokers."""
    replicas = _values_by_query(client, REPLICAS_KEY, first=0)
    isr = _values_by_query(client, ISR_KEY, first=1)
    keys = sorted(replicas)
    topics = sorted({t for t, _ in keys})
    index = {t: i for i, t in enumerate(topics)}
    return HostedPartitions(topics, array("i", [index[t] for t, _ in keys]), array("i", [p for _, p in keys]),
                            array("q", [isr.get(k, 0) for k in keys]), array("q", [replicas[k] for k in keys]))


def _values_by_query(client: JmxClient, key: tuple[str, str, str], first: int) -> dict[tuple[str, int], int]:
    pattern = family_pattern(key)
    top = TABULATED[key] or 1
    out: dict[tuple[str, int], int] = {}

    def member(n: ObjectName) -> tuple[str, int] | None:
        topic, partition = n.get("topic"), n.get("partition")
        return (topic, int(partition)) if topic and partition and partition.isdigit() else None

    for value in range(first, top + 1):
        for n in client.query_names(pattern, "Value", "==", value):
            k = member(n)
            if k is not None:
                out[k] = value
    larger = client.query_names(pattern, "Value", ">", top)
    for mb in client.read(larger, attributes=["Value"]) if larger else ():
        k = member(mb.name)
        v = mb.attributes[0].value if mb.attributes else None
        if k is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = int(v)
    return out
