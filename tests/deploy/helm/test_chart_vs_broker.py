"""The chart's container, started as Kubernetes would start it, against a real Kafka 4.4 broker.

The chart is rendered in the standalone mode for the broker's remote JMX, secured as a production
broker's is (password, read-only role, RMI registry over SSL), with the credentials and the trust
store in Secrets (rendered here as the test's inputs, as a user creates them). From the rendered
Deployment: the container's args, its environment (secretKeyRef resolved from those Secrets), and
its volume mounts materialised in a directory standing for /etc/kafka-jmx-sidecar/ (the config
file from the rendered ConfigMap, the trust store from its Secret; only the mount prefix is
rewritten). Then `kafka-jmx-sidecar serve` (the image's entrypoint) runs with exactly those args,
and its probes and /metrics are read on the container port. A second run adds the webConfig Secret
(a web-config file with TLS and basic auth, and the certificate and key it names).
"""
from __future__ import annotations

import base64
import os
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import bcrypt
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.helm.chart import KUBE_VERSIONS, config_file, k8s_errors, manifest_errors, one, render
from harness.jmx_target import keystores
from harness import processes
from tests.real.conftest import real_kafka  # noqa: F401  (the shared-cluster fixture)
from harness.sidecar import command

MOUNT = "/etc/kafka-jmx-sidecar"
TOPIC = "chart-orders"
PARTITIONS = 3


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.fixture(scope="module")
def kafka(real_kafka):  # noqa: F811
    cluster = real_kafka("4.4", jmx="secure")
    # min ISR 2 on one replica: Kafka 4.4 caps min ISR at the replica count (the effective min ISR,
    # 3.7+), so the broker itself reports these partitions AT min ISR, not under it
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=1, min_isr=2)
    return cluster


def user_secrets(cluster) -> list[dict]:
    """The Secrets a user creates before installing the chart."""
    return [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kafka-jmx", "namespace": "kafka"},
         "type": "Opaque", "data": {"username": b64(cluster.jmx.user.encode()),
                                    "password": b64(cluster.jmx.password.encode())}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kafka-jmx-tls", "namespace": "kafka"},
         "type": "Opaque", "data": {"truststore.p12": b64(keystores().truststore.read_bytes()),
                                    "truststore-password": b64(keystores().password.encode())}},
    ]


def secret_value(secrets: list[dict], name: str, key: str) -> bytes:
    secret = next(s for s in secrets if s["metadata"]["name"] == name)
    return base64.b64decode(secret["data"][key])


