"""Stage 2, the recompute: the health MBeans a broker lacks or reports with older semantics,
recomputed from what the source read, before the rules see them (`sidecar.recompute`).

    settings.py   RecomputeSettings: the profile, the mode, min ISR from the configuration
    stage.py      Recompute: a poll's MBeans in, the same MBeans with the recomputed ones out

May import: base, rule_engine, source, mbeans.
"""
