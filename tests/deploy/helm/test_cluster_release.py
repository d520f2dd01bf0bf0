"""One release for a whole Kafka cluster: `brokers` (a list, or the pods behind a headless Service)
renders one sidecar per broker, and examples/strimzi-values.yaml gives a 3-broker Strimzi cluster's
series the labels Strimzi's Grafana dashboards select on.

The labels are proven with a real Prometheus: each rendered sidecar pod becomes a target carrying
the meta labels Kubernetes service discovery gives a pod (its rendered labels and annotations; for a
ServiceMonitor also the rendered Service's, and only if that Service selects the pod), relabelled
by the rules the prometheus-operator writes for the rendered monitor followed by the monitor's own
`relabelings`, converted 1:1 as the operator does. The targets' ports are closed, so every scrape
fails at once and writes `up` with all the target's labels: the dashboards' variables and label
matchers then run as PromQL over `up`."""
from __future__ import annotations

import re
import time
from collections.abc import Iterator

import helm_python
import pytest
import yaml

from tests.deploy.helm.chart import CHART, manifest_errors, one, render
from tests.e2e.prometheus_server import Prometheus

EXAMPLE = yaml.safe_load((CHART / "examples" / "strimzi-values.yaml").read_text())
RELEASE, CLUSTER, NAMESPACE = "my-cluster-metrics", "my-cluster", "kafka"
BROKER_PODS = ["my-cluster-kafka-0", "my-cluster-kafka-1", "my-cluster-kafka-2"]
SIDECAR_NODE_IP = "10.0.9.9"  # the node the sidecar pods run on: never the broker's node_ip

# Facts of Strimzi's examples/metrics/grafana-dashboards/strimzi-kafka.json: its variables are read
# with these regexes off the series of a query (Grafana's query_result), and its panels select with
# these label matchers (the metric names left out: a target's labels are on every series it has).
VARIABLES = {"kubernetes_namespace": r'.*namespace="([^"]*).*',
             "strimzi_cluster_name": r'.*strimzi_io_cluster="([^"]*).*',
             "kafka_broker": r'.*pod_name="{strimzi_cluster_name}-([^"]*).*'}
PANELS = {  # Brokers Online, Under Replicated Partitions, ...: the whole cluster
    "cluster": 'namespace="{kubernetes_namespace}",strimzi_io_cluster="{strimzi_cluster_name}"',
    # Log Size, Connection Count per Listener, ...: one broker (or all: ".*")
    "broker": 'namespace="{kubernetes_namespace}",strimzi_io_cluster="{strimzi_cluster_name}",'
              'kubernetes_pod_name=~"{strimzi_cluster_name}-{kafka_broker}"',
    # JVM Memory Used, JVM GC Time, ...: the labels hold, though their jvm_* series come from
    # jmx_exporter's agent in the broker's JVM, which the sidecar is not
    "jvm": 'namespace="{kubernetes_namespace}",kubernetes_pod_name=~"{strimzi_cluster_name}-{kafka_broker}",'
           'strimzi_io_name="{strimzi_cluster_name}-kafka"'}


