"""What the client gets back from an engine, whichever does the JVM-side work.

Two engines make the same JMX calls and return the same results; the client does not care
which runs. `java_engine.JavaEngine` calls the compiled SidecarJmx helper: one JPype call per
batch, parallel reads on Java threads (one per connection), results as one string.
`jpype_engine.JPypeEngine` makes the calls one by one through JPype (parallel on Python
threads: JPype releases the GIL during Java calls) and converts each value in Python; it needs
no compiler and is the baseline the benchmark compares against.

read() returns one record per MBean: the helper's text (JavaEngine; convert.decode_record makes
it (status, values)) or (status, values) itself (JPypeEngine). Both raise BatchFailure carrying
the Java exception when a connection fails mid-batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class BatchFailure(Exception):
    """A connection-level failure (IOException, deadline) during a batch; `.java` is the cause."""

    def __init__(self, java: Any, connection: int = -1, round_trips: int = 0):
        super().__init__("batch failed")
        self.java = java
        self.connection = connection
        self.round_trips = round_trips


class NameList:
    __slots__ = ("strings", "jnames", "round_trips")

    def __init__(self, strings: list[str], jnames: Any, round_trips: int):
        self.strings = strings
        self.jnames = jnames
        self.round_trips = round_trips


@dataclass(frozen=True)
class Census:
    """What a listing matched before the exclude patterns took names out (jmx_exporter's visiting
    order depends on it): how many names, how many of them per domain, how many domains the
    broker has, how many names each include pattern matched; per name read whole (in the order
    of the names listed) the first include pattern that matched it, its class name's hash and its
    canonical key property list's hash; and its class name (`class_names[rest_class_index[i]]`,
    the index -1 when the broker gave none)."""

    listed: int
    per_domain: dict
    domains: int
    pattern_sizes: tuple = ()
    rest_pattern: Any = ()
    rest_class: Any = ()
    rest_key_hash: Any = ()
    class_names: tuple = ()
    rest_class_index: Any = ()
