"""jmx_exporter 1.x's `openTelemetry:` block as the sidecar reads it: jmx_exporter's keys, types and
defaults (its OpenTelemetryExporterFactory, client_java's OpenTelemetryExporter), OpenTelemetry's
environment variables over the file as client_java puts them, and errors that name file, line
and key (unknown keys among them, which jmx_exporter would ignore)."""
from __future__ import annotations

from io import StringIO

import pytest

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigErrors
from kafka_jmx_sidecar.exporter.commands.serve import check_config
from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.exporter.otlp.settings import OtlpSettings, effective, otlp_settings
from kafka_jmx_sidecar.exporter.poll.reload import plan
from kafka_jmx_sidecar.exporter.rule_engine import parse_config

HEAD = "hostPort: 127.0.0.1:9999\n"


def settings(block: str, env: dict | None = None) -> OtlpSettings | None:
    return otlp_settings(parse_config(HEAD + block, "F", env=env or {}).file)


def test_no_block_no_push_and_an_empty_block_pushes_with_jmx_exporters_defaults():
    assert settings("rules: []\n") is None
    empty = settings("openTelemetry:\n")
    assert empty == OtlpSettings()
    push = effective(empty, {}, "broker-1:9999")
    assert (push.protocol, push.endpoint, push.interval_seconds, push.timeout_seconds, push.preserve_names) == (
        "grpc", "http://localhost:4317", 60, 10, False)
    assert push.resource == {"service.name": "kafka-jmx-sidecar", "service.instance.id": "broker-1:9999"}
    http = effective(settings("openTelemetry:\n  protocol: http/protobuf\n"), {}, "b")
    assert http.endpoint == "http://localhost:4318/v1/metrics"


def test_every_key_read_as_jmx_exporter_reads_it():
    s = settings("""openTelemetry:
  endpoint: http://prometheus:9090/api/v1/otlp
  protocol: http/protobuf
  interval: "15"
  timeoutSeconds: 5
  preserveNames: true
  headers: {Authorization: "${TOKEN}"}
  resourceAttributes: {deployment.environment: prod, rack: 3}
  serviceInstanceId: broker-1
  serviceNamespace: kafka
  serviceName: orders
  serviceVersion: 4.1.1
""", env={"TOKEN": "Bearer s3cret"})
    assert s.headers == {"Authorization": "Bearer s3cret"}  # from the environment, never written in the file
    assert "s3cret" not in repr(s)
    push = effective(s, {}, "ignored")
    # http/protobuf: the receiver's metrics path is added, as client_java adds it
    assert push.endpoint == "http://prometheus:9090/api/v1/otlp/v1/metrics"
    assert (push.interval_seconds, push.timeout_seconds, push.preserve_names) == (15, 5, True)
    assert push.resource == {"service.name": "orders", "service.namespace": "kafka", "service.instance.id": "broker-1",
                             "service.version": "4.1.1", "deployment.environment": "prod", "rack": "3"}


