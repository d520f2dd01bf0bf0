"""The production `Source`: a Kafka broker over JMX, read with as few RMI round trips as the
configuration allows.

- The ObjectName list is re-read on a slow clock (`sidecar.namesRefreshSeconds`), not every poll.
- Kafka's per-partition gauges whose values are small integers (the catalog says which: the 0/1
  health flags and the replica counts) are learned with a handful of server-side queries per
  family (`Value == 1`, ...) instead of one read per partition; every other MBean is read with
  one `getAttributes`. Both give the rule engine the same `MBean` values, so the samples are the
  same as if everything had been read.
"""
from __future__ import annotations

import dataclasses
import os
import re
import time
from typing import Any, Mapping

from exporter.collector import ReadResult, SourceError
from exporter.jmx import JmxClient, JmxError, JmxSettings
from exporter.model import MBean, ObjectName
from exporter.rules.config import Config
from exporter.rules.order import jmx_exporter_order
from exporter.settings import SidecarSettings
from mbeans import catalog

_ENV = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def _secret(value: Any) -> str:
    """`${NAME}` reads environment variable NAME, as jmx_exporter does for passwords."""
    text = "" if value is None else str(value)
    m = _ENV.match(text)
    return os.environ.get(m.group(1), "") if m else text


def _store(options: Mapping, key: str) -> tuple[str, str, str]:
    """keyStore/trustStore as `{filename, password, type}` (jmx_exporter) or a plain path."""
    v = options.get(key)
    if isinstance(v, Mapping):
        return str(v.get("filename", "")), _secret(v.get("password")), str(v.get("type", ""))
    return (str(v), _secret(options.get(key + "Password")), "") if v else ("", "", "")


def _object_name_text(key: tuple) -> str:
    domain, props = key
    return domain + ":" + ",".join(f"{k}={v}" for k, v in sorted(props))


def jmx_settings(config: Config, settings: SidecarSettings) -> JmxSettings:
    trust, trust_pw, trust_type = _store(config.ssl_options, "trustStore")
    key, key_pw, key_type = _store(config.ssl_options, "keyStore")
    as_list = lambda v: tuple(v) if isinstance(v, (list, tuple)) else ((str(v),) if v else ())  # noqa: E731
    return JmxSettings(
        jmx_url=config.jmx_url, username=config.username, password=config.password,
        ssl=config.ssl, trust_store=trust, trust_store_password=trust_pw, trust_store_type=trust_type,
        key_store=key, key_store_password=key_pw, key_store_type=key_type,
        ssl_protocols=as_list(config.ssl_options.get("protocols")),
        ssl_ciphers=as_list(config.ssl_options.get("ciphers")),
        include_object_names=tuple(p.text for p in config.include_object_names),
        exclude_object_names=tuple(p.text for p in config.exclude_object_names),
        include_object_name_attributes={_object_name_text(k): v for k, v in config.include_object_name_attributes.items()},
        exclude_object_name_attributes={_object_name_text(k): v for k, v in config.exclude_object_name_attributes.items()},
        auto_exclude_object_name_attributes=config.auto_exclude_object_name_attributes,
        connections=settings.connections,
        connect_timeout_seconds=settings.connect_timeout_seconds,
        read_timeout_seconds=settings.read_timeout_seconds,
    )


# Families read by query: (domain, type, name) -> the largest value worth a query of its own.
# Flags are 0/1; replica counts are at most the replication factor (values above are read).
_QUERIED = {(s.domain, s.type, s.name): (1 if s.name in ("UnderReplicated", "UnderMinIsr", "AtMinIsr") else 5)
            for s in catalog.PARTITION if s.name != "LastStableOffsetLag"}


def _family_of(name: ObjectName) -> tuple[str, str, str] | None:
    keys = name.keys
    if len(keys) == 4 and keys[0][0] == "type" and keys[1][0] == "name":
        family = (name.domain, keys[0][1], keys[1][1])
        if family in _QUERIED:
            return family
    return None


class JmxSource:
    def __init__(self, config: Config, settings: SidecarSettings, clock=time.monotonic):
        try:
            self.jmx = jmx_settings(config, settings)
            self.target = self.jmx.endpoint or "(no JMX target configured)"
            self.client = JmxClient(self.jmx)
        except JmxError as e:
            raise SourceError(str(e)) from e
        self.config = config
        self.settings = settings
        self.clock = clock
        self._listed_at: float | None = None
        self._plan: tuple[list[ObjectName], dict[tuple, list[ObjectName]]] | None = None
        self._templates: dict[tuple, MBean] = {}
        self._ordered: list[ObjectName] = []

    @property
    def connected(self) -> bool:
        return self.client.connected

    def close(self) -> None:
        self.client.close()

    def _names(self) -> list[ObjectName]:
        now = self.clock()
        if self._listed_at is None or now - self._listed_at >= self.settings.names_refresh_seconds:
            names = self.client.list_names()
            self._listed_at = now
            rest: list[ObjectName] = []
            families: dict[tuple, list[ObjectName]] = {}
            for n in names:
                f = _family_of(n)
                if f is not None and self.config.wants_attribute(n, "Value"):
                    families.setdefault(f, []).append(n)
                else:
                    rest.append(n)
            # A family of one or two is cheaper to read than to query.
            for f in [f for f, members in families.items() if len(members) < 8]:
                rest.extend(families.pop(f))
            self._plan = (rest, families)
            self._templates.clear()
            # jmx_exporter's visiting order: it decides a family's HELP and which duplicate wins
            self._ordered = jmx_exporter_order(names)
        return self._ordered

    def _template(self, family: tuple, member: ObjectName) -> MBean | None:
        """One real read per family and names refresh: the class name and attribute metadata a
        queried value is presented with."""
        t = self._templates.get(family)
        if t is None:
            read = self.client.read([member])
            if not read or read[0].class_name != catalog.Kind.GAUGE.class_name \
                    or [a.name for a in read[0].attributes] != ["Value"]:
                return None
            t = self._templates[family] = read[0]
        return t

    def read(self) -> ReadResult:
        try:
            return self._read()
        except JmxError as e:
            raise SourceError(str(e)) from e

    def _read(self) -> ReadResult:
        names = self._names()
        rest, families = self._plan  # type: ignore[misc]
        by_name: dict[ObjectName, MBean] = {}
        for family, members in families.items():
            template = self._template(family, members[0])
            if template is None:  # not shaped like Kafka's gauge: read it like any other
                rest = rest + members
                continue
            domain, type_, name = family
            values = self.client.small_int_values(f"{domain}:type={type_},name={name},*", "Value",
                                                  max_value=_QUERIED[family], implicit=0)
            attr = template.attributes[0]
            for member in members:
                if member in values:
                    by_name[member] = MBean(member, template.class_name,
                                            (dataclasses.replace(attr, value=values[member]),))
        if rest:
            for mb in self.client.read(rest):
                by_name[mb.name] = mb
        stats = self.client.take_stats()
        mbeans = [by_name[n] for n in names if n in by_name]
        return ReadResult(mbeans, stats.round_trips)
