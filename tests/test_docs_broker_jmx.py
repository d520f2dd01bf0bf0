"""docs/broker-jmx.md's recipes work as written.

- Their options are the ones the suite's real Kafka brokers run with (harness/kafka.py): the plain
  recipe exactly, the TLS recipe once its properties file is read as the JVM reads it.
- A JVM started with each recipe's options, as Kafka's start script passes them, opens a port the
  sidecar reads with the configuration the page shows beside the recipe; the loopback recipe's
  port takes no connection from another interface; an access file without the user denies it.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.jmx_target import compiled_classes, java_home, keystores
from harness.kafka import KafkaCluster
from harness.processes import free_port
from harness.sidecar import scrape_file

PAGE = Path(__file__).resolve().parents[1] / "docs" / "broker-jmx.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
HOST = "kafka-0.kafka.example.com"  # the page's broker, 127.0.0.1 here
PORT = "9999"
DIR = "/etc/kafka/jmx/"


def _blocks(kind: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(PAGE.read_text(encoding="utf-8")) if lang == kind]


def _recipes() -> list[dict[str, str]]:
    """Each ```sh block's exported variables (JMX_PORT, KAFKA_JMX_OPTS), as the shell reads them."""
    found = []
    for body in _blocks("sh"):
        words = shlex.split(body.replace("\\\n", " "), comments=True)
        env = dict(w.split("=", 1) for w in words if re.match(r"^(JMX_PORT|KAFKA_JMX_OPTS)=", w))
        if env:
            found.append(env)
    return found


def _files() -> dict[str, str]:
    """The ```text blocks that are files: `# PATH: what` on the first line, the content after it."""
    files = {}
    for body in _blocks("text"):
        first, _, rest = body.partition("\n")
        m = re.match(r"# (/\S+): ", first)
        if m:
            files[m.group(1)] = rest
    return files


def _script_options(env: dict[str, str]) -> list[str]:
    """What kafka-run-class.sh passes to java for these variables (its "JMX settings" lines)."""
    opts = shlex.split(env.get("KAFKA_JMX_OPTS", "")) or [
        "-Dcom.sun.management.jmxremote", "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false"]
    if env.get("JMX_PORT"):
        opts.append(f"-Dcom.sun.management.jmxremote.port={env['JMX_PORT']}")
        if not any(o.startswith("-Dcom.sun.management.jmxremote.rmi.port=") for o in opts):
            opts.append(f"-Dcom.sun.management.jmxremote.rmi.port={env['JMX_PORT']}")
    return opts


def _properties(opts: list[str]) -> dict[str, str]:
    return dict(o[2:].partition("=")[::2] for o in opts if o.startswith("-D"))


def _recipe(*, auth: bool, ssl: bool) -> list[str]:
    [found] = [r for r in map(_script_options, _recipes())
               if (_properties(r)["com.sun.management.jmxremote.authenticate"] == "true") == auth
               and (_properties(r)["com.sun.management.jmxremote.ssl"] == "true") == ssl]
    return found


def _normalised(props: dict[str, str]) -> dict[str, str]:
    """Ports, files and the advertised host are the deployment's; the rest is the recipe."""
    out = {}
    for key, value in props.items():
        if key.endswith("port"):
            value = "PORT"
        elif key.endswith((".file", "keyStore")):
            value = "FILE"
        elif key.endswith("keyStorePassword"):
            value = "PASSWORD"
        out[key] = value
    return out


def _harness_flags(jmx: str, tmp_path: Path) -> dict[str, str]:
    cluster = KafkaCluster("4.1", jmx=jmx, workdir=tmp_path / jmx)
    node = cluster.brokers[1]
    node.directory.mkdir(parents=True)
    return _normalised(_properties(cluster._jmx_flags(node)))


def test_the_page_has_the_three_recipes_and_their_files():
    assert len(_recipes()) == 3
    assert set(_files()) == {DIR + "jmxremote.password", DIR + "jmxremote.access", DIR + "jmxremote-ssl.properties"}


def test_the_recipes_are_the_options_the_real_brokers_run_with(tmp_path):
    plain = _normalised(_properties(_recipe(auth=False, ssl=False)))
    assert plain == _harness_flags("plain", tmp_path)
    # the TLS recipe's key store settings are in a file the agent reads, the harness gives them as -D
    tls = _properties(_recipe(auth=True, ssl=True))
    ssl_file = tls.pop("com.sun.management.jmxremote.ssl.config.file")
    assert ssl_file == DIR + "jmxremote-ssl.properties"
    tls.update(line.split("=", 1) for line in _files()[ssl_file].splitlines() if line and not line.startswith("#"))
    secure = _harness_flags("secure", tmp_path)
    # the harness binds every broker to the loopback interface; a recipe for the network does not
    assert secure.pop("com.sun.management.jmxremote.host") == "127.0.0.1"
    assert secure.pop("java.rmi.server.hostname") == "127.0.0.1" and tls.pop("java.rmi.server.hostname") == HOST
    assert _normalised(tls) == secure


