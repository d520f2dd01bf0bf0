"""Where the output lands: built aside in a sibling directory and renamed into place (a reader
never sees half an output), with a manifest; and the import of the files with promtool."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

MANIFEST = "manifest.json"
REJECTS = "rejects.jsonl"


def partial_dir(out_dir: str) -> str:
    """A fresh directory beside `out_dir` (same file system, so the final rename is atomic)."""
    target = Path(out_dir).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not (target / MANIFEST).exists())):
        raise FileExistsError(f"--output {out_dir}: exists and is not a backfill output (no {MANIFEST}); "
                              "name a new or empty directory")
    return tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent)


def place(partial: str, out_dir: str) -> None:
    """Rename the finished output into place, replacing a previous backfill output there."""
    target = Path(out_dir).resolve()
    old = None
    if target.exists():
        old = tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent)
        os.rename(target, os.path.join(old, "out"))
    os.chmod(partial, 0o755)
    os.rename(partial, target)
    if old is not None:
        shutil.rmtree(old)


def write_manifest(directory: str, manifest: dict) -> None:
    with open(os.path.join(directory, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")


def promtool_import(directory: str, files: list[str], dest: str, promtool: str | None = None) -> None:
    """`promtool tsdb create-blocks-from openmetrics FILE DEST` for each file. Raises RuntimeError
    with promtool's own words when it refuses one."""
    promtool = promtool or shutil.which("promtool")
    if promtool is None:
        raise RuntimeError("--import: promtool is not installed (Debian: apt-get install prometheus)")
    os.makedirs(dest, exist_ok=True)
    for name in files:
        run = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics",
                              os.path.join(directory, name), dest], capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"--import: promtool refused {name}: {(run.stderr or run.stdout).strip()[-500:]}")
