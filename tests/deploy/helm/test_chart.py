"""The chart: strict lint, every ci/ values file rendered and every manifest checked against
Kubernetes 1.27 and 1.33 (kubernetes-validate) or its CRD schema (crds/), and what the values
promise: the shipped rules, the config file the sidecar loads, secrets by reference, the hardened
container, the monitors, the alert rules and dashboard embedded, the backfill Job."""
from __future__ import annotations

import copy
import json
import os
import subprocess

import helm_python
import pytest
import yaml

from harness.sidecar import command
from tests.deploy.helm.chart import (
    CHART, KUBE_VERSIONS, REPO, ci_values, config_file, crd_errors, is_custom, manifest_errors, one, render,
)

CI = ci_values()
STANDALONE = {"jmx": {"hostPort": "kafka-0.kafka-headless.kafka.svc:9999"}}


def test_the_ci_folder_has_every_case():
    assert {"default-values.yaml", "sidecar-only-values.yaml", "standalone-values.yaml", "brokers-values.yaml",
            "cluster-wide-values.yaml", "all-options-values.yaml"} <= set(CI)


@pytest.mark.parametrize("name", ["kafka-health.yml", "kafka-cluster.yml"])
def test_the_charts_rule_files_are_the_shipped_ones_byte_for_byte(name):
    # a chart reads nothing outside its folder: these are copies, kept identical here
    assert (CHART / "files" / name).read_bytes() == (REPO / "rules" / name).read_bytes()


@pytest.mark.parametrize("kube", KUBE_VERSIONS)
@pytest.mark.parametrize("values_file", sorted(CI))
def test_strict_lint_is_clean(values_file, kube):
    report = helm_python.lint(str(CHART), CI[values_file], strict=True, kube_version=f"v{kube}")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_strict_lint_can_fail():
    # the lint above can fail: a name Kubernetes refuses is an error in strict mode. (A `fail` of the
    # chart's own is not: lint logs it and goes on, so test_values_that_cannot_work... covers those.)
    report = helm_python.lint(str(CHART), {**STANDALONE, "fullnameOverride": "Kafka_Metrics"}, strict=True,
                              kube_version="v1.33.0")
    assert any("Kafka_Metrics" in e and "DNS-1035" in e for e in report["errors"]), report


EXPECTED_KINDS = {
    "default-values.yaml": ["ConfigMap", "Deployment", "Service"],
    "sidecar-only-values.yaml": ["ConfigMap", "PodMonitor"],
    "standalone-values.yaml": ["ConfigMap", "Deployment", "Service", "ServiceMonitor"],
    "brokers-values.yaml": ["ConfigMap", "ConfigMap", "Deployment", "Deployment", "Service", "ServiceMonitor"],
    "cluster-wide-values.yaml": ["ConfigMap", "Deployment", "PrometheusRule", "Service", "ServiceMonitor"],
    "all-options-values.yaml": ["ConfigMap", "ConfigMap", "Deployment", "Job", "NetworkPolicy", "PodMonitor",
                                "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor"],
    "backfill-spark-operator-values.yaml": ["ConfigMap", "Deployment", "Service", "SparkApplication"],
}


@pytest.mark.parametrize("values_file", sorted(CI))
def test_every_rendered_manifest_passes_its_schema(values_file):
    docs = render(CI[values_file])
    assert sorted(d["kind"] for d in docs) == EXPECTED_KINDS[values_file]
    errors = [e for d in docs for e in manifest_errors(d)]
    assert errors == []


