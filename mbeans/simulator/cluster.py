"""The simulated cluster as data: load and check a `--cluster` file, build synthetic clusters.

A cluster is a plain dict in the `simulate --cluster` format:

    {"brokers": [1, 2], "controllers": [1],
     "topics": [{"name": "orders", "config": {"min.insync.replicas": 2},
                 "partitions": [{"replicas": [1, 2], "isr": [1, 2], "leader": 1,
                                 "adding_replicas": [], "removing_replicas": []}]}]}

plus, optionally: `"metadata": "kraft" | "zookeeper"` (default: ZooKeeper before Kafka 3.3, KRaft
from 3.3), `"offline": [ids]` (nodes down at start), `"cluster_id"`, `"features"` (finalized feature levels,
e.g. `{"eligible.leader.replicas.version": 1}`, which harness/admin_wire.py answers), and per topic the shorthand
`"partitions": N, "replication_factor": R` (replicas assigned round-robin). Partition fields are
those of the `health` command's input; the partition number is the list position. Negative replica
ids are placeholders for replicas that do not exist yet.

`normalize()` checks everything and returns the canonical form the JVM reads; every problem is
reported as a `ClusterError` naming the file, the key path and what to do.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kafka_jmx_sidecar.mbeans.catalog import default_metadata_mode
from kafka_jmx_sidecar.mbeans.health import parse_version

TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


class ClusterError(ValueError):
    """A cluster definition that cannot be simulated; the message says where and what to do."""


def load(path: str | Path) -> dict:
    """Read a JSON or YAML cluster file (not yet checked: pass it to `normalize`)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ClusterError(f"{p}: cannot read the cluster file ({e.strerror})") from None
    if p.suffix.lower() == ".json" or text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ClusterError(f"{p}:{e.lineno}: not valid JSON ({e.msg})") from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f":{mark.line + 1}" if mark else ""
            raise ClusterError(f"{p}{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
    if not isinstance(data, dict):
        raise ClusterError(f"{p}: expected a mapping with 'brokers' and 'topics' at the top")
    return data


def _ints(value: Any, where: str) -> list[int]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ClusterError(f"{where}: expected a list of integer broker ids, got {value!r}")
    return list(value)


def _int(value: Any, where: str, minimum: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ClusterError(f"{where}: expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ClusterError(f"{where}: must be at least {minimum}, got {value}")
    return value


def normalize(data: dict, *, version: str = "4.1", source: str = "cluster") -> dict:
    """Check a cluster definition and return its canonical form (see the module docstring)."""
    w = source
    known = {"brokers", "controllers", "topics", "metadata", "offline", "cluster_id", "features"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ClusterError(f"{w}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    brokers = _brokers(data, w)
    mode = _metadata_mode(data, version, w)
    controllers = _controllers(data, brokers, mode, w)
    nodes = set(brokers) | set(controllers)
    offline = _ints(data.get("offline"), f"{w}: offline")
    for o in offline:
        if o not in nodes:
            raise ClusterError(f"{w}: offline: {o} is not a broker or controller of this cluster")
    cluster_id = data.get("cluster_id", "sImUlAtEdClUsTeRiD0001")
    if not isinstance(cluster_id, str):
        raise ClusterError(f"{w}: cluster_id: expected a string")

    topics_in = data.get("topics") or []
    if not isinstance(topics_in, list):
        raise ClusterError(f"{w}: topics: expected a list of topics")
    seen: set[str] = set()
    live = [b for b in brokers if b not in offline]
    topics = [_topic(t, f"{w}: topics[{ti}]", w, seen, brokers, live, offline) for ti, t in enumerate(topics_in)]
    features = data.get("features") or {}
    if not isinstance(features, dict) or not all(isinstance(k, str) for k in features):
        raise ClusterError(f"{w}: features: expected a mapping of finalized feature levels, e.g. "
                           f"{{\"eligible.leader.replicas.version\": 1}}")
    out = {"brokers": brokers, "controllers": controllers, "metadata": mode, "offline": offline,
           "cluster_id": cluster_id, "topics": topics}
    if features:  # what the Admin API answers (harness/admin_wire.py); the JMX simulator has none
        out["features"] = {k: _int(v, f"{w}: features.{k}", 0) for k, v in features.items()}
    return out


def _brokers(data: dict, w: str) -> list[int]:
    brokers = _ints(data.get("brokers"), f"{w}: brokers")
    if not brokers:
        raise ClusterError(f"{w}: brokers: list at least one broker id, e.g. \"brokers\": [1, 2, 3]")
    if len(set(brokers)) != len(brokers):
        raise ClusterError(f"{w}: brokers: an id is listed twice in {brokers}")
    if any(b < 0 for b in brokers):
        raise ClusterError(f"{w}: brokers: ids must not be negative (negative ids are replica placeholders)")
    return brokers


def _metadata_mode(data: dict, version: str, w: str) -> str:
    """"kraft" or "zookeeper": the cluster's, or the version's default; checked against the version."""
    mode = data.get("metadata") or default_metadata_mode(version)
    v = parse_version(version)
    if mode not in ("kraft", "zookeeper"):
        raise ClusterError(f"{w}: metadata: expected 'kraft' or 'zookeeper', got {mode!r}")
    if mode == "kraft" and v < (2, 8):
        raise ClusterError(f"{w}: metadata: Kafka {version} has no KRaft mode (2.8 and later); use 'zookeeper'")
    if mode == "zookeeper" and v >= (4, 0):
        raise ClusterError(f"{w}: metadata: Kafka {version} has no ZooKeeper mode (removed in 4.0); use 'kraft'")
    return mode


def _controllers(data: dict, brokers: list[int], mode: str, w: str) -> list[int]:
    """The controller ids (the first broker by default); under ZooKeeper only the active one."""
    controllers = _ints(data.get("controllers"), f"{w}: controllers")
    if "controllers" not in data:
        controllers = [brokers[0]]
    if len(set(controllers)) != len(controllers):
        raise ClusterError(f"{w}: controllers: an id is listed twice in {controllers}")
    if mode == "zookeeper":
        extra = [c for c in controllers if c not in brokers]
        if extra:
            raise ClusterError(f"{w}: controllers: {extra} are not brokers; under ZooKeeper the controller is one "
                               f"of the brokers (dedicated controllers need \"metadata\": \"kraft\")")
        controllers = controllers[:1]  # the active one; every broker can take over
    if any(c < 0 for c in controllers):
        raise ClusterError(f"{w}: controllers: ids must not be negative")
    return controllers


def _topic(t: Any, tw: str, w: str, seen: set[str], brokers: list[int], live: list[int], offline: list[int]) -> dict:
    """One topic's canonical form; `seen` collects the names so far, to refuse a second definition."""
    if not isinstance(t, dict):
        raise ClusterError(f"{tw}: expected a mapping with name, config and partitions")
    unknown = sorted(set(t) - {"name", "config", "partitions", "replication_factor"})
    if unknown:
        raise ClusterError(f"{tw}: unknown key(s) {', '.join(unknown)} (known: name, config, partitions, "
                           f"replication_factor)")
    name = t.get("name")
    if not isinstance(name, str) or not TOPIC_NAME.match(name):
        raise ClusterError(f"{tw}.name: {name!r} is not a Kafka topic name ([a-zA-Z0-9._-], 1 to 249 characters)")
    if name in seen:
        raise ClusterError(f"{tw}.name: topic {name!r} is defined twice")
    seen.add(name)
    tw = f"{w}: topic {name}"
    config = t.get("config") or {}
    if not isinstance(config, dict):
        raise ClusterError(f"{tw}: config: expected a mapping such as {{\"min.insync.replicas\": 2}}")
    min_isr = config.get("min.insync.replicas", 1)
    if isinstance(min_isr, str) and min_isr.isdigit():
        min_isr = int(min_isr)
    min_isr = _int(min_isr, f"{tw}: config.min.insync.replicas", 1)
    parts_in = t.get("partitions")
    if isinstance(parts_in, int) and not isinstance(parts_in, bool):
        parts_in = _assign(parts_in, t.get("replication_factor", 1), brokers, live, tw)
    elif "replication_factor" in t:
        raise ClusterError(f"{tw}: replication_factor goes with \"partitions\": N (a count); "
                           f"with a partition list give each partition's replicas")
    if not isinstance(parts_in, list) or not parts_in:
        raise ClusterError(f"{tw}: partitions: give a non-empty list of partitions or a partition count")
    parts = [_partition(p, pi, f"{tw}: partitions[{pi}]", brokers, offline) for pi, p in enumerate(parts_in)]
    return {"name": name, "min_isr": min_isr, "partitions": parts}


def _assign(count: int, rf: Any, brokers: list[int], live: list[int], where: str) -> list[dict]:
    rf = _int(rf, f"{where}: replication_factor", 1)
    if count < 1:
        raise ClusterError(f"{where}: partitions: need at least 1 partition")
    if rf > len(brokers):
        raise ClusterError(f"{where}: replication_factor {rf} is larger than the {len(brokers)} brokers")
    out = []
    for k in range(count):
        replicas = [brokers[(k + j) % len(brokers)] for j in range(rf)]
        isr = [r for r in replicas if r in live]
        out.append({"replicas": replicas, "isr": isr or replicas[:1], "leader": isr[0] if isr else None})
    return out


ELR_KEYS = ("eligible_leader_replicas", "last_known_elr")


def _partition(p: Any, index: int, where: str, brokers: list[int], offline: list[int]) -> dict:
    if not isinstance(p, dict):
        raise ClusterError(f"{where}: expected a mapping with replicas, isr and leader")
    known = {"replicas", "isr", "leader", "adding_replicas", "removing_replicas", "size_bytes", "log_end_offset",
             "bytes_per_sec", "partition", *ELR_KEYS}
    unknown = sorted(set(p) - known)
    if "min_isr" in unknown:
        raise ClusterError(f"{where}: min_isr is a topic setting here: put it in the topic's config as "
                           f"\"min.insync.replicas\"")
    if unknown:
        raise ClusterError(f"{where}: unknown key(s) {', '.join(unknown)} (known: replicas, isr, leader, "
                           f"adding_replicas, removing_replicas, size_bytes, log_end_offset)")
    if "partition" in p and p["partition"] != index:
        raise ClusterError(f"{where}.partition: {p['partition']!r} but the partition number is the list position "
                           f"({index})")
    replicas = _ints(p.get("replicas"), f"{where}.replicas")
    if not replicas:
        raise ClusterError(f"{where}.replicas: give at least one replica")
    if len(set(replicas)) != len(replicas):
        raise ClusterError(f"{where}.replicas: {replicas} lists a broker twice (Kafka rejects duplicate replicas)")
    for r in replicas:
        if r >= 0 and r not in brokers:
            raise ClusterError(f"{where}.replicas: {r} is not a broker of the cluster (brokers: {brokers})")
    isr = _ints(p.get("isr", [r for r in replicas if r >= 0 and r not in offline]), f"{where}.isr")
    if len(set(isr)) != len(isr):
        raise ClusterError(f"{where}.isr: {isr} lists a broker twice")
    for r in isr:
        if r < 0:
            raise ClusterError(f"{where}.isr: placeholder {r} cannot be in the ISR (it does not exist yet)")
        if r not in replicas:
            raise ClusterError(f"{where}.isr: {r} is not one of the replicas {replicas}")
    leader = p.get("leader", isr[0] if isr else None)
    if leader is None or leader == -1:
        leader = -1
    else:
        leader = _int(leader, f"{where}.leader")
        if leader not in isr:
            raise ClusterError(f"{where}.leader: {leader} is not in the ISR {isr} (use null or -1 for no leader)")
        if leader in offline:
            raise ClusterError(f"{where}.leader: broker {leader} is offline; an offline broker leads nothing "
                               f"(set leader to null, or take it out of \"offline\")")
    if leader == -1 and not isr:
        pass  # KIP-966 (ELR): a leaderless partition may have an empty ISR
    elif not isr:
        raise ClusterError(f"{where}.isr: a partition with a leader has at least its leader in the ISR")
    adding = _ints(p.get("adding_replicas"), f"{where}.adding_replicas")
    removing = _ints(p.get("removing_replicas"), f"{where}.removing_replicas")
    for name, ids in (("adding_replicas", adding), ("removing_replicas", removing)):
        for r in ids:
            if r not in replicas:
                raise ClusterError(f"{where}.{name}: {r} is not in replicas {replicas}; during a reassignment "
                                   f"replicas holds the original, adding and removing replicas together")
            if r < 0:
                raise ClusterError(f"{where}.{name}: a placeholder ({r}) cannot be reassigned")
    both = set(adding) & set(removing)
    if both:
        raise ClusterError(f"{where}: {sorted(both)} are both adding and removing")
    if adding and len(adding) == len(replicas):
        raise ClusterError(f"{where}.adding_replicas: every replica is adding; the original replicas must remain")
    out = {"replicas": replicas, "isr": isr, "leader": leader, "adding_replicas": adding,
           "removing_replicas": removing}
    for key in ("size_bytes", "log_end_offset", "bytes_per_sec"):
        if key in p:
            out[key] = _int(p[key], f"{where}.{key}", 0)
    for key in ELR_KEYS:  # KIP-966's lists as the Admin API answers them (harness/admin_wire.py)
        if key in p:
            ids = _ints(p[key], f"{where}.{key}")
            stray = [r for r in ids if r not in replicas or r in isr]
            if stray:
                raise ClusterError(f"{where}.{key}: {stray} must be replicas outside the ISR {isr}")
            out[key] = ids
    return out


def synthetic(partitions: int, *, brokers: int = 3, replication_factor: int = 3, min_isr: int = 2,
              partitions_per_topic: int = 100, controllers: list[int] | None = None) -> dict:
    """A healthy cluster of `partitions` partitions: topics `synthetic-NNNN` of up to
    `partitions_per_topic` each, replicas round-robin, leaders spread over the brokers. With the
    defaults every broker hosts every partition (RF 3 on 3 brokers), so the broker the simulator
    poses as serves ten Partition and Log MBeans per partition, like a real broker of that size."""
    if partitions < 1:
        raise ClusterError("--partitions: need at least 1 partition")
    if replication_factor > brokers:
        raise ClusterError(f"replication factor {replication_factor} needs at least that many brokers, got {brokers}")
    ids = list(range(1, brokers + 1))
    topics = []
    k = 0
    n = 0
    while k < partitions:
        count = min(partitions_per_topic, partitions - k)
        parts = []
        for i in range(count):
            replicas = [ids[(k + i + j) % brokers] for j in range(replication_factor)]
            parts.append({"replicas": replicas, "isr": list(replicas), "leader": replicas[0]})
        topics.append({"name": f"synthetic-{n:04d}", "config": {"min.insync.replicas": min(min_isr, replication_factor)},
                       "partitions": parts})
        k += count
        n += 1
    return {"brokers": ids, "controllers": controllers if controllers is not None else [ids[0]], "topics": topics}


def reference_4_1() -> dict:
    """The captured Kafka nodes' cluster (inventory-4.1.tsv's and -4.4.tsv's): node 1, broker and controller,
    refbin-test (3 partitions, RF 1) and refbin-underminisr (2 partitions, RF 1, min ISR 2)."""
    return {
        "brokers": [1], "controllers": [1], "metadata": "kraft",
        "cluster_id": "sImUlAtEdClUsTeRiD0001",
        "topics": [
            {"name": "refbin-test", "partitions": [{"replicas": [1], "isr": [1], "leader": 1} for _ in range(3)]},
            {"name": "refbin-underminisr", "config": {"min.insync.replicas": 2},
             "partitions": [{"replicas": [1], "isr": [1], "leader": 1} for _ in range(2)]},
        ],
    }
