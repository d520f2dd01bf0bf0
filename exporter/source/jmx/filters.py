"""Which attributes of which MBean are read: jmx_exporter's filters, checked before any connection.

- include/excludeObjectNames: ObjectName patterns, applied by the listing (in the JVM); only
  checked here, so that a bad one is a configuration error that names it;
- include/excludeObjectNameAttributes: per exact ObjectName (JMX equality: key order does not
  matter); with any include list, MBeans without one are not read at all;
- the expensive attributes jmx_exporter skips (EXPENSIVE_ATTRIBUTES), unless told not to;
- autoExcludeObjectNameAttributes: array-typed attributes, and attributes whose value came back
  as something that is never a sample (noted by the read, per MBean, until the next listing).
"""
from __future__ import annotations

from typing import Any

from kafka_jmx_sidecar.exporter.source.jmx.client_settings import EXPENSIVE_ATTRIBUTES, JmxSettings
from kafka_jmx_sidecar.exporter.source.jmx.errors import JmxConfigError
from kafka_jmx_sidecar.exporter.source.jmx.mbean_info import Info
from kafka_jmx_sidecar.exporter.base.model import ObjectName


def _canonical(name: ObjectName | str) -> tuple[str, frozenset]:
    """ObjectName equality as JMX defines it (key order does not matter)."""
    if isinstance(name, str):
        name = ObjectName.parse(name)
    return name.domain, frozenset(name.keys)


def check_patterns(settings: JmxSettings) -> None:
    """Raise JmxConfigError for an include/exclude pattern the JVM does not parse."""
    import jpype

    ON = jpype.JClass("javax.management.ObjectName")
    for key, patterns in (("includeObjectNames", settings.include_object_names),
                          ("excludeObjectNames", settings.exclude_object_names)):
        for p in patterns:
            try:
                ON(p)
            except jpype.JException as e:
                raise JmxConfigError(f"{key}: {p!r} is not an ObjectName pattern ({e.getMessage()}); "
                                     'write domain:key=value,... with * and ? wildcards, e.g. "kafka.server:*"'
                                     ) from None


class AttributeFilter:
    """`wanted()`: the attributes to read of one MBean. `auto_excluded[text]`: the attributes
    the reads found unexportable (None when autoExcludeObjectNameAttributes is off)."""

    def __init__(self, settings: JmxSettings):
        try:
            self._include = {_canonical(k): frozenset(v) for k, v in settings.include_object_name_attributes.items()}
            self._exclude = {_canonical(k): frozenset(v) for k, v in settings.exclude_object_name_attributes.items()}
        except ValueError as e:
            raise JmxConfigError(f"include/excludeObjectNameAttributes: {e}") from None
        self._expensive = ({_canonical(k): v for k, v in EXPENSIVE_ATTRIBUTES.items()}
                           if settings.skip_expensive_attributes else {})
        self._arrays = settings.auto_exclude_object_name_attributes
        self.auto_excluded: dict[str, set[str]] | None = {} if self._arrays else None

    def forget(self, alive: dict[str, Any]) -> None:
        """After a listing: drop what belongs to vanished MBeans."""
        if self.auto_excluded is not None:
            self.auto_excluded = {k: v for k, v in self.auto_excluded.items() if k in alive}

    def wanted(self, st: str, name: ObjectName, inf: Info, only: frozenset | None) -> tuple[int, ...]:
        """Positions in inf.attrs to read for this MBean (`only`: of those attribute names)."""
        key = None
        if self._include or self._exclude or self._expensive:
            key = (name.domain, frozenset(name.keys))
        include = self._include.get(key) if self._include else None
        if self._include and include is None:
            return ()
        exclude = self._exclude.get(key, ()) if self._exclude else ()
        auto = self.auto_excluded.get(st, ()) if self.auto_excluded else ()
        if key in self._expensive:
            skip = self._expensive[key]
            if skip is None:
                return ()
            exclude = set(exclude) | skip
        array_types = self._arrays
        out = []
        for i, (a, typ, _) in enumerate(inf.attrs):
            if include is not None and a not in include:
                continue
            if a in exclude or a in auto:
                continue
            if only is not None and a not in only:
                continue
            if array_types and typ.startswith("["):
                continue
            out.append(i)
        return tuple(out)
