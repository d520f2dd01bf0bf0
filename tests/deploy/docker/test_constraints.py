"""The images' pinned dependencies (scripts/image/constraints.txt, written by `make constraints`)
satisfy pyproject.toml's requirements for each image's extras, checked offline. That both images
install with the file, and that every package the sidecar image installs is pinned at its version,
is checked where the image's environment is installed (test_image.py)."""
from __future__ import annotations

import re

from tests.deploy.docker.constraints import CONSTRAINTS, REPO, read_pins, requirements, unmet
from tests.deploy.docker.dockerfile import Dockerfile

DOCKERFILE = Dockerfile(REPO / "Dockerfile")
IMAGES = {"sidecar": "sidecar-venv", "backfill": "backfill-venv"}


def install_step(stage: str) -> list[str]:
    found = [c for c in DOCKERFILE.commands(stage) if c[0] == "scripts/image/install"]
    assert len(found) == 1, f"stage {stage}: {found}"
    return found[0]


def test_the_pins_satisfy_pyproject_for_each_image():
    pins = read_pins(CONSTRAINTS.read_text())
    for image, stage in IMAGES.items():
        extras = install_step(stage)[3].split(",")
        problems = unmet(pins, requirements(extras))
        assert problems == [], f"the {image} image ({','.join(extras)}): " + "; ".join(problems) + \
            ": run `make constraints`"


def test_the_check_finds_a_missing_pin_and_a_pin_outside_its_range():
    text = CONSTRAINTS.read_text()
    assert re.search(r"^h11==", text, re.M) and re.search(r"^PyYAML==", text, re.M)
    broken = re.sub(r"^h11==.*\n", "", text, flags=re.M)
    broken = re.sub(r"^PyYAML==\S+", "PyYAML==5.4.1", broken, flags=re.M)
    problems = unmet(read_pins(broken), requirements(["web", "admin"]))
    assert len(problems) == 2, problems
    assert problems[0].startswith("scripts/image/constraints.txt:") and \
        problems[0].endswith(": pyyaml==5.4.1 is outside pyproject.toml's PyYAML>=6"), problems
    assert problems[1] == "h11>=0.16 from pyproject.toml is not pinned", problems
    # an extra's requirement counts only for the images that install the extra
    without_spark = re.sub(r"^pyspark==.*\n", "", text, flags=re.M)
    assert unmet(read_pins(without_spark), requirements(["web", "admin"])) == []
    assert [p.split(" ")[0] for p in unmet(read_pins(without_spark), requirements(["web", "admin", "spark"]))] == \
        ["pyspark<5,>=4.0"]


def test_the_file_says_how_it_is_made_and_make_has_the_command():
    header = [line for line in CONSTRAINTS.read_text().splitlines() if line.startswith("#")]
    assert "`make constraints`" in " ".join(header), header
    makefile = (REPO / "Makefile").read_text()
    target = re.search(r"^constraints:.*\n\t(.*)$", makefile, re.M)
    assert target and target.group(1).strip() == "@$(PYTHON) scripts/constraints", target
