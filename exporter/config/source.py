"""What the poll sources are handed: the JMX client's settings and the broker source's, made from
the jmx_exporter keys (target, credentials, TLS, filters) and the `sidecar:` keys that bear on
reading (connections, timeouts, the JVM, naming, names refresh, what the later stages need)."""
from __future__ import annotations

from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings, jvm_start_options
from kafka_jmx_sidecar.exporter.rule_engine.config import Config
from kafka_jmx_sidecar.exporter.source.broker import BrokerSettings
from kafka_jmx_sidecar.exporter.source.jmx import JmxSettings


def _object_name_text(key: tuple) -> str:
    domain, props = key
    return domain + ":" + ",".join(f"{k}={v}" for k, v in sorted(props))


def jvm_options(settings: SidecarSettings) -> tuple[str, ...]:
    """The options the settings ask for (`jvm_start_options`); none when this process already runs
    a JVM (e.g. in tests) and neither `jvmOptions` nor `jvmMaxHeap` is given: it keeps the options
    it was started with."""
    import jpype

    if settings.jvm_options is None and settings.jvm_max_heap is None and jpype.isJVMStarted():
        return ()
    return jvm_start_options(settings)


def jmx_settings(config: Config, settings: SidecarSettings) -> JmxSettings:
    trust, key = config.trust_store, config.key_store
    as_list = lambda v: tuple(v) if isinstance(v, (list, tuple)) else ((str(v),) if v else ())  # noqa: E731
    return JmxSettings(
        jmx_url=config.jmx_url, username=config.username, password=config.password,
        ssl=config.ssl, trust_store=trust.filename, trust_store_password=trust.password, trust_store_type=trust.type,
        key_store=key.filename, key_store_password=key.password, key_store_type=key.type,
        ssl_protocols=as_list(config.ssl_options.get("protocols")),
        ssl_ciphers=as_list(config.ssl_options.get("ciphers")),
        include_object_names=tuple(p.text for p in config.include_object_names),
        exclude_object_names=tuple(p.text for p in config.exclude_object_names),
        # a key of jmx_exporter 1.x: 0.20.0 does not know it, so 0.x naming ignores it
        include_object_name_attributes={_object_name_text(k): v for k, v in config.include_object_name_attributes.items()}
        if settings.naming == "1.x" else {},
        exclude_object_name_attributes={_object_name_text(k): v for k, v in config.exclude_object_name_attributes.items()},
        auto_exclude_object_name_attributes=config.auto_exclude_object_name_attributes,
        connections=settings.connections,
        connect_timeout_seconds=settings.connect_timeout_seconds,
        read_timeout_seconds=settings.read_timeout_seconds,
        jvm_options=jvm_options(settings),
    )


def broker_settings(config: Config, settings: SidecarSettings) -> BrokerSettings:
    """The broker source's settings for the rules `config` (a reload hands a new one)."""
    recompute = settings.recompute
    return BrokerSettings(
        jmx=jmx_settings(config, settings),
        naming=settings.naming,
        names_refresh_seconds=settings.names_refresh_seconds,
        # the release and per-partition counts: the recompute's inputs, and what the archive keeps
        partition_counts=(recompute is not None and recompute.enabled) or settings.archive is not None,
        reassignment=settings.reassignment is not None,
    )
