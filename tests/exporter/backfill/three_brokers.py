"""A Kafka 3.7 cluster of three brokers, as their sidecars archived it (written here by hand in the
archive's format), and what its backfill shows, worked out by hand from Kafka's definitions.

Topic `orders`, two partitions, three replicas each, min.insync.replicas 2. Each sidecar polls
every 30 s, broker 1 at T0 + 30k, broker 2 five seconds later, broker 3 ten seconds later:

- orders-0 is led by broker 1 throughout; at broker 1's poll at T0+60 its ISR shrinks to 2
  (under-replicated, at min ISR).
- orders-1 is led by broker 2 until its leadership moves to broker 3 between broker 2's poll at
  T0+35 and broker 3's at T0+40 (broker 2 reports it at T0+65 as a follower, ReplicasCount 0); at
  broker 3's poll at T0+220 its ISR shrinks to 2.
- broker 3's sidecar stops after its poll at T0+100 and starts again at T0+190 (a new segment):
  with --max-hold 35s its values hold until T0+135.

Every follower reports its hosted partition with ReplicasCount 0, as Kafka's gauges do. The grid:
T0 .. T0+240 every 30 s (steps 0..8). The cluster-wide view needs a poll of every broker holding a
step: step 0 (T0: brokers 2 and 3 have not polled yet) and steps 5 and 6 (T0+150, T0+180: broker 3
missing) have none.
"""
from __future__ import annotations

import json
from pathlib import Path

T0 = 1795298400  # 2026-11-21T22:00:00Z
STEPS = [T0 + 30 * k for k in range(9)]
WINDOW = ["--start", "2026-11-21T22:00:00Z", "--end", "2026-11-21T22:04:00Z", "--step", "30s", "--max-hold", "35s",
          "--broker-label", "broker"]
URP = "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions"
_ = None

# broker -> [(poll time - T0, keyframe, {partition: (isr, replicas)}, its UnderReplicatedPartitions)]
POLLS = {
    1: [(t, t == 0, {0: (3 if t < 60 else 2, 3), 1: (0, 0)}, int(t >= 60)) for t in range(0, 241, 30)],
    2: [(t, t == 5, {0: (0, 0), 1: (3, 3) if t < 65 else (0, 0)}, 0) for t in range(5, 246, 30)],
    3: [(t, t in (10, 190), {0: (0, 0), 1: (0, 0) if t < 40 else (2 if t >= 220 else 3, 3)}, int(t >= 220))
        for t in (10, 40, 70, 100, 190, 220)],
}

EXPECTED = {
    # the cluster-wide view: each partition under its leader, the sums with each partition once
    'kafka_cluster_partition_underreplicated{leader="1",partition="0",topic="orders"}': [_, 0, 1, 1, 1, _, _, 1, 1],
    'kafka_cluster_partition_insyncreplicascount{leader="1",partition="0",topic="orders"}': [_, 3, 2, 2, 2, _, _, 2,
                                                                                           2],
    # broker 2's report at T0+35 holds until its next poll, but broker 3's of T0+40 is later
    'kafka_cluster_partition_underreplicated{leader="2",partition="1",topic="orders"}': [_, 0, _, _, _, _, _, _, _],
    'kafka_cluster_partition_underreplicated{leader="3",partition="1",topic="orders"}': [_, _, 0, 0, 0, _, _, 0, 1],
    'kafka_cluster_partition_atminisr{leader="3",partition="1",topic="orders"}': [_, _, 0, 0, 0, _, _, 0, 1],
    "kafka_server_replicamanager_underreplicatedpartitions": [_, 0, 1, 1, 1, _, _, 1, 2],
    "kafka_server_replicamanager_atminisrpartitioncount": [_, 0, 1, 1, 1, _, _, 1, 2],
    "kafka_server_replicamanager_underminisrpartitioncount": [_, 0, 0, 0, 0, _, _, 0, 0],
    "kafka_server_replicamanager_leadercount": [_, 2, 2, 2, 2, _, _, 2, 2],
    # each broker's own series, as its sidecar served them (broker 3's gap too)
    'kafka_server_replicamanager_underreplicatedpartitions{broker="1"}': [0, 0, 1, 1, 1, 1, 1, 1, 1],
    'kafka_server_replicamanager_underreplicatedpartitions{broker="2"}': [_, 0, 0, 0, 0, 0, 0, 0, 0],
    'kafka_server_replicamanager_underreplicatedpartitions{broker="3"}': [_, 0, 0, 0, 0, _, _, 0, 1],
}
# Not in the view: leaderless partitions are in no broker's report, so no OfflinePartitionsCount.
ABSENT = "kafka_controller_kafkacontroller_offlinepartitionscount"


def _line(**fields) -> str:
    return json.dumps(fields) + "\n"


def _archive(broker: int) -> str:
    text = ""
    for t, keyframe, counts, urp in POLLS[broker]:
        if keyframe:
            text += _line(k="archive", format="kafka-jmx-sidecar-archive", schema=1, broker=str(broker),
                          sidecar="0.1.0", opened=T0 + t)
        records = [_line(k="count", topic="orders", partition=p, isr=isr, replicas=replicas)
                   for p, (isr, replicas) in counts.items()]
        if keyframe:
            records.append(_line(k="minisr", topic="orders", value=2, origin="configured"))
        records.append(_line(k="leaf", object=URP, attribute="Value", value=urp))
        text += (_line(k="poll", t=T0 + t, keyframe=keyframe, version="3.7.0", admin=False) + "".join(records)
                 + _line(k="end", records=len(records)))
    return text


def write_cluster(directory: Path) -> list[Path]:
    """Each broker's archive in a directory of its own (as each sidecar keeps it)."""
    out = []
    for broker in POLLS:
        d = directory / f"broker-{broker}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "2026-11-21T22Z.jsonl").write_text(_archive(broker))
        out.append(d)
    return out