def sanitize(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def pod_targets(docs: list[dict], ports: Iterator[int]) -> list[dict]:
    """The meta labels Kubernetes SD (role pod) gives each rendered Deployment's one pod."""
    targets = []
    for deployment in (d for d in docs if d["kind"] == "Deployment"):
        template = deployment["spec"]["template"]
        [container] = template["spec"]["containers"]
        name = f"{deployment['metadata']['name']}-5d8f9c7b6-x{len(targets)}"
        meta = {"__address__": f"127.0.0.1:{next(ports)}", "__meta_kubernetes_namespace": deployment["metadata"]["namespace"],
                "__meta_kubernetes_pod_name": name, "__meta_kubernetes_pod_phase": "Running",
                "__meta_kubernetes_pod_host_ip": SIDECAR_NODE_IP, "__meta_kubernetes_pod_node_name": "node-9",
                "__meta_kubernetes_pod_container_name": container["name"],
                "__meta_kubernetes_pod_container_port_name": container["ports"][0]["name"],
                "__meta_kubernetes_pod_container_port_number": str(container["ports"][0]["containerPort"])}
        for kind, values in (("label", template["metadata"]["labels"]), ("annotation", template["metadata"]["annotations"])):
            for key, value in values.items():
                meta[f"__meta_kubernetes_pod_{kind}_{sanitize(key)}"] = str(value)
                meta[f"__meta_kubernetes_pod_{kind}present_{sanitize(key)}"] = "true"
        targets.append(meta)
    return targets


def endpoint_targets(docs: list[dict], ports: Iterator[int]) -> list[dict]:
    """Role endpoints: the pods the rendered Service selects, with the Service's meta labels too."""
    service = one(docs, "Service")
    [port] = service["spec"]["ports"]
    targets = []
    for meta in pod_targets(docs, ports):
        if all(meta.get(f"__meta_kubernetes_pod_label_{sanitize(k)}") == v for k, v in service["spec"]["selector"].items()):
            meta.update({"__meta_kubernetes_service_name": service["metadata"]["name"],
                         "__meta_kubernetes_endpoint_port_name": port["name"],
                         "__meta_kubernetes_endpoint_address_target_kind": "Pod",
                         "__meta_kubernetes_endpoint_address_target_name": meta["__meta_kubernetes_pod_name"]})
            for key, value in service["metadata"]["labels"].items():
                meta[f"__meta_kubernetes_service_label_{sanitize(key)}"] = value
                meta[f"__meta_kubernetes_service_labelpresent_{sanitize(key)}"] = "true"
            targets.append(meta)
    return targets


def keep(source: str, value: str) -> dict:
    return {"action": "keep", "source_labels": [f"{source}_label_{sanitize(value[0])}",
                                                f"{source}_labelpresent_{sanitize(value[0])}"], "regex": f"({value[1]});true"}


def converted(relabelings: list[dict]) -> list[dict]:
    """A monitor's `relabelings` as the operator writes them into relabel_configs."""
    keys = {"sourceLabels": "source_labels", "targetLabel": "target_label", "separator": "separator",
            "regex": "regex", "replacement": "replacement", "action": "action", "modulus": "modulus"}
    return [{keys[k]: (v.lower() if k == "action" else v) for k, v in rule.items()} for rule in relabelings]


def operator_relabel_configs(monitor: dict) -> list[dict]:
    """The rules the prometheus-operator writes ahead of a monitor's own (its ConfigGenerator:
    selector and port kept, namespace/pod/container (and service) labels, job, endpoint)."""
    spec, meta = monitor["spec"], monitor["metadata"]
    pods = monitor["kind"] == "PodMonitor"
    [endpoint] = spec["podMetricsEndpoints" if pods else "endpoints"]
    selected = "__meta_kubernetes_pod" if pods else "__meta_kubernetes_service"
    rules = [{"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"},
             {"action": "drop", "source_labels": ["__meta_kubernetes_pod_phase"], "regex": "(Failed|Succeeded)"},
             *[keep(selected, item) for item in sorted(spec["selector"]["matchLabels"].items())],
             {"action": "keep", "source_labels": ["__meta_kubernetes_pod_container_port_name" if pods
                                                  else "__meta_kubernetes_endpoint_port_name"], "regex": endpoint["port"]},
             {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"}]
    if not pods:
        rules.append({"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"})
    rules += [{"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
              {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
              {"target_label": "job", "replacement": f"{meta['namespace']}/{meta['name']}"} if pods else
              {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job", "replacement": "${1}"}]
    if spec.get("jobLabel"):
        rules.append({"source_labels": [f"{selected}_label_{sanitize(spec['jobLabel'])}"], "target_label": "job",
                      "regex": "(.+)", "replacement": "${1}"})
    rules.append({"target_label": "endpoint", "replacement": endpoint["port"]})
    return rules + converted(endpoint.get("relabelings", []))


def scrape_config(case: str, values: dict, ports: Iterator[int]) -> dict:
    docs = render(values, release=RELEASE)
    [monitor] = [d for d in docs if d["kind"] in ("PodMonitor", "ServiceMonitor")]
    targets = pod_targets(docs, ports) if monitor["kind"] == "PodMonitor" else endpoint_targets(docs, ports)
    return {"job_name": case, "scrape_interval": "1s", "scrape_timeout": "1s",
            "static_configs": [{"targets": [t.pop("__address__")], "labels": {**t, "test_case": case}} for t in targets],
            "relabel_configs": operator_relabel_configs(monitor)}


def with_monitor(kind: str, **changes) -> dict:
    other = {"podMonitor": "serviceMonitor", "serviceMonitor": "podMonitor"}[kind]
    return {**EXAMPLE, kind: {**EXAMPLE["podMonitor"], "enabled": True, **changes}, other: {"enabled": False}}


LIST = {**EXAMPLE, "brokers": [
    {"name": "kafka-0", "hostPort": "kafka-0.kafka-headless.kafka-prod.svc:9999", "namespace": "kafka-prod",
     "nodeIp": "10.0.1.7"},
    {"name": "kafka-1", "hostPort": "kafka-1.kafka-headless.kafka-prod.svc:9999", "namespace": "kafka-prod"}]}
CASES = {"podmonitor": (EXAMPLE, 3), "servicemonitor": (with_monitor("serviceMonitor"), 3),
         "list": (LIST, 2), "without": (with_monitor("podMonitor", strimziLabels=False), 3)}


@pytest.fixture(scope="module")
def prometheus():
    ports = iter(range(1, 100))  # closed ports on the loopback: each scrape fails at once
    server = Prometheus(None, scrape_configs=[scrape_config(case, values, ports) for case, (values, _) in CASES.items()])
    try:
        expected = sum(n for _, n in CASES.values())
        deadline = time.monotonic() + 30  # the discovery manager hands targets over every 5 s
        while server.value("count(up)") != expected and time.monotonic() < deadline:
            time.sleep(0.2)
        assert server.value("count(up)") == expected, server.target_health()
        yield server
    finally:
        server.stop()


def query_result(prometheus: Prometheus, selector: str) -> list[str]:
    """Grafana's query_result(up{...}): one line per series, `name{label="value", ...} value`."""
    lines = []
    for series in prometheus.query(f"up{{{selector}}}"):
        labels = ", ".join(f'{k}="{v}"' for k, v in sorted(series["metric"].items()) if k != "__name__")
        lines.append(f'up{{{labels}}} {series["value"][1]}')
    return lines


def variable(prometheus: Prometheus, name: str, selector: str, **known) -> set[str]:
    regex = re.compile(VARIABLES[name].format(**known))
    return {m.group(1) for line in query_result(prometheus, selector) if (m := regex.match(line))}


@pytest.mark.parametrize("case", ["podmonitor", "servicemonitor"])
def test_strimzis_dashboard_finds_each_broker_of_the_release(prometheus, case):
    # the dashboard's variables, read off the series as Grafana reads them
    this = f'test_case="{case}"'
    [namespace] = variable(prometheus, "kubernetes_namespace", this)
    [cluster] = variable(prometheus, "strimzi_cluster_name", f'{this},namespace="{namespace}"')
    assert (namespace, cluster) == (NAMESPACE, CLUSTER)
    known = {"kubernetes_namespace": namespace, "strimzi_cluster_name": cluster}
    brokers = variable(prometheus, "kafka_broker", f'{this},namespace="{namespace}",strimzi_io_cluster="{cluster}"',
                       **known)
    assert sorted(f"{cluster}-{b}" for b in brokers) == BROKER_PODS  # the BROKERS' pods, not the sidecars'
    # every panel finds the three brokers, and one broker each when one is chosen
    for panel, matchers in PANELS.items():
        assert prometheus.value(f'count(up{{{this},{matchers.format(**known, kafka_broker=".*")}}})') == 3, panel
        for broker in brokers if "{kafka_broker}" in matchers else ():
            assert prometheus.value(f'count(up{{{this},{matchers.format(**known, kafka_broker=broker)}}})') == 1, panel
    # one job for all the brokers; Strimzi's kind; no node_ip (the sidecar's node is not the broker's)
    assert prometheus.value(f"count(count by (job) (up{{{this}}}))") == 1
    assert prometheus.value(f'count(up{{{this},strimzi_io_kind="Kafka"}})') == 3
    assert prometheus.value(f'count(up{{{this},node_ip!=""}})') is None
    assert prometheus.value(f'count(up{{{this},pod=~"{RELEASE}-kafka-jmx-sidecar-.+"}})') == 3  # the scraped pod stays


def test_a_listed_brokers_namespace_and_node_ip_reach_its_series(prometheus):
    [series] = prometheus.query('up{test_case="list",kubernetes_pod_name="kafka-0"}')
    assert (series["metric"]["namespace"], series["metric"]["node_ip"]) == ("kafka-prod", "10.0.1.7")
    [series] = prometheus.query('up{test_case="list",kubernetes_pod_name="kafka-1"}')
    assert series["metric"]["namespace"] == "kafka-prod" and "node_ip" not in series["metric"]


def test_without_strimzi_labels_the_dashboard_finds_nothing(prometheus):
    # the check above can fail: the same release without strimziLabels has no series the panels select
    assert prometheus.value('count(up{test_case="without"})') == 3
    known = {"kubernetes_namespace": NAMESPACE, "strimzi_cluster_name": CLUSTER, "kafka_broker": ".*"}
    for matchers in PANELS.values():
        assert prometheus.value(f'count(up{{test_case="without",{matchers.format(**known)}}})') is None


def test_the_strimzi_example_is_one_release_of_three_sidecars():
    docs = render(EXAMPLE, release=RELEASE)
    assert [e for d in docs for e in manifest_errors(d)] == []
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    assert [d["metadata"]["name"] for d in deployments] == [f"{RELEASE}-kafka-jmx-sidecar-{p}" for p in BROKER_PODS]
    for deployment, pod in zip(deployments, BROKER_PODS):
        config = yaml.safe_load(one(docs, "ConfigMap", deployment["metadata"]["name"])["data"]["config.yml"])
        assert config["hostPort"] == f"{pod}.my-cluster-kafka-brokers.kafka.svc:9999"
        template = deployment["spec"]["template"]
        # Strimzi's selectors, network policies and PodMonitor must not take a sidecar for a broker
        assert not [k for k in template["metadata"]["labels"] if k.startswith("strimzi.io/")]
        assert deployment["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
        mounted = {v["name"]: v.get("configMap", {}).get("name") for v in template["spec"]["volumes"]}
        assert mounted["kafka-jmx-sidecar-config"] == deployment["metadata"]["name"]
    # each Deployment's selector takes its own pods only
    for deployment in deployments:
        selector = deployment["spec"]["selector"]["matchLabels"].items()
        assert [d for d in deployments if selector <= d["spec"]["template"]["metadata"]["labels"].items()] == [deployment]


@pytest.mark.parametrize("service, hosts", [
    ({"podNamePrefix": "my-cluster-broker", "ids": [3, 4, 5]},  # a KafkaNodePool's node ids
     ["my-cluster-broker-3", "my-cluster-broker-4", "my-cluster-broker-5"]),
    ({"podNames": ["my-cluster-pool-a-0", "my-cluster-pool-b-10"], "clusterDomain": "cluster.local"},
     ["my-cluster-pool-a-0", "my-cluster-pool-b-10"]),
])
def test_a_headless_services_pods_are_named_at_render_time(service, hosts):
    values = {"brokers": {"headlessService": {"name": "my-cluster-kafka-brokers", "port": 9999, **service}}}
    configs = [yaml.safe_load(d["data"]["config.yml"]) for d in render(values) if d["kind"] == "ConfigMap"]
    suffix = ".cluster.local" if "clusterDomain" in service else ""
    assert [c["hostPort"] for c in configs] == [f"{h}.my-cluster-kafka-brokers.kafka.svc{suffix}:9999" for h in hosts]


def test_jmx_host_port_alone_is_one_sidecar_under_the_releases_names():
    docs = render({"jmx": {"hostPort": "kafka-0:9999"}, "podMonitor": {"enabled": True}})
    deployment = one(docs, "Deployment")
    assert deployment["metadata"]["name"] == one(docs, "ConfigMap")["metadata"]["name"] == "kjs-kafka-jmx-sidecar"
    assert deployment["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "kafka-jmx-sidecar",
                                                             "app.kubernetes.io/instance": "kjs"}
    assert not [k for k in deployment["spec"]["template"]["metadata"]["labels"] if k.startswith("kafka-jmx-sidecar/")]
    assert "relabelings" not in one(docs, "PodMonitor")["spec"]["podMetricsEndpoints"][0]


HEADLESS = {"name": "my-cluster-kafka-brokers", "podNamePrefix": "my-cluster-kafka", "replicas": 3, "port": 9999}


@pytest.mark.parametrize("values, says", [
    ({"brokers": [{"name": "kafka-0", "hostPort": "a:9999"}, {"name": "kafka-0", "hostPort": "b:9999"}]},
     'brokers[1]: the name "kafka-0" is brokers[0]\'s too'),
    ({"brokers": [{"name": "kafka-0", "hostPort": "a:9999"}, {"name": "kafka-1", "hostPort": "a:9999"}]},
     'brokers[1]: the hostPort "a:9999" is brokers[0]\'s too'),
    ({"brokers": [{"name": "kafka-0", "hostPort": "a:9999"}, {"name": "kafka-1", "hostPort": "b:9999", "podName": "kafka-0"}]},
     'brokers[1]: the podName "kafka-0" is brokers[0]\'s too'),
    ({"brokers": {"headlessService": {**HEADLESS, "replicas": None, "ids": [0, 1, 1]}}},
     'brokers.headlessService.ids[2]: the name "my-cluster-kafka-1" is brokers.headlessService.ids[1]\'s too'),
    ({"brokers": [{"name": "kafka-0", "hostPort": "a:9999"}], "jmx": {"hostPort": "kafka-0:9999"}},
     "values: brokers and jmx.hostPort/jmx.url: set one of them"),
    ({"brokers": {"headlessService": HEADLESS}, "jmx": {"hostPort": "kafka-0:9999"}},
     "values: brokers and jmx.hostPort/jmx.url: set one of them"),
    ({"brokers": {"headlessService": {**HEADLESS, "port": None}}}, "brokers.headlessService.port: set"),
    ({"brokers": [{"name": "kafka-0"}]}, "brokers[0] (kafka-0): set its hostPort"),
    ({"brokers": [{"name": "Kafka_0", "hostPort": "a:9999"}]}, 'brokers[0]: the broker\'s name "Kafka_0"'),
    ({"brokers": [{"name": "kafka-0", "hostPort": "a:9999", "host": "a"}]}, "at '/brokers/0': additional properties 'host'"),
    ({"brokers": {"headlessService": HEADLESS}, "podMonitor": {"enabled": True, "strimziLabels": True}},
     "podMonitor.strimziLabels: set kafkaCluster.name"),
    ({"jmx": {"hostPort": "kafka-0:9999"}, "kafkaCluster": {"name": "c"},
      "serviceMonitor": {"enabled": True, "strimziLabels": True}}, "serviceMonitor.strimziLabels: the labels name each broker's pod"),
    ({"brokers": {"headlessService": HEADLESS}, "mode": "cluster", "admin": {"bootstrapServers": "k:9092"}},
     "brokers: only the standalone mode"),
])
def test_brokers_that_cannot_work_are_refused_naming_the_value(values, says):
    values = {k: ({**v, "headlessService": {a: b for a, b in v["headlessService"].items() if b is not None}}
                  if k == "brokers" and isinstance(v, dict) else v) for k, v in values.items()}
    with pytest.raises(helm_python.HelmError) as e:
        render(values)
    assert says in str(e.value)
