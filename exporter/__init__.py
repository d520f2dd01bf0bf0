"""kafka-jmx-sidecar: how metrics leave a Kafka broker. The stages, in the order the data takes
them, each a package that imports only the ones before it: base, rule_engine, source, recompute,
reassignment, output, archive, http, config, poll, backfill, commands (docs/architecture.md)."""
__version__ = "0.1.0"