def _write(tmp_path: Path) -> Path:
    """The page's files under tmp_path, the key store the harness's (its password in the file)."""
    ks = keystores()
    for path, text in _files().items():
        target = tmp_path / Path(path).name
        text = text.replace(DIR, f"{tmp_path}/")
        text = re.sub(r"(?m)^javax\.net\.ssl\.keyStorePassword=.*$", f"javax.net.ssl.keyStorePassword={ks.password}", text)
        if target.name == "jmxremote.password":  # a user without a role, for the denied-access case
            text += "nobody nopass\n"
        target.write_text(text)
        target.chmod(0o600)
    shutil.copy(ks.keystore, tmp_path / "jmx-keystore.p12")
    return tmp_path


class _Jvm:
    """A bare JVM (harness/JmxTarget.java) started with a recipe's options, on a free port."""

    def __init__(self, opts: list[str], files: Path):
        self.port = free_port()
        text = " ".join(opts).replace(DIR, f"{files}/").replace(HOST, "127.0.0.1").replace(PORT, str(self.port))
        self.proc = subprocess.Popen([str(java_home() / "bin" / "java"), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                                      "-cp", str(compiled_classes()), *shlex.split(text), "JmxTarget"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def ready(self) -> "_Jvm":
        line = self.proc.stdout.readline()
        assert line.strip() == "READY", self.proc.stderr.read() if self.proc.poll() is not None else line
        return self

    def bound_addresses(self) -> set[str]:
        """The local addresses of the sockets listening on the port (/proc/net/tcp and tcp6)."""
        found = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A" and int(local.rpartition(":")[2], 16) == self.port:
                    found.add(local.rpartition(":")[0])
        return found

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


def _sidecar_config(yaml_text: str, port: int, user: str, tmp_path: Path, name: str) -> Path:
    """The page's sidecar configuration against the JVM, reading one MBean."""
    ks = keystores()
    text = (yaml_text.replace(f"{HOST}:{PORT}", f"127.0.0.1:{port}").replace("/etc/jmx/truststore.p12", str(ks.truststore))
            .replace("username: monitor", f"username: {user}"))
    path = tmp_path / name
    path.write_text(text + textwrap.dedent("""\
        includeObjectNames: ["java.lang:type=Runtime"]
        rules:
        - pattern: 'java.lang<type=Runtime><>Uptime'
        """))
    return path


def _scrape(config: Path, password: str) -> str:
    try:
        return scrape_file(config, env={"JMX_PASSWORD": password, "TRUSTSTORE_PASSWORD": keystores().password})
    except AssertionError as e:
        return str(e)


def test_a_jvm_started_with_each_recipe_is_read_by_the_pages_configuration(tmp_path):
    files = _write(tmp_path)
    [password_yaml, tls_yaml] = [y for y in _blocks("yaml") if y.startswith("hostPort:")]
    password = _files()[DIR + "jmxremote.password"].split()[1]
    jvms = {"plain": _Jvm(_recipe(auth=False, ssl=False), files), "password": _Jvm(_recipe(auth=True, ssl=False), files),
            "tls": _Jvm(_recipe(auth=True, ssl=True), files)}
    try:
        for jvm in jvms.values():
            jvm.ready()
        # the loopback recipe listens on 127.0.0.1 only (as an IPv4-mapped IPv6 address, Java's socket)
        assert jvms["plain"].bound_addresses() <= {"0100007F", "0000000000000000FFFF00000100007F"}, \
            jvms["plain"].bound_addresses()
        scrapes = [(_sidecar_config(password_yaml, jvms["password"].port, "monitor", tmp_path, "password.yml"), password),
                   (_sidecar_config(tls_yaml, jvms["tls"].port, "monitor", tmp_path, "tls.yml"), password),
                   (_sidecar_config(password_yaml, jvms["password"].port, "nobody", tmp_path, "nobody.yml"), "nopass")]
        with ThreadPoolExecutor(len(scrapes)) as pool:
            read_password, read_tls, denied = pool.map(lambda s: _scrape(*s), scrapes)
    finally:
        for jvm in jvms.values():
            jvm.stop()
    assert "java_lang_Runtime_Uptime " in read_password, read_password
    assert "java_lang_Runtime_Uptime " in read_tls, read_tls
    assert "denied access to user 'nobody'" in denied and "readonly" in denied, denied
