"""What the health core uses when the Admin API leaves an input unknown (the documented
fallbacks), and where each value came from, so a metric and a log line can say it.

min ISR of a topic, first known of:
  1. the topic's `min.insync.replicas` from DescribeConfigs (override or the broker default the
     answering broker applies)                                                  origin "admin"
  2. `sidecar.recompute.minInsyncReplicas.topics[NAME]`                          origin "configured"
  3. the broker default from DescribeConfigs of a live broker                   origin "admin_broker_default"
     with ELR on (eligible.leader.replicas.version >= 1): the cluster-level value, the one the
     controller judges ELR by (broker-level overrides are removed)             origin "admin_cluster_default"
  4. `sidecar.recompute.minInsyncReplicas.default`                               origin "configured_default"
  5. 1, Kafka's own default                                                     origin "kafka_default"

Reassignments unknown (brokers before 2.4, or ListPartitionReassignments unauthorized): no
adding/removing replicas, as kafka-topics.sh falls back, so a reassignment counts as
under-replicated while it runs (view.AdminView.partition_states does this).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Input, Reason

ORIGINS = ("admin", "configured", "admin_broker_default", "admin_cluster_default", "configured_default",
           "kafka_default")
CLUSTER_LEVEL = "DYNAMIC_DEFAULT_BROKER_CONFIG"  # DescribeConfigs' source of a cluster-wide broker config


@dataclass(frozen=True)
class MinIsrResolver:
    view: AdminView
    configured_topics: Mapping[str, int] = field(default_factory=dict)
    configured_default: int | None = None

    def broker_default(self) -> int | None:
        """The default min ISR of the live brokers when they agree (they should); None otherwise.
        With ELR on, only the cluster-level value counts."""
        values = {c.min_isr for b, c in self.view.brokers.items()
                  if c.min_isr is not None and b in self.view.cluster.live_brokers
                  and (not self.view.elr_enabled or c.min_isr_source == CLUSTER_LEVEL)}
        return values.pop() if len(values) == 1 else None

    def resolve(self, topic: str) -> tuple[int, str]:
        """(min ISR, origin) of a topic."""
        config = self.view.topics.get(topic)
        if config is not None and config.min_isr is not None:
            return config.min_isr, "admin"
        if topic in self.configured_topics:
            return self.configured_topics[topic], "configured"
        default = self.broker_default()
        if default is not None:
            return default, "admin_cluster_default" if self.view.elr_enabled else "admin_broker_default"
        if self.configured_default is not None:
            return self.configured_default, "configured_default"
        return 1, "kafka_default"

    def __call__(self, topic: str) -> int:
        return self.resolve(topic)[0]

    def fallbacks(self) -> dict[str, tuple[int, str]]:
        """The topics whose min ISR is not from their own DescribeConfigs answer, with what was used."""
        out = {}
        for topic in sorted({p.topic for p in self.view.partitions}):
            value, origin = self.resolve(topic)
            if origin != "admin":
                out[topic] = (value, origin)
        return out


def reassignments_known(view: AdminView) -> bool:
    return view.unknown(Input.REASSIGNMENTS) is None


def client_outdated(view: AdminView) -> bool:
    """Whether the client must be made anew (closed) before the next read: kafka-python keeps the
    controller it found first, so after a controller change every ListPartitionReassignments
    fails (UnknownBrokerIdError, seen on a real 2.4 cluster) until it is."""
    failed = view.unknown(Input.REASSIGNMENTS)
    return failed is not None and failed.reason in (Reason.UNREACHABLE, Reason.ERROR)
