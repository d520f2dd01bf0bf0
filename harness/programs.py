"""The real programs the tests and benchmarks run, resolved by the project's own files into a cache
outside the git tree: Java programs from Maven Central (`harness/programs/<name>/pom.xml`), Go
programs built from the Go module proxy with the machine's Go (`harness/programs/<name>/go-build.yml`).

    python -m harness.programs fetch           # every program; `make test` runs this first
    programs.classpath("kafka-4.1")            # the directory of jars, resolving it when missing
    programs.binary("prometheus-3", "promtool")  # a built command, building it when missing

A program lives in `$KAFKA_JMX_SIDECAR_CACHE/programs/<name>-<digest of its file>/` (default
cache `~/.cache/kafka-jmx-sidecar`), written to a temporary directory and renamed into place, so
a half-finished download or build is never taken for a program. Maven keeps its own copy in
`~/.m2`; a Go build downloads its modules and compiles in the temporary directory, dropped once
the commands are built (~1.3 GB of modules and build cache that nothing reads again).
A failed resolution raises `ProgramUnavailable` with one line naming the program, its version and
Maven's or Go's error: the tests that need the program fail with it, never skip.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

HERE = Path(__file__).resolve().parent
POMS = HERE / "programs"


@dataclass(frozen=True)
class Program:
    name: str
    title: str      # what it is, for messages: "Apache Kafka 2.2.2"
    version: str
    build: str = "maven"  # or "go": go-build.yml instead of pom.xml


PROGRAMS: dict[str, Program] = {p.name: p for p in (
    Program("kafka-4.4", "Apache Kafka", "4.4.0"),
    Program("kafka-4.1", "Apache Kafka", "4.1.1"),
    Program("kafka-3.6", "Apache Kafka", "3.6.2"),
    Program("kafka-2.4", "Apache Kafka", "2.4.1"),
    Program("kafka-2.2", "Apache Kafka", "2.2.2"),
    Program("kafka-0.11", "Apache Kafka", "0.11.0.3"),
    Program("jmx_exporter-0.20.0", "Prometheus jmx_exporter", "0.20.0"),
    Program("jmx_exporter-1.0.1", "Prometheus jmx_exporter", "1.0.1"),
    Program("jmx_exporter-1.6.0", "Prometheus jmx_exporter collector", "1.6.0"),
    Program("prometheus-3", "Prometheus", "3.16.0", build="go"),
    Program("hadoop-3.5", "Apache Hadoop minicluster (HDFS)", "3.5.0"),
)}


class ProgramUnavailable(RuntimeError):
    pass


def cache_root() -> Path:
    base = os.environ.get("KAFKA_JMX_SIDECAR_CACHE") or Path.home() / ".cache" / "kafka-jmx-sidecar"
    return Path(base) / "programs"


def _pom(name: str) -> Path:
    """The file that says what the program is: its pom.xml, or its go-build.yml."""
    if name not in PROGRAMS:
        raise ProgramUnavailable(f"unknown program {name!r}; known: {', '.join(PROGRAMS)}")
    return POMS / name / ("go-build.yml" if PROGRAMS[name].build == "go" else "pom.xml")


def _directory(name: str) -> Path:
    digest = hashlib.sha256(_pom(name).read_bytes()).hexdigest()[:12]
    return cache_root() / f"{name}-{digest}"


def directory(name: str) -> Path:
    """Program `name`'s directory in the cache (jars, or bin/ of a Go build), made when missing."""
    return _go_build(name) if _pom(name).name == "go-build.yml" else classpath(name)


def _maven_error(output: str) -> str:
    """The line of Maven's output that says what failed, without its boilerplate."""
    for line in output.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
        if line.startswith("[ERROR]") and len(line) > 8:
            text = line[8:].strip()
            if not text.startswith(("->", "To see", "Re-run", "For more", "[Help")):
                return text
    tail = [l for l in output.strip().splitlines() if l.strip()]
    return tail[-1] if tail else "no output"


