"""Where the output lands: built aside in a sibling directory and renamed into place (a reader
never sees half an output), with a manifest; what killed runs left beside it, removed; and the
import of the files with promtool."""
from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

MANIFEST = "manifest.json"
REJECTS = "rejects.jsonl"


def check_paths(inputs: list[str], out_dir: str) -> None:
    """ValueError when the output lies inside an input (a later run would read this run's output
    as input) or an input inside the output (the run replaces the output, and the input with it)."""
    target = Path(out_dir).resolve()
    for given in inputs:
        source = Path(given).resolve()
        if source == target or source in target.parents:
            raise ValueError(f"--output {out_dir} is inside --input {given}: a later run would read this run's "
                             "output as its input; write the output outside the inputs")
        if target in source.parents:
            raise ValueError(f"--input {given} is inside --output {out_dir}: the run replaces {out_dir}, and the "
                             "input with it; write the output elsewhere")


# A run's directories beside the output are named after it: `.<output>.partial-<pid>@<host>-<random>`
# (being written) and `.<output>.old-<pid>@<host>-<random>` (the output it replaces, for an instant),
# so a later run can tell whether their maker still runs.
_KINDS = ("partial", "old")


def _owner() -> str:
    return f"{os.getpid()}@{socket.gethostname()}"


def _aside(target: Path, kind: str) -> str:
    return tempfile.mkdtemp(prefix=f".{target.name}.{kind}-{_owner()}-", dir=target.parent)


def partial_dir(out_dir: str) -> str:
    """A fresh directory beside `out_dir` (same file system, so the final rename is atomic), after
    removing what runs that were killed left there."""
    target = Path(out_dir).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not (target / MANIFEST).exists())):
        raise FileExistsError(f"--output {out_dir}: exists and is not a backfill output (no {MANIFEST}); "
                              "name a new or empty directory")
    clear_stale(target)
    return _aside(target, "partial")


def clear_stale(target: Path) -> None:
    """Remove the directories a killed run (SIGKILL, a lost machine) left beside `target`, when
    their maker is known to be gone: it ran on this host and its process no longer exists (the
    output a run was replacing is put back if the output itself is missing). Others are named."""
    from kafka_jmx_sidecar.exporter.backfill.session import log

    for kind in _KINDS:
        prefix = f".{target.name}.{kind}-"
        for path in sorted(target.parent.glob(glob.escape(prefix) + "*")):
            pid, host = _maker(path.name[len(prefix):])
            if pid is None:
                log(f"left {path}: an earlier run's {kind} output; remove it if no backfill is writing {target}")
            elif host != socket.gethostname():
                log(f"left {path}: written by process {pid} on {host}; remove it once that run is over")
            elif pid != os.getpid() and _running(pid):
                log(f"left {path}: process {pid}, a backfill still running, is writing {target}")
            else:
                if kind == "old" and not target.exists() and (path / "out").is_dir():
                    os.rename(path / "out", target)  # killed between its two renames: the previous output
                shutil.rmtree(path, ignore_errors=True)
                log(f"removed {path}: left by a run that was killed (process {pid} is gone)")


def _maker(rest: str) -> tuple[int | None, str | None]:
    """`<pid>@<host>-<random>` -> (pid, host); (None, None) for a name of an older release."""
    owner, _, _ = rest.rpartition("-")
    pid, at, host = owner.partition("@")
    return (int(pid), host) if at and pid.isdigit() else (None, None)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def place(partial: str, out_dir: str) -> None:
    """Rename the finished output into place, replacing a previous backfill output there."""
    target = Path(out_dir).resolve()
    old = None
    if target.exists():
        old = _aside(target, "old")
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
