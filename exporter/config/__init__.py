"""The configuration file as a whole: a jmx_exporter file with the sidecar's own `sidecar:` key.

    sidecar.py    SidecarSettings: the `sidecar:` key, each feature's part parsed by the feature's
                  own settings module (recompute, reassignment, source.admin, archive)

May import: every stage below it (base, rule_engine, source, recompute, reassignment, output,
archive), for their settings; never poll, http, backfill or commands.
"""
