"""The project on the executors. The tasks run the project's own Python (the describe reader, the
archive's replay, the rule engine, the OpenMetrics writer), so the executors' Python must import
this very release. `check_workers` asks them before the first real job; where they lack the
project, the job ships itself: a zip of the package this driver imports, added with
SparkContext.addPyFile (as spark-submit --py-files would), and asks again.

What shipping cannot mend is said in one line: executors whose Python lacks the project's own
dependencies (PyYAML: install them there, or ship a packed environment with spark.archives), or
that import another release of it (install this one there, or remove it so the job ships its
own). A driver that imports the project from a zip (spark-submit --py-files in YARN's cluster
mode) has shipped it already: Spark gives the executors the same files.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

# The installed package's subpackages, as pyproject.toml maps them from the checkout's folders.
SUBPACKAGES = ("exporter", "mbeans", "rules")
# What the tasks import: a missing dependency of any of them shows here, not as a failed task.
TASK_MODULES = tuple(f"kafka_jmx_sidecar.exporter.backfill.{m}"
                     for m in ("describe_dumps", "archive_input", "naming", "openmetrics", "writing"))


def package_zip(directory: str) -> str | None:
    """A zip of the installed package (its Python files and package data, no caches), written in
    `directory`; None when the package is not in plain directories (imported from a zip)."""
    import kafka_jmx_sidecar
    from kafka_jmx_sidecar.exporter import __version__

    roots = [("kafka_jmx_sidecar", Path(kafka_jmx_sidecar.__file__).parent)]
    for name in SUBPACKAGES:
        module = __import__(f"kafka_jmx_sidecar.{name}", fromlist=["_"])
        roots.append((f"kafka_jmx_sidecar/{name}", Path(list(module.__path__)[0])))
    if not all(path.is_dir() for _, path in roots):
        return None
    target = os.path.join(directory, f"kafka_jmx_sidecar-{__version__}.zip")
    written = set()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for arcroot, root in roots:
            for path in sorted(root.rglob("*")):
                relative = path.relative_to(root)
                if not path.is_file() or "__pycache__" in relative.parts or path.suffix == ".pyc":
                    continue
                arcname = f"{arcroot}/{relative.as_posix()}"
                if arcname not in written:
                    written.add(arcname)
                    z.write(path, arcname)
    return target


def ship(sc) -> bool:
    """Add the package to the executors' Python path; False when it cannot be made (see
    package_zip). The zip lives until this process ends (Spark serves it from there)."""
    directory = tempfile.mkdtemp(prefix="kafka-jmx-sidecar-ship-")
    atexit.register(shutil.rmtree, directory, True)
    made = package_zip(directory)
    if made is None:
        return False
    sc.addPyFile(made)
    return True


def probe(sc, release: str) -> set[tuple[str, str]]:
    """What the executors' Python makes of the project, from a few tasks (about two per core, so
    that each executor runs one): ("release", the version it imports; the modules the tasks use
    imported too when that is `release`) or ("missing", the module it lacks). The
    function is sent by value and uses the standard library only, so that a worker without the
    project runs it too (a task that could not load its function would fail as pages of trace)."""

    def ask(_, modules=TASK_MODULES, release=release):
        import importlib
        import sys

        try:
            found = importlib.import_module("kafka_jmx_sidecar.exporter").__version__
            if found == release:  # another release's modules are not this one's to import
                for name in modules:
                    importlib.import_module(name)
            return "release", found
        except ImportError as e:
            # forget what was half imported (a package without its modules), so that a retry in this
            # reused worker finds what is shipped meanwhile
            for name in [m for m in sys.modules if m == "kafka_jmx_sidecar" or m.startswith("kafka_jmx_sidecar.")]:
                del sys.modules[name]
            return "missing", e.name or str(e)

    ask.__module__ = "__main__"  # pickled by value: the workers need not import this module
    n = 2 * max(1, sc.defaultParallelism)
    return set(sc.parallelize(range(n), n).map(ask).collect())


def check_workers(spark) -> None:
    """RuntimeError, in one line, when Spark's Python workers cannot run the job (see the module's
    docstring); ships the project first where it is missing. Skipped where the workers are this
    very interpreter (local, PYSPARK_PYTHON unset or the same: spark_session's default)."""
    from kafka_jmx_sidecar.exporter import __version__

    from kafka_jmx_sidecar.exporter.backfill.session import log

    sc = spark.sparkContext
    if sc.master.startswith("local") and sc.pythonExec == sys.executable:
        return
    found = probe(sc, __version__)
    if any(kind == "missing" for kind, _ in found) and ship(sc):
        log(f"shipped kafka-jmx-sidecar {__version__} to Spark's executors (their Python lacks it)")
        found = probe(sc, __version__)
    workers = f"Spark's Python workers ({sc.pythonExec})"
    missing = sorted(m for kind, m in found if kind == "missing")
    if missing:
        raise RuntimeError(
            f"{workers} cannot run the backfill: there is no module named {missing[0]}; install kafka-jmx-sidecar "
            "and its dependencies where they run (pip install 'kafka-jmx-sidecar[spark]'), or ship a packed "
            "environment with spark.archives")
    releases = sorted(v for kind, v in found if kind == "release" and v != __version__)
    if releases:
        raise RuntimeError(
            f"{workers} import kafka-jmx-sidecar {', '.join(releases)}, this driver is {__version__}: install "
            f"{__version__} where they run, or remove theirs so that the backfill ships its own")
