"""Stage 3 (after the rules), the reassignment series: traffic and progress of partition
reassignments, from the broker's meters and the Admin API (`sidecar.reassignment`).

    settings.py   ReassignmentSettings
    stage.py      the reassignment families added to a poll's families

May import: base, rule_engine, source, recompute, mbeans.
"""
