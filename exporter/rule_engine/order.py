"""The order jmx_exporter visits MBeans in, so that the first-come choices it makes come out the
same here: a family's HELP text is the first sample's, and in 0.x naming the first of two
duplicate samples wins.

jmx_exporter iterates a `java.util.HashSet<ObjectName>` of the names the broker listed: by hash
bucket of the canonical name's `String.hashCode()`, spread as `HashMap` does, in a table sized
for the number of names. Names sharing a bucket come in the order the broker's MBean repository
listed them: its domains in the bucket order of their names' hashes (a HashMap of domains), and
within a domain in the bucket order of the canonical key property list's hash (a HashMap per
domain, sized for that domain's MBeans), every set on the way keeping that order because equal
buckets stay equal. Checked against a real Kafka 4.1 broker and jmx_exporter 0.20.0: 1,178 of
1,181 bucket-sharing neighbours; the rest are MBeans registered after others were removed, which
leaves a domain's table larger than its count says (Java never shrinks one).
"""
from __future__ import annotations

import struct
import sys
from array import array
from operator import mul
from collections import Counter
from typing import Callable, Iterable, Mapping, Sequence, TypeVar

from kafka_jmx_sidecar.exporter.base.model import ObjectName

T = TypeVar("T")


_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"  # array("H") reads native order
_POWERS = [1]  # 31 ** k mod 2 ** 32 for k = len - 1, ..., 1, 0 (grown on demand)


def java_string_hash(text: str) -> int:
    """`String.hashCode()`: over UTF-16 code units, 32-bit wrap-around (kept unsigned here).

    The sum of unit * 31 ** (n - 1 - i), computed in C (map and sum) rather than a Python loop:
    a 400,000-name listing hashes in under a second instead of about ten."""
    units = array("H", text.encode(_UTF16))
    n = len(units)
    global _POWERS
    if n > len(_POWERS):
        powers = [1]
        for _ in range(max(n, 2 * len(_POWERS)) - 1):
            powers.append(powers[-1] * 31 & 0xFFFFFFFF)
        _POWERS = powers[::-1]
    return sum(map(mul, units, _POWERS[len(_POWERS) - n:])) & 0xFFFFFFFF


def canonical_name(name: ObjectName) -> str:
    """`ObjectName.getCanonicalName()`: the key properties sorted by key."""
    return name.domain + ":" + ",".join(f"{k}={v}" for k, v in sorted(name.keys))


def hashmap_table_size(count: int) -> int:
    """Buckets of a `java.util.HashMap` that `count` keys were put into one by one: 16, doubled
    whenever the size passes three quarters of the table."""
    size = 16
    while count > size * 3 // 4:
        size <<= 1
    return size


def readobject_table_size(count: int) -> int:
    """Buckets of a HashSet of `count` elements as Java deserialises one: capacity count * 4/3
    in float precision, rounded up to a power of two."""
    f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]  # noqa: E731
    capacity = int(f32(f32(float(count)) * 1.3333333730697632))  # 1 / 0.75f
    size = 1
    while size < capacity:
        size <<= 1
    return size


def instance_bucket(name_hash: int, class_hash: int, mask: int) -> int:
    """The bucket of an ObjectInstance (hashCode: its name's ^ its class name's) in a table of
    mask + 1 buckets."""
    return _bucket(name_hash ^ class_hash, mask)


def tie_key(canonical: str, domain_counts: Mapping[str, int], domains: int | None = None) -> tuple[int, int, str]:
    """The order of names sharing a bucket: as the broker's repository lists them (see above).
    The canonical text last, for what the repository's insertion order decides. `domains`: how
    many domains the broker has (by default, those of `domain_counts`)."""
    domain, _, keys = canonical.partition(":")
    return tie_buckets(domain_counts, domains)(domain, java_string_hash(keys)) + (canonical,)


def tie_buckets(domain_counts: Mapping[str, int], domains: int | None = None) -> Callable[[str, int], tuple[int, int]]:
    """tie_key's buckets from a name's domain and its canonical key property list's
    `String.hashCode()` (as the JVM computed it): the key without the name's text."""
    domain_mask = hashmap_table_size(len(domain_counts) if domains is None else domains) - 1
    of_domain: dict[str, tuple[int, int]] = {}

    def buckets(domain: str, keys_hash: int) -> tuple[int, int]:
        d = of_domain.get(domain)
        if d is None:
            d = of_domain[domain] = (_bucket(java_string_hash(domain), domain_mask),
                                     hashmap_table_size(domain_counts.get(domain, 0)) - 1)
        return d[0], _bucket(keys_hash, d[1])
    return buckets


