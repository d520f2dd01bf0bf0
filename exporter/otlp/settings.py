"""jmx_exporter 1.x's `openTelemetry:` block: push the series to an OTLP receiver.

    openTelemetry:
      endpoint: http://prometheus:9090/api/v1/otlp   # default: grpc http://localhost:4317,
                                                     #   http/protobuf http://localhost:4318/v1/metrics
      protocol: http/protobuf      # or grpc (the default)
      interval: 60                 # seconds between the starts of two pushes
      timeoutSeconds: 10           # one push (its retries included)
      preserveNames: false         # true: a counter keeps the `_total` it is served with
      headers: {Authorization: "${OTLP_TOKEN}"}   # ${NAME}: from the environment
      resourceAttributes: {deployment.environment: prod}
      serviceName: kafka           # service.name; serviceNamespace, serviceInstanceId, serviceVersion alike

The keys, their types and defaults are jmx_exporter's (its OpenTelemetryExporterFactory and the
client_java OpenTelemetryExporter it builds), and so is the precedence of OpenTelemetry's
environment variables, which win over the file (`effective`). An empty block pushes with every
default. Unlike jmx_exporter, an unknown key is an error, and so is a protocol other than the two.
Its keys: OPEN_TELEMETRY below (the reference and the JSON Schema are made from it).
"""
from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Mapping

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile
from kafka_jmx_sidecar.exporter.base.definitions import RESTART, Block, Key, choice, custom
from kafka_jmx_sidecar.exporter.base.java_text import java_str

KEY = "openTelemetry"
GRPC, HTTP = "grpc", "http/protobuf"
PROTOCOLS = (GRPC, HTTP)
DEFAULT_ENDPOINTS = {GRPC: "http://localhost:4317", HTTP: "http://localhost:4318/v1/metrics"}
DEFAULT_INTERVAL_SECONDS = 60
DEFAULT_TIMEOUT_SECONDS = 10
_INT_MAX = 2**31 - 1  # a Java int
_JAVA_INT = re.compile(r"[+-]?\d+")  # what Integer.parseInt takes


@dataclass(frozen=True)
class OtlpSettings:
    """The block as written (None: not given); `effective` adds the environment and the defaults."""

    endpoint: str | None = None
    protocol: str | None = None
    interval: int | None = None
    timeout_seconds: int | None = None
    preserve_names: bool = False
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold credentials
    resource_attributes: Mapping[str, str] = field(default_factory=dict)
    service_instance_id: str | None = None
    service_namespace: str | None = None
    service_name: str | None = None
    service_version: str | None = None


@dataclass(frozen=True)
class Push:
    """What the pusher does: the block, then OpenTelemetry's environment variables over it, then
    the defaults."""

    protocol: str
    endpoint: str
    interval_seconds: int
    timeout_seconds: int
    preserve_names: bool
    headers: Mapping[str, str] = field(repr=False)
    resource: Mapping[str, str]


def _scalar(v: Any) -> bool:
    return v is not None and not isinstance(v, (dict, list)) and bool(java_str(v).strip())


def _url(v: Any) -> bool:
    url = urllib.parse.urlsplit(java_str(v)) if _scalar(v) else None
    return url is not None and url.scheme in ("http", "https") and bool(url.hostname)


def _seconds(v: Any) -> bool:  # what Integer.parseInt takes, > 0
    text = "" if isinstance(v, (bool, float)) or not _scalar(v) else java_str(v)
    return bool(_JAVA_INT.fullmatch(text)) and 1 <= int(text) <= _INT_MAX


def _pairs(v: Any) -> bool:  # names not blank, values not empty (jmx_exporter's ValidMap)
    return isinstance(v, dict) and all(_scalar(k) and v[k] is not None and not isinstance(v[k], (dict, list))
                                       and java_str(v[k]) != "" for k in v)


_TEXT = custom("a text value", _scalar, {"type": ["string", "number", "boolean"]}, java_str)
_SECONDS = custom("a whole number of seconds > 0", _seconds, {"type": ["integer", "string"], "pattern": r"^\+?\d+$",
                                                               "minimum": 1}, lambda v: int(java_str(v)))
_PAIRS = custom("a mapping of names to text values", _pairs, {"type": "object", "additionalProperties": {
    "type": ["string", "number", "boolean"]}}, lambda v: {java_str(k): java_str(x) for k, x in v.items()})
_URL_FIX = ("write the receiver's URL, such as http://otel-collector:4317 (grpc) or "
            "http://prometheus:9090/api/v1/otlp (http/protobuf)")
