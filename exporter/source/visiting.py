"""A split listing's visiting order: every name's place in jmx_exporter's visiting order
(rule_engine/order.py), from the columns the JVM computed while listing (exporter/source/broker.py)."""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.base.model import ObjectName
from kafka_jmx_sidecar.exporter.rule_engine.order import (canonical_name, instance_bucket, readobject_table_size,
                                                          tie_buckets, visiting_ranks)
from kafka_jmx_sidecar.exporter.source.jmx.listing import Members


def ranks(names: list[ObjectName], keys: list, members: list[Members],
           canonical_of: list[tuple[int, Callable[[int], str]]], census, columns: tuple) -> Any:
    """Every listed name's place in jmx_exporter's visiting order (order.py): the names read whole,
    then each family's members; `columns`: per name, its hash, its first include pattern, its
    class name's hash and its canonical key property list's hash (None: not listed)."""
    all_hashes, pattern_of, class_of, key_hashes = columns
    starts = [start for start, _ in canonical_of]
    domains = [n.domain for n in names]  # of the names read whole; then each range's family's
    family_domain = [None] + [key[0] for key, m in zip(keys, members) if len(m)]

    def at(i: int) -> int:
        return bisect_right(starts, i) - 1

    def canonical(i: int) -> str:
        k = at(i)
        return canonical_of[k][1](i - starts[k])

    def domain_of(i: int) -> str:
        k = at(i)
        return domains[i] if k == 0 else family_domain[k]

    if census is not None:
        masks = [readobject_table_size(n) - 1 for n in census.pattern_sizes] or [0]

        def first(i: int) -> tuple[int, int]:
            p = pattern_of[i]
            return p, instance_bucket(all_hashes[i], class_of[i], masks[p])

        buckets = tie_buckets(census.per_domain, census.domains)

        def tie(i: int) -> tuple[int, int]:
            return buckets(domain_of(i), key_hashes[i])
        ranks = visiting_ranks(all_hashes, canonical, census.per_domain, census.listed, census.domains, first,
                               tie if key_hashes is not None else None)
    else:
        domain_counts = Counter(n.domain for n in names)
        for key, m in zip(keys, members):
            domain_counts[key[0]] += len(m)
        ranks = visiting_ranks(all_hashes, canonical, domain_counts)
    return ranks


def member_canonical(m: Members) -> Callable[[int], str]:
    """Member i's `getCanonicalName()` (asked only for names sharing a bucket)."""
    return lambda i: canonical_name(ObjectName.parse(m.name(i)))
