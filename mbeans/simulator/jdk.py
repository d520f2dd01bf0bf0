"""The JDK the simulator needs, py4j's jar, and the simulator's compiled classes.

`compiled_classes(java, jar)` compiles every *.java file of this folder with the JDK's javac into a
cache directory keyed by the sources' text, py4j's jar and the JDK's version, so only the first
start after a change compiles (a few seconds of CPU); later starts load the classes as they are.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from kafka_jmx_sidecar.mbeans.simulator.control import SimulatorError

HERE = Path(__file__).resolve().parent
MAIN_CLASS = "Simulator"


def java_sources() -> list[Path]:
    return sorted(HERE.glob("*.java"))


def find_java() -> str:
    """The `java` of a JDK 17+ (JAVA_HOME first, then PATH); its javac compiles the simulator."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    which = shutil.which("java")
    if which:
        candidates.append(Path(which).resolve())
    for java in candidates:
        if java.is_file() and (java.parent / "javac").exists():
            return str(java)
    if candidates:
        raise SimulatorError(f"{candidates[0]} belongs to a JRE; the simulator compiles Java source and needs a JDK 17+ "
                             f"(apt-get install openjdk-17-jdk-headless, or set JAVA_HOME to a JDK)")
    raise SimulatorError("no java found; install a JDK 17+ (apt-get install openjdk-17-jdk-headless) or set JAVA_HOME")


def py4j_jar() -> str:
    try:
        from py4j.java_gateway import find_jar_path
    except ImportError:
        raise SimulatorError("py4j is not installed; pip install py4j (or the project's [simulator] extra)") from None
    jar = find_jar_path()
    if not jar or not Path(jar).is_file():
        raise SimulatorError("py4j's jar was not found next to the py4j package; reinstall py4j (pip install --force-reinstall py4j)")
    return jar


def _jdk_version(java: str) -> bytes:
    """The JDK's `release` file (its JAVA_VERSION and build), else the java binary's resolved path."""
    home = Path(java).resolve().parent.parent
    try:
        return (home / "release").read_bytes()
    except OSError:
        return str(Path(java).resolve()).encode()


def cache_key(java: str, jar: str) -> str:
    """Changes with any source file's name or text, py4j's jar or the JDK."""
    h = hashlib.sha256()
    for src in java_sources():
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    h.update(Path(jar).name.encode() + b"\0" + _jdk_version(java))
    return h.hexdigest()[:16]


def _cache_roots() -> list[Path]:
    env = os.environ.get("KAFKA_JMX_SIDECAR_CACHE")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    first = Path(env) if env else Path(xdg) / "kafka-jmx-sidecar"
    return [first, Path(tempfile.gettempdir()) / f"kafka-jmx-sidecar-{os.getuid()}"]


def compiled_classes(java: str, jar: str, timeout: float = 180.0) -> Path:
    """The directory of the compiled simulator, compiling it first when no cache has it."""
    name = f"simulator-{cache_key(java, jar)}"
    roots = _cache_roots()
    for root in roots:
        if (root / name / f"{MAIN_CLASS}.class").is_file():
            return root / name
    for root in roots:
        try:
            root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix="simulator-", dir=root))
        except OSError:
            continue
        return _compile(java, jar, tmp, root / name, timeout)
    raise SimulatorError("no writable directory for the compiled simulator: set KAFKA_JMX_SIDECAR_CACHE")


def _compile(java: str, jar: str, tmp: Path, out: Path, timeout: float) -> Path:
    javac = str(Path(java).parent / "javac")
    cmd = [javac, "-nowarn", "-encoding", "UTF-8", "-proc:none", "-cp", jar, "-d", str(tmp)]
    try:
        done = subprocess.run(cmd + [str(s) for s in java_sources()], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SimulatorError(f"compiling the simulator took longer than {timeout:.0f} s") from None
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SimulatorError(f"compiling the simulator failed: {(done.stderr or done.stdout).strip()[-2000:]}")
    try:
        tmp.rename(out)
    except OSError:  # a concurrent start compiled it first
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / f"{MAIN_CLASS}.class").is_file():
            raise SimulatorError(f"the compiled simulator could not be moved to {out}") from None
    return out
