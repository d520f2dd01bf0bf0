"""The configuration file as a whole: a jmx_exporter file with the sidecar's own `sidecar:` key.

    load.py       `load`: the file read once (start, check-config and every reload), and the
                  settings each poll source is handed (`broker_settings`, `jmx_settings`)
    sidecar.py    SidecarSettings: the `sidecar:` key, each feature's part parsed by the feature's
                  own settings module (recompute, reassignment, source/admin, archive), all in one
                  shape: `xxx_settings(raw, error)`, errors as `file:line: key: what to fix`;
                  SIDECAR: its keys' definitions (exporter/base/definitions.py)
    reference.py  docs/configuration.md, docs/metrics.md and the JSON Schemas, generated from the
                  definitions and the declared metric families (`make docs`)

May import: the stages before it (base, rule_engine, source, recompute, reassignment, output,
archive, http), for their settings and declarations; never poll, backfill or commands.
"""
