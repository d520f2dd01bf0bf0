"""The README's systemd unit (the quick start on a VM) is one systemd takes, as hardened as it says,
and its command lines are ones the sidecar's command line takes, naming what the install steps
beside it make: `systemd-analyze verify` and `systemd-analyze security --offline` on the unit as
written (its executable pointed at this environment's), the parser on its command lines."""
from __future__ import annotations

import configparser
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.commands.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"
EXECUTABLE = "/opt/kafka-jmx-sidecar/bin/kafka-jmx-sidecar"
MAX_EXPOSURE = 2.0  # systemd-analyze security's scale: 0 (locked down) to 10 (unprotected)


def _block(lang: str, containing: str) -> str:
    [found] = [body for kind, body in re.findall(r"^```(\w*)\n(.*?)^```$", README.read_text(encoding="utf-8"), re.S | re.M)
               if kind == lang and containing in body]
    return found


UNIT = _block("ini", "[Service]")
INSTALL = _block("sh", "systemctl enable")


def _service() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string(UNIT)
    return parser["Service"]


@pytest.fixture
def unit_file(tmp_path) -> Path:
    here = Path(sys.executable).with_name("kafka-jmx-sidecar")
    assert here.exists()
    path = tmp_path / "kafka-jmx-sidecar.service"
    path.write_text(UNIT.replace(EXECUTABLE, str(here)))
    return path


def test_systemd_analyze_verify_takes_the_unit_without_a_word(unit_file):
    result = subprocess.run(["systemd-analyze", "verify", str(unit_file)], capture_output=True, text=True)
    assert (result.returncode, result.stdout + result.stderr) == (0, ""), result.stdout + result.stderr


def test_the_unit_is_hardened(unit_file):
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(unit_file)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    exposure = float(re.search(r"Overall exposure level for \S+: ([\d.]+)", result.stdout).group(1))
    assert exposure <= MAX_EXPOSURE, result.stdout
    service = _service()
    assert service["User"] not in ("root", "0") and "DynamicUser" not in service
    assert service["NoNewPrivileges"] == "yes" and service["CapabilityBoundingSet"] == ""
    assert service["ProtectSystem"] == "strict"
    assert "MemoryDenyWriteExecute" not in service  # the JVM's compiler writes code it then runs


def test_its_command_lines_are_the_sidecars_and_name_what_the_install_steps_make():
    service = _service()
    start, check = shlex.split(service["ExecStart"]), shlex.split(service["ExecStartPre"])
    assert start[0] == check[0] == EXECUTABLE
    assert "install /opt/kafka-jmx-sidecar " in INSTALL  # the environment whose bin/ holds it
    serve, checked = build_parser().parse_args(start[1:]), build_parser().parse_args(check[1:])
    assert (serve.command, checked.command) == ("serve", "check-config")
    assert serve.config == checked.file
    assert f"sidecar.yml {serve.config}" in INSTALL
    assert re.search(rf"useradd .*\b{service['User']}$", INSTALL, re.M)
    assert f"-g {service['Group']} " in INSTALL
    name, _, helper = service["Environment"].partition("=")
    assert name == "KAFKA_JMX_SIDECAR_CACHE"  # where the JMX helper was compiled, read-only
    assert f"compile-helper /opt/kafka-jmx-sidecar {helper}" in INSTALL
    assert f"/dev/null {service['EnvironmentFile']}" in INSTALL and "install -m 0600" in INSTALL
