"""A release as `make dist` makes it - `python -m build`: the sdist, then the wheel built from the
sdist - on a copy of the source tree, and what a user runs first after installing either.

    r = build(tmp)                                   # Release(sdist, wheel, files)
    check_the_installed_command(venv)                # --version, check-config (exit 0 and exit 2)
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def source_files() -> list[str]:
    """The source tree a release is made from: the files git tracks and those it would (not
    ignored), less any deleted and not yet committed."""
    r = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"the release is built from the files git lists, and git failed: {r.stderr}"
    return sorted(f for f in r.stdout.split("\0") if f and (REPO / f).is_file())


@dataclass(frozen=True)
class Release:
    sdist: Path
    wheel: Path
    files: tuple[str, ...]  # the source tree it was built from
    seconds: float


def build(dest: Path) -> Release:
    """`python -m build` on a copy of the source tree (so nothing is written into the checkout)."""
    files = source_files()
    src = dest / "src"
    for f in files:
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, src / f)
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dest / "dist"), str(src)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"python -m build: {r.stdout[-2000:]}{r.stderr[-3000:]}"
    sdists, wheels = list((dest / "dist").glob("*.tar.gz")), list((dest / "dist").glob("*.whl"))
    assert len(sdists) == len(wheels) == 1, list((dest / "dist").iterdir())
    return Release(sdists[0], wheels[0], tuple(files), time.monotonic() - started)


def fresh_venv(dest: Path, *requirements: str) -> Path:
    """A new virtual environment with the requirements installed (dependencies from PyPI, or
    pip's cache) by this environment's pip (`--python`: a pip of its own costs seconds)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True, timeout=120)
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(dest / "bin" / "python"), "install", "--quiet",
                        "--disable-pip-version-check", *requirements], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"pip install {' '.join(requirements)}: {r.stderr[-3000:]}"
    return dest


def check_the_installed_command(venv: Path) -> None:
    """What a user runs first after an install: `--version` (the packaged version); `check-config`
    on the shipped rule file as a deployment uses it (a hostPort first, as the chart's ConfigMap
    writes it), exit 0; and on a file with a misspelt setting, exit 2 naming the file and line."""
    command = str(venv / "bin" / "kafka-jmx-sidecar")
    run = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (0, f"kafka-jmx-sidecar {VERSION}\n"), run.stderr
    rules = next(venv.glob("lib/python3*/site-packages/kafka_jmx_sidecar/rules/kafka-health.yml"))
    with tempfile.TemporaryDirectory(prefix="kafka-jmx-sidecar-check-") as tmp:
        good, bad = Path(tmp) / "sidecar.yml", Path(tmp) / "typo.yml"
        good.write_text("hostPort: kafka-0.kafka-headless:9999\n" + rules.read_text())
        run = subprocess.run([command, "check-config", str(good)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0 and run.stdout.startswith(f"{good}: OK: "), run.stdout + run.stderr
        bad.write_text("hostPort: kafka-0.kafka-headless:9999\nsidecar:\n  pollIntervalSecond: 5\n")
        run = subprocess.run([command, "check-config", str(bad)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 2, (run.returncode, run.stdout, run.stderr)
        assert run.stderr.startswith(f"{bad}:3: sidecar.pollIntervalSecond: unknown setting"), run.stderr
