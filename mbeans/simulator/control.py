"""Driving a running simulator from Python: the events of the cluster model, over py4j.

Every method sends one event to the JVM (`Control.apply` there, as JSON) and the JVM applies it
under the same lock its MBeans read under, so a JMX read after a call sees the new state. Events
follow what Kafka's controller and leaders do (see ModelEvents.java); a request Kafka would refuse
(shrinking the ISR of a leaderless partition, reassigning to a broker that does not exist...)
raises `SimulatorError` with the reason.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from kafka_jmx_sidecar.mbeans.health import PartitionState


class SimulatorError(RuntimeError):
    """The simulator refused an event or could not start; the message says why."""


class Controls:
    """The event API. Mixed into `Simulator`; needs `_entry` (the py4j entry point)."""

    _entry: Any
    _gateway: Any

    # --- generic ------------------------------------------------------------------------------

    def apply(self, event: dict) -> dict:
        """Apply one event, e.g. {"op": "fail_broker", "broker": 2}. Returns the JVM's answer."""
        return json.loads(self._java(lambda: self._entry.apply(json.dumps(event))))

    def _java(self, call):
        """One call into the JVM; its refusals and a lost channel become SimulatorError."""
        from py4j.protocol import Py4JError, Py4JJavaError

        try:
            return call()
        except Py4JJavaError as e:
            message = str(e.java_exception.getMessage())
            # Release the Java exception now: left to the cyclic GC, py4j's finalizer would call the
            # JVM at some arbitrary later moment (maybe after it stopped, maybe inside ast.parse).
            self._gateway.detach(e.java_exception)
            e.java_exception = None
            raise SimulatorError(message) from None
        except Py4JError as e:
            raise SimulatorError(f"the simulator's control channel failed ({e}); is the simulator still running?") \
                from None

    def _call(self, op: str, **args: Any) -> dict:
        return self.apply({"op": op, **{k: v for k, v in args.items() if v is not None}})

    # --- brokers ------------------------------------------------------------------------------

    def fail_broker(self, broker: int) -> None:
        """The node stops: its JMX connector goes away; the controller fences it, takes it out of
        ISRs (except a partition's last member) and moves leadership to the next ISR replica."""
        self._call("fail_broker", broker=broker)

    def restore_broker(self, broker: int, *, catch_up: bool = True) -> None:
        """The node comes back with fresh MBeans (meter counts from zero). It leads the leaderless
        partitions whose last ISR member it is, fills placeholder replicas, and with `catch_up`
        rejoins the ISR of its other partitions (each a leader's IsrExpandsPerSec)."""
        self._call("restore_broker", broker=broker, catch_up=catch_up)

    def elect_preferred_leaders(self) -> int:
        """Preferred leader election: the first replica leads again where it is alive and in sync."""
        return int(self._call("elect_preferred_leaders")["elected"])

    # --- ISR and min ISR ----------------------------------------------------------------------

    def shrink_isr(self, topic: str, partition: int, broker: int) -> None:
        """The leader drops a lagging follower from the ISR (the leader's IsrShrinksPerSec)."""
        self._call("shrink_isr", topic=topic, partition=partition, broker=broker)

    def expand_isr(self, topic: str, partition: int, broker: int) -> None:
        """A follower caught up and the leader adds it to the ISR (the leader's IsrExpandsPerSec)."""
        self._call("expand_isr", topic=topic, partition=partition, broker=broker)

    def set_min_isr(self, topic: str, min_isr: int) -> None:
        """Change the topic's min.insync.replicas."""
        self._call("set_min_isr", topic=topic, min_isr=min_isr)

    # --- reassignments ------------------------------------------------------------------------

    def start_reassignment(self, topic: str, partition: int, replicas: Iterable[int], *,
                           bytes_per_sec: int | None = None, auto_complete: bool = True) -> None:
        """KIP-455: replicas become target + removing, adding = target - current. Each adding
        replica copies the partition's size at `bytes_per_sec` (Reassignment/ReplicationBytesIn on
        it, ...Out on the leader), joins the ISR when caught up, and with `auto_complete` the
        controller completes the reassignment once every target replica is in the ISR."""
        self._call("start_reassignment", topic=topic, partition=partition, replicas=list(replicas),
                   bytes_per_sec=bytes_per_sec, auto_complete=auto_complete)

    def complete_reassignment(self, topic: str, partition: int) -> None:
        """Finish now: live adding replicas join the ISR, then the controller completes it."""
        self._call("complete_reassignment", topic=topic, partition=partition)

    def cancel_reassignment(self, topic: str, partition: int) -> None:
        """Revert to the original replicas."""
        self._call("cancel_reassignment", topic=topic, partition=partition)

    # --- topics and traffic -------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int | list[dict] = 1, *, replication_factor: int = 1,
                     min_isr: int = 1, allow_under_replicated: bool = False) -> None:
        """Create a topic: `partitions` as a count (replicas round-robin over live brokers; with
        `allow_under_replicated`, missing replicas become placeholders -1, -2, ... as in the KIP)
        or as a list of {"replicas": [...], "isr": [...], "leader": id}."""
        self._call("create_topic", name=name, partitions=partitions, replication_factor=replication_factor,
                   min_isr=min_isr, allow_under_replicated=allow_under_replicated)

    def delete_topic(self, name: str) -> None:
        self._call("delete_topic", topic=name)

    def set_traffic(self, topic: str = "*", *, bytes_in_per_sec: int = 0, messages_in_per_sec: int = 0,
                    bytes_out_per_sec: int = 0) -> None:
        """Steady produce/consume load on a topic ("*": all), spread over its partitions' leaders:
        BytesIn/MessagesIn/BytesOut (per topic and broker-wide) on leaders, ReplicationBytesIn on
        in-sync followers and ReplicationBytesOut on leaders. All zeros stop it."""
        self._call("traffic", topic=topic, bytes_in_per_sec=bytes_in_per_sec,
                   messages_in_per_sec=messages_in_per_sec, bytes_out_per_sec=bytes_out_per_sec)

    def produce(self, topic: str = "*", *, bytes: int = 0, messages: int = 0, bytes_out: int = 0) -> None:
        """One burst of traffic, accounted as `set_traffic` does."""
        self._call("produce", topic=topic, bytes=bytes, messages=messages, bytes_out=bytes_out)

    # --- time ---------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move the simulated clock (in steps of at most a second): traffic flows, reassignments
        copy, Yammer meters tick every 5 s. Works with the manual and the real-time clock."""
        self._call("advance", seconds=seconds)

    # --- reading back -------------------------------------------------------------------------

    def cluster(self) -> dict:
        """Nodes, live nodes, controllers, active controller, JMX URLs, clock, counts."""
        return json.loads(self._java(self._entry.cluster))

    def live_brokers(self) -> frozenset[int]:
        return frozenset(self.cluster()["live_brokers"])

    def partition_states(self) -> list[PartitionState]:
        """The model's partitions as mbeans.health.PartitionState (leader -1 when there is none)."""
        live = self.live_brokers()
        return [PartitionState(
            topic=p["topic"], partition=p["partition"], leader=p["leader"], replicas=tuple(p["replicas"]),
            isr=tuple(p["isr"]), adding_replicas=tuple(p["adding_replicas"]),
            removing_replicas=tuple(p["removing_replicas"]), min_isr=p["min_isr"], live_brokers=live,
        ) for p in json.loads(self._java(self._entry.partitionStates))]

    def eligible_leader_replicas(self) -> dict[tuple[str, int], tuple[int, ...]]:
        """(topic, partition) -> its KIP-966 eligible leader replicas (empty unless KRaft 4.1+ and the
        ISR is below min ISR), as `kafka-topics.sh --describe` prints them in its Elr column."""
        return {(p["topic"], p["partition"]): tuple(p["elr"]) for p in json.loads(self._java(self._entry.partitionStates))}

    def heap_used_bytes(self, gc: bool = False) -> int:
        """The simulator JVM's used heap (after a System.gc() with `gc`)."""
        return int(self._java(self._entry.gc if gc else self._entry.heapUsedBytes))

    def mbean_count(self, node: int) -> int:
        """MBeans registered in that node's MBeanServer (platform beans included); -1 if not served."""
        return int(self._java(lambda: self._entry.mbeanCount(node)))
