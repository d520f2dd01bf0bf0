"""The in-process JVM (JPype) and the Java helper compiled into it.

JPype starts ONE JVM per process and the system properties the client needs (trust store, RMI
timeouts) are read once, at first use, so `start_jvm(settings)` starts it with everything the
settings need, does nothing when called again with compatible settings, and raises
JmxConfigError naming the property when the running JVM cannot serve them (tests with another
trust store run in a subprocess).

`helper()` compiles SidecarJmx.java and the rest of its package (the *.java files shipped next to
this file) with javax.tools.JavaCompiler into a cache directory keyed by every source's name and
text and the Java version, and loads it through a URLClassLoader; it returns None when the JVM has
no compiler (a JRE) and no compiled helper is in the cache directory already, and the client then
reads through plain JPype calls (slower, same results). The container image compiles it at build
time (scripts/image/compile-helper).
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from kafka_jmx_sidecar.exporter.source.jmx.errors import JmxConfigError
from kafka_jmx_sidecar.exporter.source.jmx.client_settings import JmxSettings

log = logging.getLogger(__name__)

SOURCES = tuple(sorted(Path(__file__).parent.glob("*.java")))  # SidecarJmx.java and the rest of sidecar.jmx
HELPER_CLASS = "sidecar.jmx.SidecarJmx"
# Options every JVM of ours gets: keep SIGINT/SIGTERM for Python (-Xrs), no AWT.
BASE_OPTIONS = ("-Xrs", "-Djava.awt.headless=true")

_lock = threading.RLock()
_started_options: tuple[str, ...] | None = None
_helper: Any = None
_helper_error: str | None = None


def _secret(key: str) -> bool:
    return "password" in key.lower()


def jvm_path() -> str:
    import jpype

    try:
        return jpype.getDefaultJVMPath()
    except Exception as e:  # JPype's own message names JAVA_HOME
        raise JmxConfigError(f"no Java runtime found ({e}): install a JDK 11+ or set JAVA_HOME") from e


def start_jvm(settings: JmxSettings | None = None) -> None:
    """Start the JVM with the options `settings` need; idempotent.

    When the JVM already runs, a property it lacks is set now if nothing has used it yet (the
    RMI timeouts are read at the first RMI connection, the trust store at the first SSL
    handshake). An SSL property that differs after SSL was used raises JmxConfigError; a timeout
    that differs after RMI was used is kept as it is, with a warning.
    """
    import jpype

    settings = settings or JmxSettings()
    props = settings.jvm_properties()
    options = tuple(f"-D{k}={v}" for k, v in sorted(props.items())) + tuple(settings.jvm_options)
    with _lock:
        global _started_options
        if not jpype.isJVMStarted():
            try:
                jpype.startJVM(jvm_path(), *BASE_OPTIONS, *options, convertStrings=False)
            except OSError as e:
                raise JmxConfigError(f"the JVM did not start ({e}); check sidecar jvmOptions") from e
            _unlink_collectors()
            _started_options = options
            log.debug("JVM started with %s", [o if not _secret(o) else o.split("=")[0] + "=***" for o in options])
            return
        System = jpype.JClass("java.lang.System")
        for key, want in props.items():
            have = System.getProperty(key)
            have = None if have is None else str(have)
            if have == want:
                continue
            ssl_key = not key.startswith("sun.rmi.")
            if not (_ssl_used if ssl_key else _rmi_used):
                System.setProperty(key, want)
                continue
            shown_have = "unset" if have is None else ("***" if _secret(key) else have)
            shown_want = "***" if _secret(key) else want
            if not ssl_key:
                # the client bounds each call by the settings itself (a reload's new timeouts
                # apply); the JVM's socket timeout stays as first used: said once per value
                if (key, want) not in _timeouts_told:
                    _timeouts_told.add((key, want))
                    log.warning("the JVM's RMI sockets already use %s=%s (this configuration asks for %s): RMI "
                                "socket timeouts are per process; the client's own bounds on each call follow "
                                "the configuration", key, shown_have, shown_want)
                continue
            raise JmxConfigError(
                f"the JVM in this process already used SSL with {key}={shown_have}, but this configuration "
                f"needs {shown_want}: SSL settings are fixed once used - restart the sidecar "
                "(or run the other configuration in its own process)")
        if _started_options is not None:
            extra = set(settings.jvm_options) - set(_started_options)
            if extra:
                raise JmxConfigError(f"the JVM in this process already runs without {sorted(extra)}: "
                                     "JVM options are fixed once the JVM starts - restart the sidecar")


def _unlink_collectors() -> None:
    """Cut JPype's link between the two garbage collectors. Through it every Java collection (a
    young one every few megabytes a poll reads) ran a full Python collection on JPype's reference
    queue thread, holding the GIL: a fifth of the wall time of a poll of 40,000 partitions, more
    than the poll's own Python work. And a Python collection that saw the C heap grow called
    System.gc(). The sidecar holds no Python object in Java (no proxies) and collects each side
    itself: shrink_heap() after a poll, gc.freeze() in serve. Without its gc callback, JPype's
    trigger from Java stays disarmed after one last collection (tests/exporter/test_jvm_gc.py)."""
    import gc

    import _jpype

    collect = getattr(_jpype, "_collect", None)
    while collect is not None and collect in gc.callbacks:
        gc.callbacks.remove(collect)


def shrink_heap() -> None:
    """A full collection of this process's JVM, between polls: the read's garbage filled the heap,
    and the serial collector gives heap back to the system (down to -XX:MaxHeapFreeRatio of it
    free) only after a full collection, never after a young one (and all at once only with
    -XX:-ShrinkHeapInSteps, among the default options). At 40,000 partitions with Strimzi's rules
    it took 20-60 ms (JPype releases the GIL meanwhile) and 12 MB off the RSS of every poll's end.
    Nothing when the JVM ignores explicit collections (-XX:+DisableExplicitGC in jvmOptions)."""
    import jpype

    if jpype.isJVMStarted():
        jpype.JClass("java.lang.System").gc()


_rmi_used = False
_ssl_used = False
_timeouts_told: set[tuple[str, str]] = set()


def mark_used(ssl: bool) -> None:
    """Called before a connection attempt: from now on RMI (and SSL) properties are fixed."""
    global _rmi_used, _ssl_used
    with _lock:
        _rmi_used = True
        _ssl_used = _ssl_used or ssl


def _cache_root(settings: JmxSettings | None) -> Path:
    if settings and settings.helper_cache_dir:
        return Path(settings.helper_cache_dir)
    env = os.environ.get("KAFKA_JMX_SIDECAR_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "kafka-jmx-sidecar"


def _writable_root(settings: JmxSettings | None) -> Path:
    for root in (_cache_root(settings), Path(tempfile.gettempdir()) / f"kafka-jmx-sidecar-{os.getuid()}"):
        try:
            root.mkdir(parents=True, exist_ok=True)
            if os.access(root, os.W_OK):
                return root
        except OSError:
            continue
    raise JmxConfigError("no writable directory for the compiled JMX helper: set KAFKA_JMX_SIDECAR_CACHE")


def _sources_digest(java_version: str) -> str:
    """Changes with any source file's name or text, and with the Java version."""
    h = hashlib.sha256()
    for src in SOURCES:
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    h.update(java_version.encode())
    return h.hexdigest()[:16]


