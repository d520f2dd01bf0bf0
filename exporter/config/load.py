"""The configuration file as a whole, read once: the jmx_exporter keys (the rules' `Config`), the
`sidecar:` key (`SidecarSettings`, each feature's part parsed beside the feature), and the security
of `/metrics` (a web-config file or jmx_exporter 1.x's `httpServer:` block). Start, `check-config`
and every reload go through `load`, so a file one refuses the others refuse too."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings, require_same_mode, require_source, sidecar_settings
from kafka_jmx_sidecar.exporter.config.source import broker_settings
from kafka_jmx_sidecar.exporter.http.server_block import read_http_server_block
from kafka_jmx_sidecar.exporter.http.web_config import WebConfig, load_web_config
from kafka_jmx_sidecar.exporter.rule_engine.config import Config, load_config
from kafka_jmx_sidecar.exporter.source.protocol import Source


@dataclass
class Loaded:
    config: Config  # the jmx_exporter keys: target, filters, rules
    settings: SidecarSettings  # the `sidecar:` key
    web: WebConfig  # TLS and basic auth of /metrics

    def source_factory(self) -> Callable[[Config], Source]:
        """The poll source for a rules `Config` (a reload hands a new one): the cluster-wide view
        from the Admin API, or one broker over JMX."""
        settings = self.settings
        if settings.cluster:
            from kafka_jmx_sidecar.exporter.source.cluster import ClusterSource

            return lambda config: ClusterSource(config, settings)
        from kafka_jmx_sidecar.exporter.source.broker import JmxSource

        return lambda config: JmxSource(config, broker_settings(config, settings))


def load(config_path: str, overrides: dict | None = None) -> Loaded:
    """Everything a sidecar reads before it starts; ConfigError names file, line and key."""
    config = load_config(config_path)
    settings = sidecar_settings(config, overrides)  # first: sidecar.mode says what must be read
    require_source(config)
    web = load_web_config(settings.web_config_file)
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
    return Loaded(config, settings, web)


def reload(config_path: str, mode: str) -> Config:
    """The rules of a changed file, checked as `load` checks a file at start; the mode the sidecar
    runs in cannot change (it decides what is read)."""
    return require_same_mode(load(config_path).config, mode)
