"""The images' pins (scripts/image/constraints.txt) read, and held against pyproject.toml's
requirements for an image's extras, offline.

    pins = read_pins(CONSTRAINTS.read_text())          # {"h11": (line, "0.16.0"), ...}
    unmet(pins, requirements(["web", "admin"]))        # [] or what is wrong, one line each
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tests.deploy.docker.dockerfile import Dockerfile

REPO = Path(__file__).resolve().parents[3]
CONSTRAINTS = REPO / "scripts" / "image" / "constraints.txt"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
WHERE = CONSTRAINTS.relative_to(REPO)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s*(?:#.*)?$")


def image_python() -> str:
    """The Python version of the images' base (FROM python:3.11-...): the one markers see."""
    base = Dockerfile(REPO / "Dockerfile").stage("base").parent
    m = re.fullmatch(r"python:(\d+\.\d+)\S*", base)
    assert m, f"the base stage is {base}, not an official python image"
    return m.group(1)


def read_pins(text: str) -> dict[str, tuple[int, str]]:
    """{canonical name: (line, version)}; a line that is not `NAME==VERSION` fails here."""
    pins: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        m = _PIN.match(line)
        assert m, f"{WHERE}:{number}: {line!r} is not NAME==VERSION"
        name = canonicalize_name(m.group(1))
        assert name not in pins, f"{WHERE}:{number}: {name} pinned twice"
        pins[name] = (number, m.group(2))
    return pins


def requirements(extras: list[str]) -> list[Requirement]:
    """The project's dependencies and those of the extras, whose markers hold in the image."""
    reqs = [Requirement(r) for r in PYPROJECT["dependencies"]]
    for extra in extras:
        assert extra in PYPROJECT["optional-dependencies"], f"no extra {extra!r} in pyproject.toml"
        reqs += [Requirement(r) for r in PYPROJECT["optional-dependencies"][extra]]
    python = image_python()
    env = {"python_version": python, "python_full_version": f"{python}.0", "extra": ""}
    return [r for r in reqs if r.marker is None or r.marker.evaluate(env)]


def unmet(pins: dict[str, tuple[int, str]], reqs: list[Requirement]) -> list[str]:
    """What the pins miss of the requirements: a package not pinned, or pinned outside its range."""
    problems = []
    for req in reqs:
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"{req} from pyproject.toml is not pinned")
            continue
        line, version = pins[name]
        try:
            inside = req.specifier.contains(Version(version), prereleases=True)
        except InvalidVersion:
            inside = False
        if not inside:
            problems.append(f"{WHERE}:{line}: {name}=={version} is outside pyproject.toml's {req}")
    return problems
