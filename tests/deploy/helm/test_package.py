"""The chart's archive, as `make dist` makes it (scripts/package-chart: Helm's own `helm package`,
through the Helm SDK the other chart tests render with): named for the chart's version, holding
the chart less what .helmignore leaves out, and rendering as the chart's folder does."""
from __future__ import annotations

import fnmatch
import subprocess
import sys
import tarfile
import tomllib

import pytest
import yaml

from tests.deploy.helm.chart import CHART, REPO, ci_values, render_files

PROJECT_VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    dest = tmp_path_factory.mktemp("chart")
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "package-chart"), str(dest)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (made,) = dest.iterdir()
    assert r.stdout == f"{made}\n"
    return made


def helmignored(relative: str) -> bool:
    """.helmignore's patterns as this chart writes them: folders (`ci/`) and file globs."""
    patterns = [p.strip() for p in (CHART / ".helmignore").read_text().splitlines()
                if p.strip() and not p.startswith("#")]
    return any(relative.startswith(p) if p.endswith("/") else fnmatch.fnmatch(relative, p) for p in patterns)


def test_the_archive_holds_the_chart_less_what_helmignore_leaves_out(archive):
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert archive.name == f"{chart['name']}-{chart['version']}.tgz"
    with tarfile.open(archive) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    packaged = yaml.safe_load(files[f"{chart['name']}/Chart.yaml"])
    assert (packaged["version"], packaged["appVersion"]) == (chart["version"], chart["appVersion"])
    # the chart deploys the images of the release it is packaged with
    assert packaged["appVersion"] == PROJECT_VERSION
    source = {str(p.relative_to(CHART)) for p in CHART.rglob("*") if p.is_file()}
    expected = {f"{chart['name']}/{f}" for f in source if not helmignored(f)}
    assert set(files) == expected, sorted(set(files) ^ expected)
    assert files[f"{chart['name']}/values.schema.json"] == (CHART / "values.schema.json").read_bytes()
    for folder in ("templates", "files"):
        assert {f for f in files if f.startswith(f"{chart['name']}/{folder}/")}, folder
    assert not any("/ci/" in f or "/examples/" in f for f in files)  # what .helmignore says, seen


@pytest.mark.parametrize("values_file", sorted(ci_values()))
def test_the_archive_renders_as_the_chart_folder(archive, values_file):
    values = ci_values()[values_file]
    assert render_files(values, chart=archive) == render_files(values)