def _made(name: str, make: Callable[[Path], str]) -> Path:
    """Program `name`'s directory: `make(tmp)` fills a temporary directory and returns what
    `.complete` says, and the directory is renamed into place (a half-made one is never taken)."""
    target = _directory(name)
    if (target / ".complete").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        (tmp / ".complete").write_text(make(tmp))
        try:
            tmp.rename(target)
        except OSError:  # another process finished first
            if not (target / ".complete").is_file():
                raise
        return target
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def classpath(name: str) -> Path:
    """The directory holding every jar of program `name` (resolved on first use)."""
    program = PROGRAMS[name]

    def resolve(tmp: Path) -> str:
        mvn = shutil.which("mvn")
        if not mvn:
            raise ProgramUnavailable(f"{program.title} {program.version} ({name}): mvn is not on PATH; "
                                     f"install Maven (apt-get install maven)")
        proc = subprocess.run([mvn, "-B", "-q", "-f", str(_pom(name)), "dependency:copy-dependencies",
                               f"-DoutputDirectory={tmp}"], capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0 or not any(tmp.glob("*.jar")):
            raise ProgramUnavailable(f"{program.title} {program.version} ({name}): Maven could not resolve "
                                     f"it: {_maven_error(proc.stdout + proc.stderr)}")
        return f"{program.title} {program.version}\n"

    return _made(name, resolve)


def _go_error(output: str) -> str:
    """The lines of Go's output that say what failed (not its download progress), at most three."""
    lines = [l.strip() for l in output.splitlines() if l.strip() and not l.startswith("go: downloading")]
    return " | ".join(lines[-3:]) if lines else "no output"


def _go_build(name: str) -> Path:
    """`go install` of the packages go-build.yml names at its version into `<directory>/bin`, the
    modules (the module's own go.sum checks them) and the build cache in the temporary directory."""
    program, spec = PROGRAMS[name], yaml.safe_load(_pom(name).read_text())
    what = f"{program.title} {program.version} ({spec['module']}@{spec['version']})"

    def build(tmp: Path) -> str:
        go = shutil.which("go")
        if not go:
            raise ProgramUnavailable(f"{what}: go is not on PATH; install Go (apt-get install golang-go, or the "
                                     f"release its go.mod asks for)")
        env = {**os.environ, "GOPATH": str(tmp / "go"), "GOMODCACHE": str(tmp / "go" / "mod"),
               "GOCACHE": str(tmp / "go" / "build"), "GOBIN": str(tmp / "bin"), "GOFLAGS": "-modcacherw",
               "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}  # the machine's Go, never one downloaded behind our back
        command = [go, "install", "-trimpath", f"-ldflags={spec.get('ldflags', '')}",
                   f"-tags={','.join(spec.get('tags', []))}",
                   *(f"{spec['module']}/{package}@{spec['version']}" for package in spec["packages"])]
        started = time.monotonic()
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=3600, env=env)
        except subprocess.TimeoutExpired as e:
            raise ProgramUnavailable(f"{what}: the Go build took over {e.timeout:.0f} s") from e
        if proc.returncode != 0 or not all((tmp / "bin" / Path(p).name).is_file() for p in spec["packages"]):
            raise ProgramUnavailable(f"{what}: Go could not build it: {_go_error(proc.stdout + proc.stderr)}")
        shutil.rmtree(tmp / "go", ignore_errors=True)
        return f"{program.title} {program.version}, built in {time.monotonic() - started:.0f} s\n"

    return _made(name, build)


def binary(name: str, command: str) -> Path:
    """The command `command` of Go program `name` (built on first use)."""
    path = _go_build(name) / "bin" / command
    if not path.is_file():
        raise ProgramUnavailable(f"{name}: no command {command!r} in {path.parent}")
    return path


def jar(name: str, prefix: str) -> Path:
    """The one jar of program `name` whose file name starts with `prefix`."""
    found = sorted(classpath(name).glob(f"{prefix}*.jar"))
    if len(found) != 1:
        raise ProgramUnavailable(f"{name}: expected one {prefix}*.jar, found {[p.name for p in found]}")
    return found[0]


def _fetch(names: list[str]) -> str | None:
    """Resolve `names` one after another (Maven's runs share ~/.m2, which is not safe to write
    from two at once); None, or the first error."""
    for name in names:
        try:
            fresh = not (_directory(name) / ".complete").is_file()
            path = directory(name)
        except ProgramUnavailable as e:
            return str(e)
        if fresh:
            how = "built" if PROGRAMS[name].build == "go" else "resolved"
            print(f"{how} {PROGRAMS[name].title} {PROGRAMS[name].version} into {path}", file=sys.stderr)
    return None


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "fetch":
        print("usage: python -m harness.programs fetch [NAME ...]", file=sys.stderr)
        return 2
    names = argv[1:] or list(PROGRAMS)
    # a Go build is minutes of CPU, Maven's resolutions mostly downloads: the two run side by side
    go = [n for n in names if n in PROGRAMS and PROGRAMS[n].build == "go"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        errors = list(pool.map(_fetch, [go, [n for n in names if n not in go]]))
    for error in filter(None, errors):
        print(f"error: {error}", file=sys.stderr)
    return 1 if any(errors) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
