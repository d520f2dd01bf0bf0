"""Where the output lands, on any Hadoop file system (storage.py): built aside in a sibling directory
and renamed into place (a reader never sees half an output), with a manifest; what killed runs left
beside it, removed; and the import of the files with promtool, which reads local files only.

On HDFS and the local file system the final rename is atomic; on an object store (`s3a://`,
`gs://`) a rename is a copy, and a reader may see the output appear file by file.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading

MANIFEST = "manifest.json"
REJECTS = "rejects.jsonl"


def _inside(uri: str, directory: str) -> bool:
    return uri == directory or uri.startswith(directory.rstrip("/") + "/")


def check_paths(inputs: dict[str, str], out: str, out_given: str) -> None:
    """ValueError when the output lies inside an input (a later run would read this run's output
    as input) or an input inside the output (the run replaces the output, and the input with it).
    `inputs`: {qualified URI: as given}; `out`: the output's qualified URI."""
    for uri, given in inputs.items():
        if _inside(out, uri):
            raise ValueError(f"--output {out_given} is inside --input {given}: a later run would read this run's "
                             "output as its input; write the output outside the inputs")
        if _inside(uri, out):
            raise ValueError(f"--input {given} is inside --output {out_given}: the run replaces {out_given}, and the "
                             "input with it; write the output elsewhere")


# A run's directories beside the output are named after it: `.<output>.partial-<pid>@<host>-<random>`
# (being written) and `.<output>.old-<pid>@<host>-<random>` (the output it replaces, for an instant),
# so a later run can tell whether their maker still runs.
_KINDS = ("partial", "old")


def _owner() -> str:
    return f"{os.getpid()}@{socket.gethostname()}"


