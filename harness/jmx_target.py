"""Start and stop the bare test JVM of harness/JmxTarget.java over real JMX/RMI.

`Target(...)` compiles JmxTarget.java once per session (javac into a cache directory), starts
`java -cp DIR JmxTarget` with the com.sun.management.jmxremote.* flags for the requested mode
(plain, password authentication, SSL with the RMI registry over SSL), waits for READY and stops
the process by its PID. Stdin commands change values and report the calls the target served.
"""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.processes import free_port

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "JmxTarget.java"
_CACHE = Path(tempfile.gettempdir()) / "kafka-jmx-sidecar-tests"


def java_home() -> Path:
    java = shutil.which("java")
    if not java:
        raise RuntimeError("java is not on PATH")
    return Path(os.path.realpath(java)).parent.parent


def compiled_classes() -> Path:
    """The directory holding JmxTarget.class, compiled once for this source text."""
    from harness.processes import compiled

    return compiled(SOURCE, _CACHE, javac=str(java_home() / "bin" / "javac"))


@dataclass(frozen=True)
class Keystores:
    keystore: Path
    truststore: Path
    password: str = "changeit"


def keystores() -> Keystores:
    """A self-signed key pair for 127.0.0.1 and a trust store holding its certificate (cached)."""
    d = _CACHE / "ssl-v1"
    ks, ts = d / "server.p12", d / "trust.p12"
    if ts.exists():
        return Keystores(ks, ts)
    d.mkdir(parents=True, exist_ok=True)
    keytool = str(java_home() / "bin" / "keytool")
    for p in (ks, ts, d / "server.crt"):
        p.unlink(missing_ok=True)
    subprocess.run([keytool, "-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048",
                    "-validity", "3650", "-dname", "CN=127.0.0.1", "-ext", "san=ip:127.0.0.1",
                    "-keystore", str(ks), "-storetype", "PKCS12", "-storepass", "changeit",
                    "-keypass", "changeit"], check=True, capture_output=True)
    subprocess.run([keytool, "-exportcert", "-alias", "broker", "-keystore", str(ks), "-storepass",
                    "changeit", "-file", str(d / "server.crt")], check=True, capture_output=True)
    tmp = d / "trust.p12.tmp"
    tmp.unlink(missing_ok=True)
    subprocess.run([keytool, "-importcert", "-noprompt", "-alias", "broker", "-file", str(d / "server.crt"),
                    "-keystore", str(tmp), "-storetype", "PKCS12", "-storepass", "changeit"],
                   check=True, capture_output=True)
    tmp.rename(ts)
    return Keystores(ks, ts)


class Target:
    """One test JVM. Use as a context manager, or call start()/stop()."""

    def __init__(self, *, topics: int = 0, partitions: int = 0, port: int | None = None,
                 auth: tuple[str, str] | None = None, ssl: bool = False,
                 advertised_host: str = "127.0.0.1", extra: tuple[str, ...] = (), fast_start: bool = True):
        self.topics, self.partitions = topics, partitions
        self.port = port or free_port()
        self.auth, self.ssl = auth, ssl
        self.advertised_host = advertised_host
        self.extra = extra
        self.fast_start = fast_start  # C1 only and the serial GC: starts faster, runs slower
        self.proc: subprocess.Popen | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="jmx-target-"))

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{self.port}/jmxrmi"

    def _flags(self) -> list[str]:
        p = self.port
        flags = [f"-Dcom.sun.management.jmxremote.port={p}", f"-Dcom.sun.management.jmxremote.rmi.port={p}",
                 "-Dcom.sun.management.jmxremote.host=127.0.0.1",
                 f"-Djava.rmi.server.hostname={self.advertised_host}",
                 "-Dcom.sun.management.jmxremote.local.only=false",
                 f"-Dtarget.topics={self.topics}", f"-Dtarget.partitions={self.partitions}"]
        if self.fast_start:
            flags += ["-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
        if self.auth:
            user, password = self.auth
            self._dir.mkdir(mode=0o700, exist_ok=True)  # again after a stop
            pw, acc = self._dir / "jmxremote.password", self._dir / "jmxremote.access"
            pw.write_text(f"{user} {password}\n")
            acc.write_text(f"{user} readonly\n")
            os.chmod(pw, 0o600)
            os.chmod(acc, 0o600)
            flags += ["-Dcom.sun.management.jmxremote.authenticate=true",
                      f"-Dcom.sun.management.jmxremote.password.file={pw}",
                      f"-Dcom.sun.management.jmxremote.access.file={acc}"]
        else:
            flags.append("-Dcom.sun.management.jmxremote.authenticate=false")
        if self.ssl:
            ks = keystores()
            flags += ["-Dcom.sun.management.jmxremote.ssl=true", "-Dcom.sun.management.jmxremote.registry.ssl=true",
                      f"-Djavax.net.ssl.keyStore={ks.keystore}", f"-Djavax.net.ssl.keyStorePassword={ks.password}",
                      "-Djavax.net.ssl.keyStoreType=PKCS12"]
        else:
            flags.append("-Dcom.sun.management.jmxremote.ssl=false")
        return flags + list(self.extra)

    def start(self, timeout: float = 60.0) -> "Target":
        classes = compiled_classes()
        cmd = [str(java_home() / "bin" / "java"), "-cp", str(classes), *self._flags(), "JmxTarget"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        line = self._readline(timeout)
        if line.strip() != "READY":
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.stop()
            raise RuntimeError(f"test JVM did not start: {line!r} {err}")
        return self

    def _readline(self, timeout: float) -> str:
        assert self.proc and self.proc.stdout
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError("no answer from the test JVM")
        return self.proc.stdout.readline()

    def command(self, line: str, timeout: float = 30.0) -> str:
        assert self.proc and self.proc.stdin
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self._readline(timeout).strip()
        if answer.startswith("ERROR"):
            raise RuntimeError(answer)
        return answer

    def counts(self) -> dict[str, int]:
        words = self.command("counts").split()[1:]
        return {k: int(v) for k, v in (w.split("=") for w in words)}

    def reset(self) -> None:
        self.command("reset")

    def pause(self) -> None:
        assert self.proc
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        if self.proc:
            for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                try:
                    f and f.close()
                except OSError:
                    pass
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "Target":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
