"""The sidecar and the real jmx_exporter on the same configuration file, side by side: what the
property test (test_property_vs_jmx_exporter.py) and the named examples
(test_examples_vs_jmx_exporter.py) share.

    outcome = side_by_side(exporter, beans.host_port, config, "1.x", openmetrics=True)
    assert outcome.same, outcome.explain()

`exporter` is a started PerConfigExporter; `config` a dict of jmx_exporter settings (no hostPort).
Both sides get the same file, the sidecar's with `sidecar: {naming: ...}` added. The outcome is
equal when both print the same bytes (jmx_exporter's own `jmx_*` metrics dropped from its side),
both refuse the file, or both fail the scrape.
"""
from __future__ import annotations

import io
import logging
import re
import tempfile
import urllib.error
from collections import Counter
from dataclasses import dataclass
from difflib import unified_diff
from pathlib import Path

import yaml

from kafka_jmx_sidecar.exporter.commands import serve as sidecar
from tests.real.per_config_exporter import PerConfigExporter


def dump(config: dict) -> str:
    return yaml.safe_dump(config, allow_unicode=True, sort_keys=False, width=1 << 20)


def strip_self_metrics(text: str) -> str:
    """jmx_exporter's exposition without its own `jmx_*` families."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not (line.startswith("jmx_") or re.match(r"# (HELP|TYPE|UNIT) jmx_", line)))


def describe_difference(ours: str, theirs: str, limit: int = 25) -> str:
    """What differs, readably: the lines only one side printed; or, when both printed the same
    lines, the first places where their order differs."""
    a, b = ours.splitlines(), theirs.splitlines()
    ca, cb = Counter(a), Counter(b)
    if ca != cb:
        missing, extra = sorted((cb - ca).elements()), sorted((ca - cb).elements())
        out = [f"{len(missing)} line(s) only jmx_exporter printed, {len(extra)} only the sidecar printed:"]
        out += [f"  jmx_exporter: {line}" for line in missing[:limit]]
        out += [f"  sidecar:      {line}" for line in extra[:limit]]
        return "\n".join(out)
    diff = list(unified_diff(b, a, "jmx_exporter", "sidecar", n=1, lineterm=""))
    return "the same lines in another order:\n" + "\n".join(diff[:3 * limit])


def scrape(config: Path, openmetrics: bool) -> tuple[int, str]:
    """`kafka-jmx-sidecar scrape --config FILE [--openmetrics]`, run in this process: its exit
    code, and what it printed (stderr when it failed)."""
    out, err = io.BytesIO(), io.StringIO()
    try:
        code = sidecar.scrape(str(config), openmetrics, out=out, err=err)
    finally:
        logging.disable(logging.NOTSET)  # scrape silences logging for its one-line contract
    return code, out.getvalue().decode("utf-8") if code == 0 else err.getvalue()


@dataclass
class Outcome:
    what: str
    theirs: str  # jmx_exporter's exposition (self metrics dropped), or why it gave none
    ours: str  # the sidecar's, or its error
    problem: str | None  # None: the same

    @property
    def same(self) -> bool:
        return self.problem is None

    def explain(self) -> str:
        return f"--- {self.what}: {self.problem}"


def side_by_side(exporter: PerConfigExporter, host_port: str, config: dict, naming: str,
                 openmetrics: bool, serve: bool = True) -> Outcome:
    """One scrape of each side for `config` (`serve=False`: jmx_exporter already serves it)."""
    what = f"{naming} vs jmx_exporter {exporter.release}, {'OpenMetrics' if openmetrics else 'text 0.0.4'}"
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as d:
        theirs_file, ours_file = Path(d, "jmx_exporter.yml"), Path(d, "sidecar.yml")
        theirs_file.write_text(dump({"hostPort": host_port, **config}), encoding="utf-8")
        ours_file.write_text(dump({"hostPort": host_port, **config, "sidecar": {"naming": naming}}), encoding="utf-8")
        refused = exporter.serve(theirs_file) if serve else exporter.refused
        code, ours = scrape(ours_file, openmetrics)
    if refused:  # jmx_exporter refuses the file at start-up: so must we
        return Outcome(what, f"refused: {refused}", ours, None if code == 2 else
                       f"jmx_exporter refuses the file ({refused}), the sidecar exits {code}")
    try:
        theirs_raw = exporter.scrape(openmetrics)
    except urllib.error.HTTPError as e:  # jmx_exporter 1.x fails a scrape it cannot write
        body = e.read().decode("utf-8", "replace").splitlines()
        why = f"HTTP {e.code}: {body[0] if body else ''}"
        return Outcome(what, why, ours, None if code == 1 else f"jmx_exporter answers {why}, the sidecar exits {code}")
    # (1.x reports the previous scrape's error: a second read checks the first)
    if not re.search(r"^jmx_scrape_error 0\.0$", theirs_raw, re.M):
        raise AssertionError(f"jmx_exporter {exporter.release} failed to scrape; the comparison proves nothing:\n"
                             f"{theirs_raw[:2000]}")
    theirs = strip_self_metrics(theirs_raw)
    if code != 0:
        return Outcome(what, theirs, ours, f"the sidecar exits {code}: {ours.strip()}")
    return Outcome(what, theirs, ours, None if ours == theirs else "\n" + describe_difference(ours, theirs))