OPEN_TELEMETRY = Block((KEY,), "Push the series /metrics serves to an OTLP receiver every `interval` seconds, "
                       "as jmx_exporter 1.x does (docs/otlp.md). An empty block pushes with every default; "
                       "OpenTelemetry's OTEL_* environment variables win over these keys.", keys=(
    Key("endpoint", custom("an http:// or https:// URL", _url, {"type": "string", "pattern": "^https?://"}, java_str),
        "The receiver; with http/protobuf, /v1/metrics is added unless the URL ends with it.",
        default_doc="http://localhost:4317 (grpc), http://localhost:4318/v1/metrics (http/protobuf)", fix=_URL_FIX),
    Key("protocol", choice(*PROTOCOLS), "How the push is sent.", default_doc=GRPC, fix=f"write {GRPC} or {HTTP}"),
    Key("interval", _SECONDS, "Seconds from the start of one push to the start of the next.",
        default_doc=str(DEFAULT_INTERVAL_SECONDS), fix="write a number such as 60"),
    Key("timeoutSeconds", _SECONDS, "How long one request may take, the exporter's retries included.",
        default_doc=str(DEFAULT_TIMEOUT_SECONDS), fix="write a number such as 10"),
    Key("preserveNames", custom("true or false", lambda v: isinstance(v, bool) or (
        isinstance(v, str) and v.lower() in ("true", "false")), {"type": ["boolean", "string"]},
        lambda v: v if isinstance(v, bool) else v.lower() == "true"),
        "A counter keeps the `_total` it is served with (by default it is pushed without it).", default=False),
    Key("headers", _PAIRS, "Request headers (gRPC metadata); a value ${NAME}: from the environment variable NAME.",
        fix="write one `name: value` line per header under it"),
    Key("resourceAttributes", _PAIRS, "Attributes of the resource.",
        fix="write one `name: value` line per attribute under it"),
    Key("serviceInstanceId", _TEXT, "service.instance.id (Prometheus' `instance`).",
        default_doc="the broker's JMX host:port (cluster mode: the bootstrap servers)"),
    Key("serviceNamespace", _TEXT, "service.namespace."),
    Key("serviceName", _TEXT, "service.name (Prometheus' `job`).", default_doc="kafka-jmx-sidecar"),
    Key("serviceVersion", _TEXT, "service.version."),
), reload=RESTART, example="""\
openTelemetry:
  endpoint: http://prometheus:9090/api/v1/otlp
  protocol: http/protobuf
  interval: 30
  headers:
    Authorization: ${OTLP_TOKEN}
  resourceAttributes:
    deployment.environment: prod
""", shape_fix="indent the push's `key: value` lines under it")
KEYS = OPEN_TELEMETRY.names


def otlp_settings(file: ConfigFile) -> OtlpSettings | None:
    """The file's `openTelemetry:` block (None: no push), or ConfigError(s) naming file:line:key."""
    data = file.data if isinstance(file.data, Mapping) else {}
    if KEY not in data:
        return None
    if data[KEY] is None:  # `openTelemetry:` alone: jmx_exporter pushes with every default
        return OtlpSettings()
    values = OPEN_TELEMETRY.read(data[KEY], file.error)
    headers = values.pop("headers") or {}
    values["headers"] = {name: file.variable((KEY, "headers", name), value) for name, value in headers.items()}
    values["resource_attributes"] = values["resource_attributes"] or {}
    return OtlpSettings(**values)


# --- the environment over the block (client_java maps the block to the OpenTelemetry SDK's
# properties of lowest priority, under the variables below)

_ENVIRONMENT = "environment"


def _env(env: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return name, value
    return None


def _env_error(name: str, problem: str, fix: str) -> ConfigError:
    return ConfigError(_ENVIRONMENT, None, name, problem, fix)


def _env_pairs(text: str) -> dict[str, str]:
    """`k1=v1,k2=v2` (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS): values URL-decoded."""
    out = {}
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            out[key.strip()] = urllib.parse.unquote(value.strip())
    return out


def _env_millis(env: Mapping[str, str], *names: str) -> int | None:
    found = _env(env, *names)
    if found is None:
        return None
    name, value = found
    if not _JAVA_INT.fullmatch(value) or int(value) <= 0:
        raise _env_error(name, f"{value!r} is not a number of milliseconds > 0", f"set {name} to a number such as 60000")
    return max(int(value) // 1000, 1)


def effective(settings: OtlpSettings, env: Mapping[str, str], instance: str) -> Push:
    """The push `settings` ask for, with OpenTelemetry's variables in `env` over them, as the
    jmx_exporter 1.x releases do; `instance`: service.instance.id when nothing gives one."""
    found = _env(env, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
    if found is not None and found[1] not in PROTOCOLS:
        raise _env_error(found[0], f"{found[1]!r} is not a protocol the push speaks", f"set it to {GRPC} or {HTTP}")
    protocol = found[1] if found else settings.protocol or GRPC
    found = _env(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
    endpoint = found[1] if found else settings.endpoint or DEFAULT_ENDPOINTS[protocol]
    if protocol == HTTP and not endpoint.endswith("v1/metrics"):  # as client_java: the receiver's path added
        endpoint = endpoint + ("v1/metrics" if endpoint.endswith("/") else "/v1/metrics")
    found = _env(env, "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
    headers = _env_pairs(found[1]) if found else dict(settings.headers)
    interval = _env_millis(env, "OTEL_METRIC_EXPORT_INTERVAL")
    timeout = _env_millis(env, "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
    resource = {"service.name": "kafka-jmx-sidecar", "service.instance.id": instance,
                **settings.resource_attributes}
    for key, value in (("service.name", settings.service_name), ("service.namespace", settings.service_namespace),
                       ("service.instance.id", settings.service_instance_id),
                       ("service.version", settings.service_version)):
        if value is not None:
            resource[key] = value
    found = _env(env, "OTEL_RESOURCE_ATTRIBUTES")
    resource.update(_env_pairs(found[1]) if found else {})
    found = _env(env, "OTEL_SERVICE_NAME")
    if found:
        resource["service.name"] = found[1]
    return Push(protocol, endpoint, interval or settings.interval or DEFAULT_INTERVAL_SECONDS,
                timeout or settings.timeout_seconds or DEFAULT_TIMEOUT_SECONDS, settings.preserve_names,
                headers, resource)
