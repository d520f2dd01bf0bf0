"""Seeded, bounded property test: for random MBeans (tests/real/RandomBeans.java) and random rule
files (tests/real/random_rules.py), `scrape` prints byte for byte what the real jmx_exporter
prints: 0.x naming against jmx_exporter 0.20.0, 1.x naming against 1.6.0, in the text format
0.0.4 and in OpenMetrics. jmx_exporter's own `jmx_*` metrics are dropped from its output first.
Where jmx_exporter refuses a file the sidecar must refuse it too, and where it fails a scrape
(1.x: HTTP 500) the sidecar's scrape must fail (tests/real/side_by_side.py).

Bounded: one JVM of MBeans and one JVM per jmx_exporter release for all cases (conftest.py's
`random_beans` and `current_jmx_exporters`; each case gets a freshly built collector, registry and
HTTP server), the sidecar polled in this process. Deterministic: fixed seeds, and MBeans whose values never change. A
failure names the case, prints its configuration and the lines only one side printed (or, when
both printed the same lines, where the order differs).

jmx_exporter runs on a JDK 19+ (`current_java`): the sidecar prints values as `Double.toString`
does since JDK 19.
"""
from __future__ import annotations

import random

import pytest

from tests.real.random_rules import random_config
from tests.real.side_by_side import dump, side_by_side

CASES = 40


@pytest.mark.parametrize("case", range(CASES))
def test_scrape_prints_what_jmx_exporter_prints(case, random_beans, current_jmx_exporters):
    beans = random_beans
    config = random_config(random.Random(case), beans.heads)
    failures = []
    for naming, exporter in current_jmx_exporters.items():
        for openmetrics in (False, True):
            outcome = side_by_side(exporter, beans.host_port, config, naming, openmetrics, serve=not openmetrics)
            if not outcome.same:
                failures.append(outcome.explain())
    assert not failures, (f"case {case} (rules from random.Random({case}), MBeans from RandomBeans {beans.seed}):\n"
                          f"{dump(config)}\n" + "\n".join(failures))
