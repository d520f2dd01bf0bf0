"""The text writers: families -> the bytes Prometheus reads.

    exposition.py    text format 0.0.4 and OpenMetrics 1.0, as jmx_exporter 0.x and 1.x write them;
                     the format names (TEXT, OPENMETRICS)
    self_metrics.py  the sidecar's own metrics (jmx_exporter's and its own), rendered per request

May import: base, rule_engine, source, recompute, reassignment, mbeans.
"""