def test_the_schemas_refuse_what_kubernetes_refuses():
    # the checks above can fail: an unknown field, a wrong type, a bad interval
    docs = render(CI["all-options-values.yaml"])
    deployment = copy.deepcopy(one(docs, "Deployment"))
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFS"] = True
    assert manifest_errors(deployment)
    monitor = copy.deepcopy(one(docs, "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["scrapeInterval"] = "30s"
    assert crd_errors(monitor)
    monitor = copy.deepcopy(one(docs, "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["interval"] = "half a minute"
    assert crd_errors(monitor)
    rule = copy.deepcopy(one(docs, "PrometheusRule"))
    rule["spec"]["groups"][0]["rules"][0]["expression"] = "up == 0"
    assert crd_errors(rule)
    spark = copy.deepcopy(one(render(CI["backfill-spark-operator-values.yaml"]), "SparkApplication"))
    spark["spec"]["driver"]["cores"] = "one"
    assert crd_errors(spark)


@pytest.mark.parametrize("values_file", sorted(CI))
def test_the_rendered_config_file_is_one_the_sidecar_accepts(values_file, tmp_path):
    values, docs = CI[values_file], render(CI[values_file])
    # one config file per broker with `brokers`, each naming its broker
    sidecars = [(b["name"], b["hostPort"]) for b in values.get("brokers", [])] or [("", values.get("jmx", {}).get("hostPort"))]
    for broker, host_port in sidecars:
        path = tmp_path / "config.yml"
        path.write_text(config_file(docs, broker=broker))
        env = {**os.environ, **{n: "from-a-secret" for n in ("JMX_USERNAME", "JMX_PASSWORD", "TRUSTSTORE_PASSWORD")}}
        run = subprocess.run([*command(), "check-config", str(path)], capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 0, run.stderr
        assert "OK:" in run.stdout and "listening on 0.0.0.0:9404" in run.stdout
        if values.get("mode") == "cluster":
            assert "(sidecar.mode: cluster)" in run.stdout
        else:
            assert f"target service:jmx:rmi:///jndi/rmi://{host_port}/jmxrmi," in run.stdout


def test_config_file_of_the_standalone_mode():
    config = yaml.safe_load(config_file(render(CI["standalone-values.yaml"])))
    assert config["hostPort"] == "kafka-0.kafka-headless.kafka.svc.cluster.local:9999"
    assert config["username"] == "monitor"
    assert config["password"] == "${JMX_PASSWORD}"  # the value stays in the Secret
    assert config["sidecar"] == {"listenAddress": "0.0.0.0:9404", "pollIntervalSeconds": 15,
                                 "recompute": {"semantics": "kafka-3.7", "mode": "outdated"}}
    shipped = yaml.safe_load((REPO / "rules" / "kafka-health.yml").read_text())
    assert config["rules"] == shipped["rules"] and config["includeObjectNames"] == shipped["includeObjectNames"]


def test_config_file_of_the_cluster_mode():
    config = yaml.safe_load(config_file(render(CI["cluster-wide-values.yaml"])))
    assert "hostPort" not in config and "jmxUrl" not in config
    assert config["sidecar"]["mode"] == "cluster"
    assert config["sidecar"]["admin"] == {
        "bootstrapServers": "kafka-0.kafka-headless.kafka.svc:9092,kafka-1.kafka-headless.kafka.svc:9092"}
    shipped = yaml.safe_load((REPO / "rules" / "kafka-cluster.yml").read_text())
    assert config["rules"] == shipped["rules"]


def test_inline_rules_replace_the_shipped_ones():
    config = yaml.safe_load(config_file(render(CI["all-options-values.yaml"])))
    assert config["rules"] == [{"pattern": r"kafka.(\w+)<type=(.+), name=(.+)><>Value",
                                "name": "kafka_$1_$2_$3", "type": "GAUGE"}]
    assert "includeObjectNames" not in config
    assert config["ssl"] == {"trustStore": {
        "filename": "/etc/kafka-jmx-sidecar/secrets/truststore/truststore.p12", "password": "${TRUSTSTORE_PASSWORD}"}}
    assert config["sidecar"]["archive"] == {"directory": "/var/lib/kafka-jmx-sidecar/archive", "retentionHours": 168,
                                            "retentionSize": "10GiB", "keyframeIntervalSeconds": 300}


def test_an_existing_configmap_is_mounted_and_none_is_written():
    docs = render({**STANDALONE, "rules": {"existingConfigMap": "my-kafka-metrics", "existingConfigMapKey": "sidecar.yml"}})
    assert [d for d in docs if d["kind"] == "ConfigMap"] == []
    pod = one(docs, "Deployment")["spec"]["template"]["spec"]
    assert {"name": "kafka-jmx-sidecar-config", "configMap": {"name": "my-kafka-metrics"}} in pod["volumes"]
    mount = pod["containers"][0]["volumeMounts"][0]
    assert (mount["mountPath"], mount["subPath"]) == ("/etc/kafka-jmx-sidecar/config.yml", "sidecar.yml")


def test_secrets_are_referenced_never_written():
    docs = render(CI["all-options-values.yaml"])
    assert [d for d in docs if d["kind"] == "Secret"] == []
    container = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("valueFrom", {}).get("secretKeyRef") for e in container["env"]}
    assert env["JMX_PASSWORD"] == {"name": "kafka-jmx", "key": "password"}
    assert env["TRUSTSTORE_PASSWORD"] == {"name": "kafka-jmx-tls", "key": "truststore-password"}
    # neither in argv
    assert not any("password" in a.lower() for a in container["args"])
    assert container["args"][:4] == ["--config", "/etc/kafka-jmx-sidecar/config.yml",
                                     "--web.config.file", "/etc/kafka-jmx-sidecar/web/web-config.yml"]


def test_the_container_is_hardened_and_probed():
    for values_file in ("default-values.yaml", "all-options-values.yaml"):
        spec = one(render(CI[values_file]), "Deployment")["spec"]["template"]["spec"]
        c = spec["containers"][0]
        assert c["securityContext"] == {
            "runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False, "privileged": False, "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"}}
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert spec["automountServiceAccountToken"] is False
        assert c["ports"] == [{"name": "metrics", "containerPort": 9404, "protocol": "TCP"}]
        assert c["livenessProbe"]["httpGet"]["path"] == "/-/healthy"
        assert c["readinessProbe"]["httpGet"]["path"] == "/-/ready"
        # the only writable paths: /tmp and the archive directory
        writable = {m["mountPath"] for m in c["volumeMounts"] if not m.get("readOnly")}
        assert writable - {"/var/run/extra"} <= {"/tmp", "/var/lib/kafka-jmx-sidecar"}
    tls = one(render(CI["all-options-values.yaml"]), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert tls["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert c["image"].startswith("ghcr.io/kafka-jmx-sidecar/kafka-jmx-sidecar@sha256:")
    plain = one(render(CI["default-values.yaml"]), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert plain["image"] == "ghcr.io/kafka-jmx-sidecar/kafka-jmx-sidecar:0.1.0"


def test_scrape_annotations_and_monitors():
    docs = render(CI["all-options-values.yaml"])
    annotations = one(docs, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/port"] == "9404"
    assert annotations["prometheus.io/scheme"] == "https"
    sm = one(docs, "ServiceMonitor")
    assert sm["metadata"]["namespace"] == "monitoring" and sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    endpoint = sm["spec"]["endpoints"][0]
    assert (endpoint["port"], endpoint["interval"], endpoint["scrapeTimeout"], endpoint["scheme"]) == \
        ("metrics", "15s", "10s", "https")
    assert endpoint["relabelings"][0]["targetLabel"] == "node"
    assert endpoint["metricRelabelings"][0]["action"] == "drop"
    assert sm["spec"]["namespaceSelector"] == {"matchNames": ["kafka"]}
    service = one(docs, "Service")
    assert sm["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    pm = one(docs, "PodMonitor")
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert pm["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    sidecar = render(CI["sidecar-only-values.yaml"])
    assert one(sidecar, "PodMonitor")["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "kafka"}
    quiet = one(render({**STANDALONE, "scrapeAnnotations": {"enabled": False}}), "Deployment")
    assert not any(k.startswith("prometheus.io/") for k in quiet["spec"]["template"]["metadata"]["annotations"])


def test_the_prometheus_rule_embeds_the_rules_file_groups():
    plain = yaml.safe_load((CHART / "files" / "prometheus-rules.yaml").read_text())["groups"]
    assert one(render(CI["cluster-wide-values.yaml"]), "PrometheusRule")["spec"]["groups"] == plain
    groups = one(render(CI["all-options-values.yaml"]), "PrometheusRule")["spec"]["groups"]
    assert groups[:-1] == plain
    assert groups[-1] == {"name": "kjs-kafka-jmx-sidecar-additional", "rules": [{
        "alert": "KafkaUnderReplicatedPartitionsHigh",
        "expr": "sum(kafka_server_replicamanager_underreplicatedpartitions) > 10",
        "for": "10m", "labels": {"severity": "critical"}}]}


def test_the_dashboard_configmap_for_grafanas_sidecar():
    dashboard = json.loads((CHART / "files" / "dashboard.json").read_text())
    cm = one(render({**STANDALONE, "dashboard": {"enabled": True}}), "ConfigMap", "kjs-kafka-jmx-sidecar-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["kafka-jmx-sidecar.json"]) == dashboard
    custom = one(render({**STANDALONE, "dashboard": {"enabled": True, "labels": {"grafana_dashboard": "kafka"}}}),
                 "ConfigMap", "kjs-kafka-jmx-sidecar-dashboard")
    assert custom["metadata"]["labels"]["grafana_dashboard"] == "kafka"


def test_the_network_policy_admits_scrapes_of_the_metrics_port_only():
    policy = one(render(CI["all-options-values.yaml"]), "NetworkPolicy")
    assert policy["spec"]["ingress"] == [{"ports": [{"port": "metrics", "protocol": "TCP"}], "from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]}]
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["egress"][1]["ports"] == [{"port": 9999, "protocol": "TCP"}, {"port": 9092, "protocol": "TCP"}]


def test_the_backfill_job_runs_backfill_between_two_volumes():
    job = one(render(CI["all-options-values.yaml"]), "Job")
    pod = job["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["image"] == "ghcr.io/kafka-jmx-sidecar/kafka-jmx-sidecar-backfill:0.1.0"
    assert c["args"] == ["--input", "/data/input/dumps", "--output", "/data/output/out", "--semantics", "kafka-3.7",
                         "--step", "15s", "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-02T00:00:00Z",
                         "--import", "/data/prometheus/data", "--conf", "spark.sql.shuffle.partitions=8"]
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v}
    assert claims == {"input": "kafka-describe-dumps", "output": "kafka-backfill", "prometheus-data": "prometheus-data"}
    assert pod["restartPolicy"] == "Never" and c["securityContext"]["readOnlyRootFilesystem"] is True
    without_import = copy.deepcopy(CI["all-options-values.yaml"])
    without_import["backfill"]["import"]["enabled"] = False
    args = one(render(without_import), "Job")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--import" not in args


def test_the_spark_application_runs_the_same_arguments():
    spark = one(render(CI["backfill-spark-operator-values.yaml"]), "SparkApplication")
    assert spark["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    assert spark["spec"]["type"] == "Python" and spark["spec"]["mainApplicationFile"].endswith("kafka_jmx_sidecar/exporter/commands/spark_submit.py")
    assert spark["spec"]["arguments"] == ["--input", "/data/input/dumps", "--output", "/data/output/backfill",
                                          "--semantics", "kafka-3.7", "--step", "15s"]
    assert spark["spec"]["image"] == "registry.example.com/kafka-jmx-sidecar-spark:0.1.0"
    without_image = copy.deepcopy(CI["backfill-spark-operator-values.yaml"])
    del without_image["backfill"]["sparkOperator"]["image"]
    with pytest.raises(helm_python.HelmError, match="backfill.sparkOperator.image"):
        render(without_image)


@pytest.mark.parametrize("values, says", [
    ({"mode": "broker"}, "at '/mode': value must be one of 'standalone', 'cluster', 'sidecar'"),
    # values.schema.json: a misspelt key is refused rather than silently ignored
    ({**STANDALONE, "serviceMonitor": {"enable": True}}, "at '/serviceMonitor': additional properties 'enable' not allowed"),
    ({**STANDALONE, "containerPort": "9404"}, "at '/containerPort'"),
    ({"mode": "standalone"}, "set jmx.hostPort"),
    ({"mode": "sidecar"}, "set jmx.hostPort"),
    ({"mode": "cluster"}, "set admin.bootstrapServers"),
    ({"mode": "cluster", "admin": {"bootstrapServers": "k:9092"}, "jmx": {"hostPort": "k:9999"}},
     "leave jmx.hostPort and jmx.url empty"),
    ({**STANDALONE, "backfill": {"enabled": True}}, "backfill.input.claimName"),
    ({**STANDALONE, "rules": {"inline": "hostPort: kafka-0:9999\nrules: []\n"}},
     "rules.inline: hostPort: the chart writes the connection"),
])
def test_values_that_cannot_work_are_refused_with_the_fix(values, says):
    with pytest.raises(helm_python.HelmError) as e:
        render(values)
    assert says in str(e.value)


def test_custom_resources_are_the_four_kinds_with_schemas():
    docs = [d for v in CI.values() for d in render(v)]
    assert {d["kind"] for d in docs if is_custom(d)} == {"ServiceMonitor", "PodMonitor", "PrometheusRule",
                                                           "SparkApplication"}


@pytest.mark.parametrize("rule_file", ["strimzi-kafka-metrics.yml", "confluent-kafka-broker.yml"])
def test_strimzis_and_confluents_rule_files_pasted_into_rules_inline_load(rule_file, tmp_path):
    from tests.exporter.refdump import RULES
    text = (RULES / rule_file).read_text()
    config = config_file(render({**STANDALONE, "rules": {"inline": text}}))
    # the rules document follows the chart's keys, without its leading `---` (Confluent's has one)
    assert config.rstrip().endswith(text.strip().removeprefix("---").strip())
    path = tmp_path / "config.yml"
    path.write_text(config)
    run = subprocess.run([*command(), "check-config", str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    rules = len(yaml.safe_load(text)["rules"])
    assert f"OK: {rules} rule(s)" in run.stdout
