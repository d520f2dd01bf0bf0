"""MBeanInfo (class name; readable attributes with declared type and description), looked up as
rarely as possible.

Kept per ObjectName, and per family (the ObjectName without its topic/partition keys) when the
MBean's class has one shape for all its instances (Yammer metrics: a family then costs one
getMBeanInfo, not one per partition). When the listing gave the names' class names, per class
for such classes (every Yammer histogram of the broker then costs one getMBeanInfo). The
MBeanInfo of other classes (Kafka's KafkaMbean, whose attributes grow) is looked up again after
each listing.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from kafka_jmx_sidecar.exporter.source.jmx.client_settings import JmxSettings
from kafka_jmx_sidecar.exporter.source.jmx.connections import Connections
from kafka_jmx_sidecar.exporter.source.jmx.stats import JmxStats
from kafka_jmx_sidecar.exporter.base.model import ObjectName

Targets = Sequence[tuple[str, ObjectName]]  # (name text, ObjectName)


class Info:
    __slots__ = ("class_name", "attrs", "shared")

    def __init__(self, class_name: str, attrs: tuple[tuple[str, str, str], ...], shared: bool):
        self.class_name = class_name
        self.attrs = attrs          # readable attributes: (name, declared type, description)
        self.shared = shared        # one shape for the class: shared by a family, kept across listings


class InfoCache:
    """`known[text]`: the MBeanInfo of a name; `failed`: names whose getMBeanInfo failed, not
    asked again before the next listing."""

    def __init__(self, settings: JmxSettings, engine: Any, conns: Connections, stats: JmxStats):
        self._settings, self._engine, self._conns, self._stats = settings, engine, conns, stats
        self.known: dict[str, Info] = {}
        self._family_info: dict[str, Info] = {}
        self.failed: set[str] = set()
        self.classes: dict[str, str] = {}  # name text -> its class name, as the last listing gave it

    def forget(self, alive: dict[str, ObjectName]) -> None:
        """After a listing: drop what belongs to vanished MBeans and what may have changed."""
        self.known = {k: v for k, v in self.known.items() if k in alive and v.shared}
        self._family_info = {k: v for k, v in self._family_info.items() if v.shared}
        self.failed = set()

    def ensure(self, targets: Targets, jnames_for: Callable[[list[str]], Any]) -> None:
        """MBeanInfo for every target without one: one family member first, then the rest of a
        family only when its class does not share one MBeanInfo."""
        info, fam_info = self.known, self._family_info
        first: list[tuple[str, ObjectName, str | None]] = []
        waiting: dict[str, list[tuple[str, ObjectName]]] = {}
        failed = self.failed
        for st, n in targets:
            if st in info or st in failed:
                continue
            fam = self._group(st, n)
            if fam is not None:
                shared = fam_info.get(fam)
                if shared is not None:
                    info[st] = shared
                    continue
                if fam in waiting:
                    waiting[fam].append((st, n))
                    continue
                waiting[fam] = []
            first.append((st, n, fam))
        if not first:
            return
        self._fetch(first, jnames_for)
        rest = []
        for fam, members in waiting.items():
            shared = fam_info.get(fam)
            for st, n in members:
                if shared is not None:
                    info[st] = shared
                else:
                    rest.append((st, n, None))
        if rest:
            self._fetch(rest, jnames_for)

    def _group(self, text: str, name: ObjectName) -> str | None:
        """What the name may share its MBeanInfo with: its class, when the listing named it and
        every instance of that class has one shape; else its family (None: none)."""
        cls = self.classes.get(text)
        if cls is not None and cls.startswith(self._settings.shared_info_classes):
            return "class " + cls
        return self._family(name)

    def _family(self, name: ObjectName) -> str | None:
        fk = self._settings.family_keys
        keys = name.keys
        if not any(k in fk for k, _ in keys):
            return None
        return name.domain + ":" + ",".join(f"{k}={v}" for k, v in keys if k not in fk)

    def _fetch(self, batch: list[tuple[str, ObjectName, str | None]], jnames_for: Callable[[list[str]], Any]) -> None:
        jn = jnames_for([st for st, _, _ in batch])
        records, rt = self._conns.call(lambda: self._engine.infos(self._conns.jconns, jn, len(batch), None,
                                                                  self._settings.read_timeout_seconds), "getMBeanInfo")
        self._stats.round_trips += rt
        self._stats.infos_read += rt
        for (st, n, fam), (status, class_name, attrs) in zip(batch, records):
            if status != "o":
                self._stats.note_failure(st, status, "getMBeanInfo")
                self.failed.add(st)  # not asked again before the next list_names()
                continue
            shared = class_name.startswith(self._settings.shared_info_classes)
            inf = Info(class_name, attrs, shared)
            self.known[st] = inf
            if fam is not None and shared:
                self._family_info[fam] = inf


def classes(texts: Sequence[str], census: Any) -> dict[str, str]:
    """Name text -> class name, for the names read whole of a listing (census: its engine.Census)."""
    if census is None or not census.class_names:
        return {}
    names = census.class_names
    return {t: names[k] for t, k in zip(texts, census.rest_class_index) if k >= 0}