class Output:
    """The output directory `uri` (qualified; `given`: as the user named it) on `storage`."""

    def __init__(self, storage, uri: str, given: str):
        self.storage, self.uri, self.given = storage, uri.rstrip("/"), given
        parent, _, self.name = self.uri.rpartition("/")
        if not self.name or parent.endswith(":") or parent.endswith(":/"):
            raise ValueError(f"--output {given}: name a directory, not the root of a file system")
        self.parent = parent
        self.partial: str | None = None

    def _aside(self, kind: str) -> str:
        path = f"{self.parent}/.{self.name}.{kind}-{_owner()}-{secrets.token_hex(4)}"
        self.storage.mkdirs(path)
        return path

    def prepare(self, replace: bool = False) -> str:
        """A fresh directory beside the output (same file system, so the final rename is atomic),
        after removing what runs that were killed left there. Refuses an output that holds
        anything but a previous backfill's, and a previous backfill's unless `replace`."""
        try:
            return self._prepare(replace)
        except PermissionError as e:
            raise PermissionError(f"--output {self.given}: cannot be written ({e}); give the user the backfill runs "
                                  f"as write access to {_shown(self.parent)}") from None

    def _prepare(self, replace: bool) -> str:
        storage = self.storage
        if storage.exists(self.uri):
            if not storage.is_dir(self.uri):
                raise FileExistsError(f"--output {self.given}: exists and is not a directory; name a new or "
                                      "empty directory")
            names = storage.names(self.uri)
            if names and MANIFEST not in names:
                raise FileExistsError(f"--output {self.given}: exists and is not a backfill output (no {MANIFEST}); "
                                      "name a new or empty directory")
            if names and not replace:
                raise FileExistsError(f"--output {self.given}: holds a previous backfill's output; name another "
                                      "directory, remove it, or pass --replace to replace it")
        else:
            storage.mkdirs(self.parent)
        self.clear_stale()
        self.partial = self._aside("partial")
        return self.partial

    def clear_stale(self) -> None:
        """Remove the directories a killed run (SIGKILL, a lost machine) left beside the output, when
        their maker is known to be gone: it ran on this host and its process no longer exists (the
        output a run was replacing is put back if the output itself is missing). Others are named."""
        from kafka_jmx_sidecar.exporter.backfill.session import log

        storage = self.storage
        for kind in _KINDS:
            prefix = f".{self.name}.{kind}-"
            for name in storage.names(self.parent):
                if not name.startswith(prefix):
                    continue
                path = f"{self.parent}/{name}"
                pid, host = _maker(name[len(prefix):])
                if pid is None:
                    log(f"left {_shown(path)}: an earlier run's {kind} output; remove it if no backfill is writing "
                        f"{_shown(self.uri)}")
                elif host != socket.gethostname():
                    log(f"left {_shown(path)}: written by process {pid} on {host}; remove it once that run is over")
                elif pid != os.getpid() and _running(pid):
                    log(f"left {_shown(path)}: process {pid}, a backfill still running, is writing {_shown(self.uri)}")
                else:
                    if kind == "old" and not storage.exists(self.uri) and storage.is_dir(f"{path}/out"):
                        storage.rename(f"{path}/out", self.uri)  # killed between its two renames: the previous output
                    storage.delete(path)
                    log(f"removed {_shown(path)}: left by a run that was killed (process {pid} is gone)")

    def place(self) -> None:
        """Rename the finished output into place, replacing a previous backfill output there."""
        storage, old = self.storage, None
        if storage.exists(self.uri):
            old = self._aside("old")
            storage.rename(self.uri, f"{old}/out")
        storage.rename(self.partial, self.uri)
        self.partial = None
        if old is not None:
            storage.delete(old)

    def discard(self, jvm_usable: bool = True) -> None:
        """Remove the partial output, if any. After a signal the JVM may be gone or its connection
        cut: a local output is removed from here, another through a fresh connection, in a thread of
        its own, for at most a minute (the next run removes what is left)."""
        partial, self.partial = self.partial, None
        if partial is None:
            return
        if partial.startswith("file:"):
            shutil.rmtree(self.storage.local_path(partial) if jvm_usable else _file_path(partial), ignore_errors=True)
            return

        def delete():
            try:
                self.storage.delete(partial)
            except Exception:  # the JVM is gone: the next run clears it
                pass

        t = threading.Thread(target=delete, name="discard-partial", daemon=True)
        t.start()
        t.join(60)

    def write_manifest(self, manifest: dict) -> None:
        text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        self.storage.write(f"{self.partial}/{MANIFEST}", text.encode())


def _file_path(uri: str) -> str:
    """The local path of a `file:` URI, without the JVM (`file:/a/b`, `file:///a/b`)."""
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(uri).path)


def _shown(uri: str) -> str:
    """A local path as a path (as the user gave it), anything else as its URI."""
    return _file_path(uri) if uri.startswith("file:") else uri


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


def promtool_import(storage, out: str, files: list[str], dest: str, promtool: str | None = None) -> None:
    """`promtool tsdb create-blocks-from openmetrics FILE DEST` for each file of the output `out`;
    a file on another file system is fetched to local disk first (one at a time). Raises
    RuntimeError with promtool's own words when it refuses one."""
    promtool = promtool or shutil.which("promtool")
    if promtool is None:
        raise RuntimeError("--import: promtool is not installed (Debian: apt-get install prometheus)")
    os.makedirs(dest, exist_ok=True)
    local = out.startswith("file:")
    fetched = None if local else tempfile.mkdtemp(prefix="backfill-import-")
    try:
        for name in files:
            if local:
                path = os.path.join(storage.local_path(out), name)
            else:
                path = os.path.join(fetched, name)
                storage.copy_to_local(f"{out}/{name}", path)
            run = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", path, dest],
                                 capture_output=True, text=True)
            if not local:
                os.unlink(path)
            if run.returncode != 0:
                raise RuntimeError(f"--import: promtool refused {name}: {(run.stderr or run.stdout).strip()[-500:]}")
    finally:
        if fetched is not None:
            shutil.rmtree(fetched, ignore_errors=True)
