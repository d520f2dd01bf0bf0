"""The import direction of docs/architecture.md, checked on the code: mbeans imports nothing of
exporter, and each stage package of exporter imports only the stages before it (and itself)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOP = "kafka_jmx_sidecar"

# exporter's stages, in the order the data takes them; a stage imports only those before it.
STAGES = ["base", "rule_engine", "source", "recompute", "reassignment", "output", "archive", "http", "otlp",
          "config", "poll", "backfill", "commands"]


def project_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of the project's own modules in a file, lazy ones too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith(TOP + ".")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(TOP + "."):
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def stage_of(module: str) -> str | None:
    """kafka_jmx_sidecar.exporter.<stage>... -> <stage>; None for exporter's own __init__."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "exporter" and parts[2] in STAGES else None


def files(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def test_every_exporter_module_belongs_to_a_stage():
    loose = [str(p.relative_to(REPO)) for p in files("exporter")
             if p.parent != REPO / "exporter" and p.relative_to(REPO / "exporter").parts[0] not in STAGES]
    top = sorted(p.name for p in (REPO / "exporter").glob("*.py"))
    assert loose == [] and top == ["__init__.py"]


@pytest.mark.parametrize("path", files("mbeans"), ids=lambda p: str(p.relative_to(REPO)))
def test_mbeans_imports_nothing_of_exporter(path):
    assert [m for _, m in project_imports(path) if m.startswith(f"{TOP}.exporter")] == []


@pytest.mark.parametrize("path", files("exporter"), ids=lambda p: str(p.relative_to(REPO)))
def test_a_stage_imports_only_the_stages_before_it(path):
    own = path.relative_to(REPO / "exporter").parts
    rank = STAGES.index(own[0]) if len(own) > 1 else -1
    upward = [f"line {line}: {module}" for line, module in project_imports(path)
              if (stage := stage_of(module)) is not None and STAGES.index(stage) > rank]
    assert upward == [], f"{path.relative_to(REPO)} imports a later stage"


def test_the_check_sees_an_upward_import(tmp_path):
    """The check itself: a source module importing the poll loop is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text(f"from {TOP}.exporter.poll.collector import Collector\n")
    upward = [m for _, m in project_imports(bad) if STAGES.index(stage_of(m)) > STAGES.index("source")]
    assert upward == [f"{TOP}.exporter.poll.collector.Collector"]
