"""The command line's conventions shared with Prometheus exporters: `--version`, and the
`--web.*`/`--log.*` flag names with the first spellings kept as aliases."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.commands.cli import build_parser

REPO = Path(__file__).resolve().parents[2]


def test_version_prints_the_packaged_version_and_exits_0():
    run = subprocess.run([sys.executable, "-m", "kafka_jmx_sidecar.exporter.commands.cli", "--version"],
                         capture_output=True, text=True, timeout=60)
    packaged = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"kafka-jmx-sidecar {packaged}\n"


@pytest.mark.parametrize("spelling", [["--web.listen-address", "0.0.0.0:9404"], ["--listen", "0.0.0.0:9404"]])
def test_the_listen_address_takes_both_spellings(spelling):
    args = build_parser().parse_args(["serve", "--config", "c.yml", *spelling])
    assert args.listen == "0.0.0.0:9404"


@pytest.mark.parametrize("spelling", ["--log.level", "--log-level"])
def test_the_log_level_takes_both_spellings(spelling):
    args = build_parser().parse_args(["serve", "--config", "c.yml", spelling, "debug"])
    assert args.log_level == "debug"


def test_an_unknown_log_level_is_refused():
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["serve", "--config", "c.yml", "--log.level", "verbose"])
    assert e.value.code == 2