def materialise(container: dict, pod: dict, docs: list[dict], secrets: list[dict], root: Path) -> None:
    """Writes what each volume mount under /etc/kafka-jmx-sidecar would hold, under `root`."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in container["volumeMounts"]:
        path = mount["mountPath"]
        if not path.startswith(MOUNT):
            continue  # /tmp: the machine's own
        target = root / path[len(MOUNT):].lstrip("/")
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            configmap = one(docs, "ConfigMap", volume["configMap"]["name"])
            text = configmap["data"][mount["subPath"]]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text.replace(MOUNT + "/", f"{root}/"))
        elif "secret" in volume:
            source = volume["secret"]
            target.mkdir(parents=True, exist_ok=True)
            secret = next(x for x in secrets if x["metadata"]["name"] == source["secretName"])
            items = source.get("items") or [{"key": k, "path": k} for k in secret["data"]]
            for item in items:
                (target / item["path"]).write_bytes(secret_value(secrets, source["secretName"], item["key"]))
        else:
            raise AssertionError(f"a mount the test does not know how to stand for: {mount}")


def environment(container: dict, secrets: list[dict]) -> dict[str, str]:
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        else:
            ref = e["valueFrom"]["secretKeyRef"]
            env[e["name"]] = secret_value(secrets, ref["name"], ref["key"]).decode()
    return env


def http_status(url: str) -> int:
    """As the kubelet's probe: no certificate check."""
    ctx = ssl._create_unverified_context() if url.startswith("https:") else None
    try:
        with urllib.request.urlopen(url, timeout=10, context=ctx) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def samples(text: str) -> dict[tuple, float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def jmx_values(kafka, port: int) -> dict:
    return {
        "mode": "standalone",
        "containerPort": port,
        "jmx": {
            "hostPort": kafka.jmx_host_port(1),
            "usernameSecret": {"name": "kafka-jmx", "key": "username"},
            "passwordSecret": {"name": "kafka-jmx", "key": "password"},
            "ssl": {"enabled": True, "trustStore": {
                "secretName": "kafka-jmx-tls", "key": "truststore.p12",
                "passwordSecret": {"name": "kafka-jmx-tls", "key": "truststore-password"}}},
        },
        "settings": {"pollIntervalSeconds": 2},
    }


class AsRendered:
    """The Deployment's container run as the kubelet would run it, with the image's entrypoint."""

    def __init__(self, values: dict, secrets: list[dict], tmp_path: Path):
        docs = render(values)
        assert [e for d in docs for e in manifest_errors(d)] == []
        self.docs = docs
        self.pod = one(docs, "Deployment")["spec"]["template"]["spec"]
        [self.container] = self.pod["containers"]
        # the chart relies on the image's entrypoint, `kafka-jmx-sidecar serve`
        assert "command" not in self.container
        root = tmp_path / "etc-kafka-jmx-sidecar"
        materialise(self.container, self.pod, docs, secrets, root)
        self.args = [a.replace(MOUNT + "/", f"{root}/") for a in self.container["args"]]
        self.env = environment(self.container, secrets)
        [self.port] = [p["containerPort"] for p in self.container["ports"] if p["name"] == "metrics"]
        self.log = tmp_path / "serve.log"
        self.proc = None

    def probe_url(self, probe: str) -> str:
        get = self.container[probe]["httpGet"]
        assert get["port"] == "metrics"
        return f"{get['scheme'].lower()}://127.0.0.1:{self.port}{get['path']}"

    def __enter__(self) -> "AsRendered":
        self.proc = processes.spawn([*command(), "serve", *self.args], self.log, env={**os.environ, **self.env})
        try:
            processes.wait_until("the chart's sidecar: readiness probe",
                                 lambda: http_status(self.probe_url("readinessProbe")) == 200, 120, self.proc, self.log)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        processes.stop(self.proc, grace=30)
        assert not processes.pid_alive(self.proc.pid)


def test_the_rendered_container_serves_the_brokers_health(kafka, tmp_path):
    secrets = user_secrets(kafka)
    assert [e for s in secrets for v in KUBE_VERSIONS for e in k8s_errors(s, v)] == []
    sidecar = AsRendered(jmx_values(kafka, processes.free_port()), secrets, tmp_path)
    assert kafka.jmx.password not in config_file(sidecar.docs) and kafka.jmx.password not in str(sidecar.container)
    assert sorted(sidecar.env) == ["JMX_PASSWORD", "JMX_USERNAME", "TRUSTSTORE_PASSWORD"]
    with sidecar:
        assert http_status(sidecar.probe_url("livenessProbe")) == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{sidecar.port}/metrics", timeout=30) as r:
            text = r.read().decode()
    assert not any(secret in sidecar.log.read_text() for secret in (kafka.jmx.password, keystores().password))

    got = samples(text)
    assert got[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0.0
    # the broker's own gauges: every partition of the topic at its effective min ISR of 1
    assert got[("kafka_server_replicamanager_underminisrpartitioncount", ())] == 0.0
    assert got[("kafka_server_replicamanager_atminisrpartitioncount", ())] >= float(PARTITIONS)
    for p in range(PARTITIONS):
        labels = (("partition", str(p)), ("topic", TOPIC))
        assert got[("kafka_cluster_partition_atminisr", labels)] == 1.0
        assert got[("kafka_cluster_partition_underminisr", labels)] == 0.0
        assert got[("kafka_cluster_partition_underreplicated", labels)] == 0.0
        assert got[("kafka_cluster_partition_replicascount", labels)] == 1.0
        assert got[("kafka_cluster_partition_insyncreplicascount", labels)] == 1.0
    assert got[("jmx_scrape_error", ())] == 0.0


def test_the_web_config_secret_puts_tls_and_basic_auth_on_metrics(kafka, tmp_path):
    """webConfig: a web-config file and the certificate it names, from one Secret."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key",
                    "-out", "tls.crt", "-days", "2", "-subj", "/CN=kafka-jmx-sidecar",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, cwd=tmp_path)
    scrape_password = "scrape-" + kafka.jmx.password
    web_config = ("tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
                  f"basic_auth_users:\n  prometheus: {bcrypt.hashpw(scrape_password.encode(), bcrypt.gensalt(4)).decode()}\n")
    secrets = [*user_secrets(kafka), {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kafka-jmx-sidecar-web", "namespace": "kafka"},
        "type": "Opaque", "data": {"web-config.yml": b64(web_config.encode()),
                                   "tls.crt": b64((tmp_path / "tls.crt").read_bytes()),
                                   "tls.key": b64((tmp_path / "tls.key").read_bytes())}}]
    values = {**jmx_values(kafka, processes.free_port()),
              "webConfig": {"secretName": "kafka-jmx-sidecar-web", "tls": True}}
    sidecar = AsRendered(values, secrets, tmp_path)
    assert sidecar.probe_url("readinessProbe").startswith("https://")
    with sidecar:
        # probes need no credentials; /metrics does
        assert http_status(sidecar.probe_url("livenessProbe")) == 200
        url = f"https://127.0.0.1:{sidecar.port}/metrics"
        assert http_status(url) == 401
        request = urllib.request.Request(url, headers={
            "Authorization": "Basic " + b64(f"prometheus:{scrape_password}".encode())})
        ctx = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))
        with urllib.request.urlopen(request, timeout=30, context=ctx) as r:
            text = r.read().decode()
    assert samples(text)[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0.0
    assert scrape_password not in sidecar.log.read_text()