def test_opentelemetry_variables_win_over_the_file():
    s = settings("openTelemetry:\n  endpoint: http://file:4317\n  interval: 60\n  serviceName: from-file\n"
                 "  headers: {a: from-file}\n  resourceAttributes: {zone: a, rack: r1}\n")
    push = effective(s, {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318/",
                         "OTEL_METRIC_EXPORT_INTERVAL": "5000", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
                         "OTEL_EXPORTER_OTLP_HEADERS": "b=from%20env", "OTEL_SERVICE_NAME": "from-env",
                         "OTEL_RESOURCE_ATTRIBUTES": "zone=b"}, "i")
    assert (push.protocol, push.endpoint, push.interval_seconds, push.timeout_seconds) == (
        "http/protobuf", "http://env:4318/v1/metrics", 5, 2)
    assert push.headers == {"b": "from env"}
    assert push.resource == {"service.name": "from-env", "service.instance.id": "i", "zone": "b", "rack": "r1"}
    # the metrics-only variable before the general one
    assert effective(s, {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:4317",
                         "OTEL_EXPORTER_OTLP_ENDPOINT": "http://g:4317"}, "i").endpoint == "http://m:4317"
    with pytest.raises(ConfigError) as wrong:
        effective(s, {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "i")
    assert str(wrong.value) == ("environment: OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' is not a protocol the push "
                                "speaks; set it to grpc or http/protobuf")


def test_every_wrong_key_named_with_its_line_in_one_run():
    with pytest.raises(ConfigErrors) as failure:
        settings("openTelemetry:\n  endpont: http://x:4317\n  protocol: http/json\n  interval: 0\n"
                 "  timeoutSeconds: 1.5\n  endpoint: collector:4317\n  preserveNames: yes please\n"
                 "  headers: [a]\n  serviceName: '  '\n")
    assert [str(e) for e in failure.value.errors] == [
        "F:3: openTelemetry.endpont: unknown setting; use one of endpoint, headers, interval, preserveNames, protocol, "
        "resourceAttributes, serviceInstanceId, serviceName, serviceNamespace, serviceVersion, timeoutSeconds",
        "F:4: openTelemetry.protocol: must be one of grpc, http/protobuf, got 'http/json'; write grpc or http/protobuf",
        "F:5: openTelemetry.interval: must be a whole number of seconds > 0, got 0; write a number such as 60",
        "F:6: openTelemetry.timeoutSeconds: must be a whole number of seconds > 0, got 1.5; write a number such as 10",
        "F:7: openTelemetry.endpoint: must be an http:// or https:// URL, got 'collector:4317'; write the receiver's "
        "URL, such as http://otel-collector:4317 (grpc) or http://prometheus:9090/api/v1/otlp (http/protobuf)",
        "F:8: openTelemetry.preserveNames: must be true or false, got 'yes please'; set preserveNames to true or false",
        "F:9: openTelemetry.headers: must be a mapping of names to text values, got ['a']; write one `name: value` "
        "line per header under it",
        "F:10: openTelemetry.serviceName: must be a text value, got '  '; set serviceName to a text value",
    ]


def test_a_header_from_an_unset_variable_is_refused():
    with pytest.raises(ConfigError) as failure:
        settings("openTelemetry:\n  headers:\n    Authorization: ${NO_SUCH_TOKEN}\n")
    assert str(failure.value) == ("F:4: openTelemetry.headers.Authorization: environment variable NO_SUCH_TOKEN is "
                                  "not set; export NO_SUCH_TOKEN in the sidecar's environment or write the value itself")


def test_check_config_names_the_push_and_the_block_is_no_longer_ignored(tmp_path):
    path = tmp_path / "exporter.yml"
    path.write_text(HEAD + "openTelemetry:\n  endpoint: http://prometheus:9090/api/v1/otlp\n  protocol: http/protobuf\n")
    out, err = StringIO(), StringIO()
    assert check_config(str(path), out, err) == 0, err.getvalue()
    assert err.getvalue() == ""  # no "ignored" warning any more
    assert out.getvalue().splitlines()[-1] == (f"{path}: OK: openTelemetry, pushing to "
                                               "http://prometheus:9090/api/v1/otlp/v1/metrics (http/protobuf) every 60 s")
    path.write_text(HEAD + "openTelemetry:\n  interval: -1\n")
    out, err = StringIO(), StringIO()
    assert check_config(str(path), out, err) == 2
    assert err.getvalue().startswith(f"{path}:3: openTelemetry.interval: must be a whole number")


def test_a_changed_block_waits_for_a_restart(tmp_path):
    path = tmp_path / "exporter.yml"
    path.write_text(HEAD + "openTelemetry:\n  interval: 60\n")
    running = load(str(path))
    path.write_text(HEAD + "openTelemetry:\n  interval: 5\n")
    assert plan(running.settings, running.config, load(str(path))).restart == ("openTelemetry",)
    path.write_text(HEAD)  # removed: the push goes on until a restart too
    assert plan(running.settings, running.config, load(str(path))).restart == ("openTelemetry",)
    path.write_text(HEAD + "openTelemetry:\n  interval: 60\n")
    assert plan(running.settings, running.config, load(str(path))).restart == ()
