"""The archive (`sidecar.archive`): what each poll of `serve` knew, on disk, so the backfill can
recompute every health series later with the same formulas and rules.

    format.py     the records, their one encoding and the blocks' checksums (docs/archive-format.md)
    reader.py     typed records, complete polls, and the state known at any time (pure)
    damage.py     what the reader could not use: rejects by reason, damaged spans located
    writer.py     hourly files, keyframe + changes, append-safe, with retention (driven by the poll)
    encoder.py    a poll as a keyframe or as its changes; retention.py, settings.py

May import: base, rule_engine, source (a poll's read and the Admin API's view), recompute,
reassignment, output, mbeans; the poll hands it each poll, the backfill reads it.
"""
