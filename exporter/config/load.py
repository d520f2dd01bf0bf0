"""The configuration file as a whole, read once: the jmx_exporter keys (the rules' `Config`), the
`sidecar:` key (`SidecarSettings`, each feature's part parsed beside the feature), and the security
of `/metrics` (a web-config file or jmx_exporter 1.x's `httpServer:` block). Start, `check-config`
and every reload go through `load`, so a file one refuses the others refuse too.

The `openTelemetry:` push is read here too (exporter/otlp/settings.py), for `serve` to start.

The poll sources are handed settings of their own, made here from the jmx_exporter keys (target,
credentials, TLS, filters) and the `sidecar:` keys that bear on reading (`broker_settings`)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile, Problems
from kafka_jmx_sidecar.exporter.config.sidecar import (SidecarSettings, jvm_start_options, require_same_mode,
                                                      require_source, sidecar_settings)
from kafka_jmx_sidecar.exporter.http.server_block import read_http_server_block
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig, load_web_config
from kafka_jmx_sidecar.exporter.otlp.settings import OtlpSettings, otlp_settings
from kafka_jmx_sidecar.exporter.rule_engine.config import Config, load_config
from kafka_jmx_sidecar.exporter.source.broker import BrokerSettings
from kafka_jmx_sidecar.exporter.source.jmx import JmxSettings
from kafka_jmx_sidecar.exporter.source.protocol import Source


@dataclass
class Loaded:
    config: Config  # the jmx_exporter keys: target, filters, rules
    settings: SidecarSettings  # the `sidecar:` key
    web: WebConfig  # TLS and basic auth of /metrics
    otlp: OtlpSettings | None = None  # the `openTelemetry:` push (None: none)

    def source_factory(self) -> Callable[[Config, SidecarSettings], Source]:
        """The poll source for a rules `Config` and the settings in force (a reload hands new ones):
        the cluster-wide view from the Admin API, or one broker over JMX."""
        if self.settings.cluster:
            from kafka_jmx_sidecar.exporter.source.cluster import ClusterSource

            return lambda config, settings: ClusterSource(config, settings)
        from kafka_jmx_sidecar.exporter.source.broker import JmxSource

        return lambda config, settings: JmxSource(config, broker_settings(config, settings))


def load(config_path: str, overrides: dict | None = None) -> Loaded:
    """Everything a sidecar reads before it starts; ConfigError names file, line and key."""
    problems = Problems()  # the rules, the sidecar: key and the web-config file: every error in one run
    config = problems.check(load_config, config_path)
    rules_ok = config is not None
    if not rules_ok:
        try:
            config = Config(file=ConfigFile.read(config_path))
        except ConfigError:  # unreadable, or not YAML: said once above, nothing more to check
            problems.raise_any()
    settings = problems.check(sidecar_settings, config, overrides)  # first: sidecar.mode says what must be read
    if rules_ok and settings is not None:  # what must be read depends on sidecar.mode
        problems.check(require_source, config)
    web_file = settings.web_config_file if settings is not None else (overrides or {}).get("web_config_file")
    web = problems.check(load_web_config, web_file) if settings is not None or web_file else None
    otlp = problems.check(otlp_settings, config.file)
    problems.raise_any()
    block, warnings, mistakes = read_http_server_block(config.file)
    if warnings:
        config = dataclasses.replace(config, warnings=config.warnings + tuple(warnings),
                                     mistakes=config.mistakes + tuple(mistakes))
    if block is not None:
        if web.source:
            # Two sources of the endpoint's security would leave one silently unused: refuse.
            raise config.file.error(
                ("httpServer",), f"TLS or basic auth is configured both here and in the web config file {web.source}",
                "keep one: this httpServer block (jmx_exporter's format) or the web config file "
                "(sidecar.webConfigFile / --web.config.file, the Prometheus exporter-toolkit format)")
        web = block
    return Loaded(config, settings, web, otlp)


def reload(config_path: str, mode: str, overrides: dict | None = None) -> Loaded:
    """A changed file, checked as `load` checks a file at start, with the same command-line
    `overrides` (they win at every reload too); the mode the sidecar runs in cannot change (it
    decides what is read). Which of its settings apply at once: exporter/poll/reload.py."""
    loaded = load(config_path, overrides)
    require_same_mode(loaded.config, mode)
    return loaded


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