def hashmap_order(names: Sequence[str]) -> list[int]:
    """Positions of `names` (distinct, in the order they were first put into a HashMap) in the
    order the map iterates them: by bucket, then by insertion within a bucket (a resize splits a
    bucket keeping its order). jmx_exporter 0.x keeps its families in such a map, keyed by name."""
    mask = hashmap_table_size(len(names)) - 1
    return sorted(range(len(names)), key=lambda i: _bucket(java_string_hash(names[i]), mask))


def jmx_exporter_order(items: Iterable[T], name_of: Callable[[T], ObjectName] = lambda x: x,
                       total: int | None = None, domain_counts: Mapping[str, int] | None = None) -> list[T]:
    """`items` in jmx_exporter's visiting order. `total` is how many names the broker returned
    (the table size depends on it) and `domain_counts` how many of them each domain holds; by
    default, those of the items."""
    items = list(items)
    mask = hashmap_table_size(len(items) if total is None else total) - 1
    if domain_counts is None:
        domain_counts = Counter(name_of(item).domain for item in items)

    def key(item: T) -> tuple:
        canonical = canonical_name(name_of(item))
        return _bucket(java_string_hash(canonical), mask), tie_key(canonical, domain_counts)

    return sorted(items, key=key)


def _bucket(h: int, mask: int) -> int:
    """HashMap's bucket of a String.hashCode() (signed or not): the high half spread into the low."""
    h &= 0xFFFFFFFF
    return (h ^ (h >> 16)) & mask


def visiting_ranks(hashes: Sequence[int], canonical: Callable[[int], str],
                   domain_counts: Mapping[str, int], total: int | None = None, domains: int | None = None,
                   first: Callable[[int], tuple] | None = None,
                   tie: Callable[[int], tuple[int, int]] | None = None) -> array:
    """Each of n names' place in jmx_exporter's visiting order, from its canonical name's
    `String.hashCode()` as the JVM computed it; `canonical(i)` (name i's canonical text) is asked
    only for names sharing a bucket, which come in `tie_key` order (`domain_counts`: how many of
    the names each domain holds). `total`: how many names jmx_exporter's set held before the
    exclude patterns took some out (its table is sized for them all); by default n. `first(i)`
    comes before `tie_key` among names sharing a bucket: jmx_exporter adds the names of one include
    pattern after another, each pattern's in the bucket order of the ObjectInstances it got.
    `tie(i)`: tie_key's buckets of name i (tie_buckets), so that `canonical(i)` is asked only of
    names alike in those too."""
    n = len(hashes)
    mask = hashmap_table_size(n if total is None else max(n, total)) - 1
    # one sorted list of (bucket << 32 | name index): a third of the memory of sorting indices
    # by a bucket key (400,000 names at 40,000 partitions)
    order = sorted([_bucket(h, mask) << 32 | i for i, h in enumerate(hashes)])
    ranks = array("I", bytes(4 * n))
    i = 0
    while i < n:
        b = order[i] >> 32
        j = i + 1
        while j < n and order[j] >> 32 == b:
            j += 1
        if j - i == 1:
            ranks[order[i] & 0xFFFFFFFF] = i
        else:
            at = [key & 0xFFFFFFFF for key in order[i:j]]
            if tie is None:
                tied = sorted(at, key=lambda k: tie_key(canonical(k), domain_counts, domains) if first is None
                              else first(k) + tie_key(canonical(k), domain_counts, domains))
            else:
                tied = _by_buckets(at, tie, first, canonical)
            for r, k in enumerate(tied, i):
                ranks[k] = r
        i = j
    return ranks


def _by_buckets(at: list[int], tie: Callable[[int], tuple], first: Callable[[int], tuple] | None,
                canonical: Callable[[int], str]) -> list[int]:
    """Names sharing a bucket in tie_key order: by `first` and the buckets, then by canonical
    text only where those are alike."""
    keyed = sorted(((first(k) if first else ()) + tie(k), k) for k in at)
    out: list[int] = []
    s = 0
    while s < len(keyed):
        e = s + 1
        while e < len(keyed) and keyed[e][0] == keyed[s][0]:
            e += 1
        if e - s == 1:
            out.append(keyed[s][1])
        else:
            out.extend(sorted((k for _, k in keyed[s:e]), key=canonical))
        s = e
    return out
