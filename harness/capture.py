"""A reference capture of a real Kafka node, the input of the simulator's MBean inventory.

    python -m harness.capture 4.4 DIR
    python -m kafka_jmx_sidecar.mbeans.simulator.make_inventory DIR > mbeans/simulator/inventory-4.4.tsv

One KRaft node that is broker and controller (node id 1, as the Kafka 4.1 reference was captured)
gets the reference's topics, `refbin-test` (3 partitions) and `refbin-underminisr` (2 partitions,
min.insync.replicas 2), and records produced to the first by an idempotent producer; then DIR
receives every `kafka.*` MBean (`all-kafka-mbeans-full.txt`, harness/mbean_dump.py's format) and
what the real jmx_exporter 0.20.0 prints for the node without rules
(`jmx_exporter-0.20.0-standalone-metrics.txt`: its HELP lines carry the descriptions of Kafka's own
metrics, which the dump has not). The node's log directory is named as in the 4.1 reference
(`/var/lib/kafka/data`), so no temporary path is kept.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from harness.jmx_exporter import JmxExporter
from harness.kafka import KafkaCluster
from harness.kafka_release import RELEASES
from harness.mbean_dump import dump_text, read_mbeans

EXPORTER = "0.20.0"
TOPICS = {"refbin-test": dict(partitions=3), "refbin-underminisr": dict(partitions=2, min_isr=2)}
RECORDS = 1000
SETTLE_SECONDS = 10  # the produced traffic's meters and the node's periodic tasks registered
LOG_DIRECTORY = "/var/lib/kafka/data"


def capture(release: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with KafkaCluster(release, combined=True) as kafka:
        kafka.create_topics(TOPICS)
        # idempotent (acks=all, as the reference's producer): InitProducerId, and the producer ids
        # the broker asks its controller for (AllocateProducerIds)
        kafka.produce("refbin-test", records=RECORDS, acks="all")
        time.sleep(SETTLE_SECONDS)
        data = str(kafka.brokers[1].directory / "data")
        dump = dump_text(read_mbeans(kafka.jmx_url(1)))
        (out / "all-kafka-mbeans-full.txt").write_text(dump.replace(data, LOG_DIRECTORY))
        with tempfile.TemporaryDirectory(prefix="capture-") as tmp:
            config = Path(tmp) / "exporter.yml"
            config.write_text(f"hostPort: {kafka.jmx_host_port(1)}\n")
            with JmxExporter(EXPORTER, config) as exporter:
                text = exporter.scrape()
        (out / f"jmx_exporter-{EXPORTER}-standalone-metrics.txt").write_text(text.replace(data, LOG_DIRECTORY))


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in RELEASES:
        print(f"usage: python -m harness.capture RELEASE DIR  (RELEASE: {', '.join(RELEASES)}, KRaft only)",
              file=sys.stderr)
        return 2
    capture(argv[0], Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
