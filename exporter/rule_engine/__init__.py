"""jmx_exporter-compatible rules: load a rule file, turn MBeans into samples.

    config = load_config("kafka-metrics.yml")
    engine = RuleEngine(config)                       # naming="1.x" for OpenMetrics-style names
    families = engine.series(mbeans, ranks, tables)   # one call per poll, as the collector makes it
    samples = engine.samples(mbeans)                  # the same poll as samples (the reference path)

It sits low, right after base: the jmx_exporter file it reads also says what the source reads
(include/exclude patterns, attribute filters) and in which order jmx_exporter visits the names
(order.py). May import: base, mbeans.
"""
from kafka_jmx_sidecar.exporter.rule_engine.config import Config, Rule, load_config, parse_config
from kafka_jmx_sidecar.exporter.rule_engine.engine import EngineStats, RuleEngine
from kafka_jmx_sidecar.exporter.rule_engine.leaves import Leaf, leaves
from kafka_jmx_sidecar.exporter.rule_engine.naming import openmetrics_name, safe_name, snake_case
from kafka_jmx_sidecar.exporter.rule_engine.object_name_pattern import ObjectNamePattern
from kafka_jmx_sidecar.exporter.rule_engine.template import Template
from kafka_jmx_sidecar.exporter.rule_engine.value_blindness import value_blind

__all__ = [
    "Config", "EngineStats", "Leaf", "ObjectNamePattern", "Rule", "RuleEngine", "Template",
    "leaves", "load_config", "openmetrics_name", "parse_config", "safe_name", "snake_case", "value_blind",
]
