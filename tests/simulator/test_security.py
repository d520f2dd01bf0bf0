"""The JMX security switches, for real: password/access files and SSL (RMI registry included).

A client with the right credentials and trust store reads; without them it is refused with the
JDK's own error. SSL clients need a trust store at JVM start, so they run in a subprocess
(sim_jmx) with their own JVM; credential-only cases use this process's JPype JVM.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_jmx_sidecar.mbeans.simulator import JmxSecurity, SimulatorError, cluster, tls
from tests.simulator.sim_jmx import Jmx

REPO = Path(__file__).resolve().parents[2]
LEADERS = "kafka.server:type=ReplicaManager,name=LeaderCount"


@pytest.fixture(scope="module")
def secrets(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("jmx-secrets")
    pw, acc = d / "jmxremote.password", d / "jmxremote.access"
    pw.write_text("monitor monitor-secret\ncontrol control-secret\n")
    acc.write_text("monitor readonly\ncontrol readwrite\n")
    os.chmod(pw, 0o600)
    os.chmod(acc, 0o600)
    files = tls.generate(d / "tls")
    return {"password_file": str(pw), "access_file": str(acc), "tls": files, "dir": d}


def remote(url: str, *args: str) -> dict:
    """One read from a fresh JVM (sim_jmx in a subprocess)."""
    r = subprocess.run([sys.executable, "-m", "tests.simulator.sim_jmx", url, "--get", LEADERS, *args],
                       capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_password_authentication_and_access_levels(module_simulators, secrets, jvm):
    sim = module_simulators.start(cluster.reference_4_1(), security=JmxSecurity(
        password_file=secrets["password_file"], access_file=secrets["access_file"]))
    j = Jmx(sim.url, user="monitor", password="monitor-secret")
    assert j.value(LEADERS) == 5
    # readonly: reading yes, writing no (the JDK's access controller)
    from javax.management import Attribute

    with pytest.raises(Exception, match="Access denied! Invalid access level"):
        j.mbs.setAttribute(j.on(LEADERS), Attribute("Value", 1))
    j.close()
    assert Jmx(sim.url, user="control", password="control-secret").value(LEADERS) == 5
    with pytest.raises(Exception, match="Authentication failed! Credentials required"):
        Jmx(sim.url)
    with pytest.raises(Exception, match="Authentication failed! Invalid username or password"):
        Jmx(sim.url, user="monitor", password="wrong")
    with pytest.raises(Exception, match="Authentication failed! Invalid username or password"):
        Jmx(sim.url, user="nobody", password="monitor-secret")


def test_a_password_file_others_can_read_is_refused_as_the_jdk_does(secrets, tmp_path):
    pw = tmp_path / "open.password"
    pw.write_text("monitor x\n")
    os.chmod(pw, 0o644)
    with pytest.raises(SimulatorError, match=f"chmod 600 {pw}"):
        from kafka_jmx_sidecar.mbeans.simulator import Simulator

        Simulator.start(cluster.reference_4_1(), security=JmxSecurity(password_file=str(pw)))


@pytest.fixture(scope="module")
def ssl_sim(module_simulators, secrets):
    t = secrets["tls"]
    return module_simulators.start(cluster.reference_4_1(), security=JmxSecurity(
        password_file=secrets["password_file"], ssl=True, keystore=t.keystore, keystore_password=t.password))


def test_ssl_with_trust_store_and_credentials_reads(ssl_sim, secrets):
    t = secrets["tls"]
    got = remote(ssl_sim.url, "--ssl-registry", "--truststore", t.truststore, "--truststore-password", t.password,
                 "--user", "monitor", "--password", "monitor-secret")
    assert got == {"value": 5}


def test_ssl_without_the_trust_store_fails_the_certificate_check(ssl_sim):
    got = remote(ssl_sim.url, "--ssl-registry", "--user", "monitor", "--password", "monitor-secret")
    assert "error" in got and "PKIX path building failed" in got["message"], got


def test_ssl_registry_with_a_plain_client_is_a_non_jrmp_server(ssl_sim, jvm):
    with pytest.raises(Exception, match="non-JRMP server at remote endpoint"):
        Jmx(ssl_sim.url, user="monitor", password="monitor-secret")


def test_ssl_with_wrong_password_is_refused(ssl_sim, secrets):
    t = secrets["tls"]
    got = remote(ssl_sim.url, "--ssl-registry", "--truststore", t.truststore, "--truststore-password", t.password,
                 "--user", "monitor", "--password", "nope")
    assert "Authentication failed! Invalid username or password" in got.get("message", ""), got


def test_ssl_connector_with_plain_registry(module_simulators, secrets):
    """registry.ssl=false: the registry answers in plain text, the connector still needs TLS."""
    t = secrets["tls"]
    sim = module_simulators.start(cluster.reference_4_1(), security=JmxSecurity(
        ssl=True, registry_ssl=False, keystore=t.keystore, keystore_password=t.password))
    assert remote(sim.url, "--truststore", t.truststore, "--truststore-password", t.password) == {"value": 5}
    got = remote(sim.url)
    assert "PKIX path building failed" in got.get("message", ""), got
