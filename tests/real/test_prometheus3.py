"""Prometheus 3 as harness/programs.py builds it from the Go module proxy: the version it says it
is, both commands, and a build that fails naming the version and Go's error."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from harness import programs


@pytest.mark.parametrize("command", ["prometheus", "promtool"])
def test_the_build_is_the_pinned_release(command):
    out = subprocess.run([str(programs.binary("prometheus-3", command)), "--version"], capture_output=True,
                         text=True, check=True, timeout=60)
    assert (out.stdout + out.stderr).startswith(f"{command}, version 3.16.0 ")


def test_a_failed_build_names_program_version_and_go_error(tmp_path, monkeypatch):
    specs = tmp_path / "programs"
    shutil.copytree(programs.POMS / "prometheus-3", specs / "prometheus-3")
    spec = specs / "prometheus-3" / "go-build.yml"
    spec.write_text(spec.read_text().replace("version: v0.316.0", "version: v0.399.0"))
    monkeypatch.setattr(programs, "POMS", specs)
    monkeypatch.setenv("KAFKA_JMX_SIDECAR_CACHE", str(tmp_path / "cache"))
    with pytest.raises(programs.ProgramUnavailable) as failure:
        programs.binary("prometheus-3", "prometheus")
    message = str(failure.value)
    assert "\n" not in message
    assert message.startswith("Prometheus 3.16.0 (github.com/prometheus/prometheus@v0.399.0): Go could not build it: ")
    assert "v0.399.0" in message.partition("build it: ")[2]  # Go's own words name it too
    assert not list((tmp_path / "cache" / "programs").iterdir()), "a failed build left files behind"