def helper(settings: JmxSettings | None = None) -> Any:
    """The SidecarJmx class, compiled on first use; None when the JVM has no Java compiler."""
    import jpype

    global _helper, _helper_error
    with _lock:
        if _helper is not None or _helper_error is not None:
            return _helper
        if not jpype.isJVMStarted():
            start_jvm(settings)
        System = jpype.JClass("java.lang.System")
        java_version = str(System.getProperty("java.specification.version"))
        digest = _sources_digest(java_version)
        # compiled ahead of time (the container image's build does): used as it is, even from a
        # read-only directory, so a start compiles nothing (~2 s of CPU) and writes nothing
        out = _cache_root(settings) / f"helper-{digest}"
        if not (out / "sidecar" / "jmx" / "SidecarJmx.class").exists():
            root = _writable_root(settings)
            out = root / f"helper-{digest}"
        if not (out / "sidecar" / "jmx" / "SidecarJmx.class").exists():
            compiler = jpype.JClass("javax.tools.ToolProvider").getSystemJavaCompiler()
            if compiler is None:
                _helper_error = ("the Java runtime has no compiler (a JRE, not a JDK): reading through JPype "
                                 "calls, which costs more CPU per MBean; install a JDK for the fast path")
                log.warning(_helper_error)
                return None
            tmp = Path(tempfile.mkdtemp(prefix="helper-", dir=root))
            errors = jpype.JClass("java.io.ByteArrayOutputStream")()
            rc = compiler.run(None, None, errors, "-d", str(tmp), "-nowarn", "-encoding", "UTF-8",
                              *[str(src) for src in SOURCES])
            if rc != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise JmxConfigError(f"compiling {', '.join(src.name for src in SOURCES)} failed: {errors.toString()}")
            try:
                tmp.rename(out)
            except OSError:  # a concurrent process compiled it first
                shutil.rmtree(tmp, ignore_errors=True)
        File = jpype.JClass("java.io.File")
        URL = jpype.JClass("java.net.URL")
        loader = jpype.JClass("java.net.URLClassLoader")(
            jpype.JArray(URL)([File(str(out)).toURI().toURL()]),
            jpype.JClass("java.lang.ClassLoader").getSystemClassLoader())
        _helper = jpype.JClass(HELPER_CLASS, loader=loader)
        return _helper
