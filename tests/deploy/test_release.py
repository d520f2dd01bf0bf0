"""The release a user installs, as `make dist` makes it: the sdist holds the source tree (so it
rebuilds the wheel, runs the tests, builds the images and the chart), the wheel built from it holds
the package and its data beneath kafka_jmx_sidecar, and the sdist installed by pip into a fresh
virtual environment gives a working command. The wheel's install is tested where the image's
environment is installed from the wheel the image builds, which holds the release wheel's files to
the byte (tests/deploy/docker/test_image.py)."""
from __future__ import annotations

import tarfile
import tomllib
import zipfile

from tests.deploy.release import REPO, VERSION, check_the_installed_command, fresh_venv

NOT_SHIPPED = (".ci/",)  # the repository's CI entry point: a release's source needs none
# the folders of the source tree the wheel installs, and where beneath kafka_jmx_sidecar (pyproject.toml)
PACKAGE_DIRS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
INSTALLED_FROM = {"kafka_jmx_sidecar/": "kafka_jmx_sidecar/",
                  **{f"{folder}/": package.replace(".", "/") + "/" for package, folder in PACKAGE_DIRS.items()}}


def test_the_sdist_is_the_source_tree(release):
    top = f"kafka_jmx_sidecar-{VERSION}/"
    with tarfile.open(release.sdist) as sdist:
        members = [m.name for m in sdist.getmembers() if m.isfile()]
    assert all(m.startswith(top) for m in members), members[:5]
    names = {m[len(top):] for m in members}
    generated = {"PKG-INFO", "setup.cfg"} | {n for n in names if n.startswith("kafka_jmx_sidecar.egg-info/")}
    source = {f for f in release.files if not f.startswith(NOT_SHIPPED)}
    assert names - generated == source, (f"in the sdist only: {sorted(names - generated - source)}; "
                                         f"in the source only (MANIFEST.in; .gitignore for a file not the project's): {sorted(source - names)}")
    # named, so that a rule above going wrong cannot pass on an empty sdist
    assert {"pyproject.toml", "MANIFEST.in", "README.md", "LICENSE", "docs/development.md", "tests/test_layers.py",
            "harness/programs.py", "helm/kafka-jmx-sidecar/Chart.yaml", "scripts/image/constraints.txt",
            "Dockerfile", "exporter/source/jmx/SidecarJmx.java"} <= names


def test_the_wheel_built_from_the_sdist_holds_every_module_and_data_file_beneath_one_name(release):
    dist_info = f"kafka_jmx_sidecar-{VERSION}.dist-info/"
    with zipfile.ZipFile(release.wheel) as wheel:
        names = set(wheel.namelist())
        license_text = wheel.read(f"{dist_info}licenses/LICENSE").decode()
    expected = {to + f[len(source):] for f in release.files for source, to in INSTALLED_FROM.items()
                if f.startswith(source)}
    assert {n for n in names if not n.startswith(dist_info)} == expected, \
        sorted({n for n in names if not n.startswith(dist_info)} ^ expected)[:20]
    assert {"kafka_jmx_sidecar/rules/kafka-health.yml", "kafka_jmx_sidecar/exporter/source/jmx/SidecarJmx.java",
            "kafka_jmx_sidecar/mbeans/simulator/Simulator.java"} <= names
    assert license_text == (REPO / "LICENSE").read_text()


def test_the_sdist_installs_into_a_fresh_environment_and_its_command_works(release, tmp_path):
    venv = fresh_venv(tmp_path / "venv", str(release.sdist))
    check_the_installed_command(venv)
