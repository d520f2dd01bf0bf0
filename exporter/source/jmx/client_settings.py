"""What the JMX client needs to know, independent of the YAML that carried it.

The lead maps the rule engine's `Config` (jmx_exporter keys) and the `sidecar:` settings onto
`JmxSettings`; this package never imports exporter.rule_engine.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Collection, Mapping

from kafka_jmx_sidecar.exporter.source.jmx.errors import JmxConfigError

_RMI_URL = re.compile(r"^service:jmx:rmi://[^/]*/jndi/rmi://(\[[^\]]+\]|[^:/]+):(\d+)/")

# jmx_exporter (0.18+) skips these after reading them; we do not even read them: the values are
# large (the whole classpath, every system property) and never become samples.
EXPENSIVE_ATTRIBUTES: Mapping[str, frozenset[str] | None] = {
    "java.lang:type=Runtime": frozenset({"SystemProperties", "ClassPath", "BootClassPath", "LibraryPath"}),
    "jdk.management.jfr:type=FlightRecorder": None,  # None: every attribute
}

# MBean classes whose MBeanInfo is the same for every MBean of a family (Yammer metrics: a Gauge
# has `Value`, a Meter its 7 attributes, whatever the topic or partition).
SHARED_INFO_CLASSES = ("com.yammer.metrics.reporting.JmxReporter$",)


@dataclass(frozen=True)
class JmxSettings:
    # where
    host_port: str = ""                      # "host:port" (jmx_exporter hostPort)
    jmx_url: str = ""                        # or a full service:jmx:rmi URL (jmxUrl)
    username: str = ""
    password: str = field(default="", repr=False)
    # SSL: the RMI registry and the RMI server both over SSL (jmxremote.registry.ssl on the broker)
    ssl: bool = False
    trust_store: str = ""                    # -Djavax.net.ssl.trustStore at JVM start
    trust_store_password: str = field(default="", repr=False)
    trust_store_type: str = ""
    key_store: str = ""                      # client certificate (jmxremote.ssl.need.client.auth)
    key_store_password: str = field(default="", repr=False)
    key_store_type: str = ""
    ssl_protocols: tuple[str, ...] = ()      # javax.rmi.ssl.client.enabledProtocols
    ssl_ciphers: tuple[str, ...] = ()        # javax.rmi.ssl.client.enabledCipherSuites
    # what (JMX ObjectName patterns; exclusion wins; the legacy keys are mapped by the caller)
    include_object_names: tuple[str, ...] = ("*:*",)
    exclude_object_names: tuple[str, ...] = ()
    # exact ObjectName (any key order) -> attribute names
    include_object_name_attributes: Mapping[str, Collection[str]] = field(default_factory=dict)
    exclude_object_name_attributes: Mapping[str, Collection[str]] = field(default_factory=dict)
    auto_exclude_object_name_attributes: bool = True
    skip_expensive_attributes: bool = True
    # how
    connections: int = 1                     # the sidecar's default: config/sidecar.py
    # a broker with fewer MBeans is read on one connection, one call at a time, as jmx_exporter
    # reads it: its poll is short anyway, and the broker's own gauges of its threads and
    # connections (java.lang:type=Threading) then read as they read to jmx_exporter
    parallel_from: int = 10_000
    connect_timeout_seconds: float = 10.0
    read_timeout_seconds: float = 30.0
    reconnect_min_seconds: float = 1.0
    reconnect_max_seconds: float = 60.0
    family_keys: tuple[str, ...] = ("topic", "partition")
    shared_info_classes: tuple[str, ...] = SHARED_INFO_CLASSES
    engine: str = "auto"                     # "java" (compiled helper), "jpype" (no compiler), "auto"
    jvm_options: tuple[str, ...] = ()        # extra options for the in-process JVM (-Xmx...)
    helper_cache_dir: str = ""               # where the compiled helper goes (default: user cache)

    def __post_init__(self) -> None:
        if self.host_port and self.jmx_url:
            raise JmxConfigError("both hostPort and jmxUrl are set: keep only one of them")
        if self.connections < 1:
            raise JmxConfigError(f"connections must be at least 1, not {self.connections}")
        if self.connect_timeout_seconds <= 0 or self.read_timeout_seconds <= 0:
            raise JmxConfigError("connect and read timeouts must be positive numbers of seconds")
        if self.engine not in ("auto", "java", "jpype"):
            raise JmxConfigError(f"engine must be auto, java or jpype, not {self.engine!r}")
        self.endpoint  # validates the URL

    @property
    def url(self) -> str:
        if self.jmx_url:
            return self.jmx_url
        if self.host_port:
            return f"service:jmx:rmi:///jndi/rmi://{self.host_port}/jmxrmi"
        raise JmxConfigError("no JMX target: set hostPort (host:port) or jmxUrl "
                             "(service:jmx:rmi:///jndi/rmi://HOST:PORT/jmxrmi)")

    @property
    def endpoint(self) -> str:
        """host:port of the RMI registry, for messages ("" when no target is set)."""
        if self.host_port:
            host, sep, port = self.host_port.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise JmxConfigError(f"hostPort {self.host_port!r} is not host:port (e.g. localhost:9999)")
            return self.host_port
        if self.jmx_url:
            m = _RMI_URL.match(self.jmx_url)
            if m:
                return f"{m.group(1)}:{m.group(2)}"
            if not self.jmx_url.startswith("service:jmx:"):
                raise JmxConfigError(f"jmxUrl {self.jmx_url!r} is not a JMX service URL: write "
                                     "service:jmx:rmi:///jndi/rmi://HOST:PORT/jmxrmi (or use hostPort)")
            return self.jmx_url  # another form (e.g. service:jmx:rmi://host/stub/...): name it whole
        return ""

    @property
    def host(self) -> str:
        return self.endpoint.rpartition(":")[0].strip("[]")

    def jvm_properties(self) -> dict[str, str]:
        """System properties the in-process JVM must start with (they are read once per JVM)."""
        props = {
            # socket read timeout on an established RMI connection while waiting for a reply
            "sun.rmi.transport.tcp.responseTimeout": str(int(self.read_timeout_seconds * 1000)),
            # the JRMP handshake on a new connection (a paused JVM accepts TCP but never answers)
            "sun.rmi.transport.tcp.handshakeTimeout": str(int(self.connect_timeout_seconds * 1000)),
        }
        for key, value in (("javax.net.ssl.trustStore", self.trust_store),
                           ("javax.net.ssl.trustStorePassword", self.trust_store_password),
                           ("javax.net.ssl.trustStoreType", self.trust_store_type),
                           ("javax.net.ssl.keyStore", self.key_store),
                           ("javax.net.ssl.keyStorePassword", self.key_store_password),
                           ("javax.net.ssl.keyStoreType", self.key_store_type),
                           ("javax.rmi.ssl.client.enabledProtocols", ",".join(self.ssl_protocols)),
                           ("javax.rmi.ssl.client.enabledCipherSuites", ",".join(self.ssl_ciphers))):
            if value:
                props[key] = value
        return props
