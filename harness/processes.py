"""Child processes of the real-program tests: started so that they die with the test run, stopped
by PID, and watched through their log files.

Every process is started in a session of its own with the parent-death signal set to SIGKILL, so a
test run that is itself killed (CI's time limit, Ctrl-C twice) leaves no broker behind; `stop`
sends SIGTERM, waits, then SIGKILL, and checks the PID is gone.
"""
from __future__ import annotations

import ctypes
import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable, Sequence

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def spawn(cmd: Sequence[str], log: Path, cwd: Path | None = None, env: dict | None = None) -> subprocess.Popen:
    """Start `cmd` with stdout and stderr appended to `log`."""
    out = open(log, "ab")
    try:
        return subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                cwd=cwd, env=env, start_new_session=True, preexec_fn=_die_with_parent)
    finally:
        out.close()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers kill(0)
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def stop(proc: subprocess.Popen | None, grace: float = 30.0, hard: bool = False) -> None:
    """SIGTERM (SIGKILL when `hard`), then SIGKILL after `grace` seconds; returns once the PID is gone."""
    if proc is None:
        return
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGKILL if hard else signal.SIGTERM)
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        except ProcessLookupError:
            pass
    proc.poll()
    if pid_alive(proc.pid):
        raise RuntimeError(f"process {proc.pid} ({proc.args[0] if proc.args else '?'}) still runs after stop")


def stop_all(procs: Sequence[subprocess.Popen | None], grace: float = 30.0, hard: bool = False) -> list[str]:
    """`stop` for several processes at once: every one is signalled before any is waited for (their
    shutdowns overlap); returns what failed, one message per process still running."""
    sig = signal.SIGKILL if hard else signal.SIGTERM
    for proc in procs:
        if proc is not None and proc.poll() is None:
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    errors = []
    for proc in procs:
        try:
            if proc is not None and proc.poll() is None:
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            stop(proc, grace=grace, hard=True)  # whatever the signal left: SIGKILL, and the PID checked gone
        except RuntimeError as e:
            errors.append(str(e))
    return errors


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on, below the kernel's ephemeral range: a port is chosen
    seconds before its program binds it (a Kafka cluster's are written into its properties first),
    and an ephemeral one could meanwhile become another connection's local port. Never the same
    port twice in one test run."""
    low = _ephemeral_low()
    for _ in range(200):
        if low > 12_000:
            port = random.randrange(low - 10_000, low)
        else:  # an unusual port range: the kernel's choice
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError("no free loopback port found")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"({path} not written)"
    return "\n".join(text.splitlines()[-lines:])


def wait_until(what: str, ready: Callable[[], bool], timeout: float, proc: subprocess.Popen | None = None,
               log: Path | None = None, interval: float = 0.2) -> None:
    """Until `ready()`; a process that exits or a timeout raises with the tail of its log."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with code {proc.returncode}; "
                               f"the end of {log}:\n{tail(log) if log else ''}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not ready within {timeout:.0f} s; "
                               f"the end of {log}:\n{tail(log) if log else ''}")
        time.sleep(interval)


def log_has(log: Path, needle, offset: int = 0) -> bool:
    """Whether the log, from byte `offset` on, matches the compiled regex `needle`."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            return needle.search(f.read().decode("utf-8", "replace")) is not None
    except OSError:
        return False


def compiled(source: Path, into: Path, classpath: str = "", javac: str | None = None) -> Path:
    """The directory of `source`'s classes, compiled once per source text (and class path) into a
    directory under `into`, which is written aside and renamed into place (a half-finished compile
    is never taken, and two processes compiling at once both end with the same classes)."""
    import hashlib
    import shutil
    import subprocess
    import tempfile

    digest = hashlib.sha256(source.read_bytes() + classpath.encode()).hexdigest()[:12]
    out = into / f"{source.stem}-{digest}"
    if not (out / f"{source.stem}.class").exists():
        into.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=into))
        javac = javac or shutil.which("javac") or "javac"
        cmd = [javac, "-encoding", "UTF-8", *(["-cp", classpath] if classpath else []), "-d", str(tmp), str(source)]
        subprocess.run(cmd, check=True, capture_output=True)
        try:
            tmp.rename(out)
        except OSError:  # another process compiled it first
            shutil.rmtree(tmp, ignore_errors=True)
    return out
