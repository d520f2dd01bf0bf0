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
"""
from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile, Problems, kind
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


def _text(value: Any, path: tuple, error) -> str:
    if value is None or isinstance(value, (dict, list)):
        raise error(path, f"must be a text value, not {kind(value)}", "write a single value")
    text = java_str(value)
    if not text.strip():
        raise error(path, "must not be blank", "write a value or remove the key")
    return text


def _endpoint(value: Any, path: tuple, error) -> str:
    text = _text(value, path, error)
    url = urllib.parse.urlsplit(text)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise error(path, f"{text!r} is not an http:// or https:// URL",
                    "write the receiver's URL, such as http://otel-collector:4317 (grpc) or "
                    "http://prometheus:9090/api/v1/otlp (http/protobuf)")
    return text


def _protocol(value: Any, path: tuple, error) -> str:
    text = _text(value, path, error)
    if text not in PROTOCOLS:
        raise error(path, f"{text!r} is not a protocol the push speaks", f"write {GRPC} or {HTTP}")
    return text


def _seconds(value: Any, path: tuple, error) -> int:
    text = "" if isinstance(value, (bool, float, dict, list)) or value is None else java_str(value)
    if not _JAVA_INT.fullmatch(text) or not 1 <= int(text) <= _INT_MAX:
        raise error(path, f"must be a whole number of seconds > 0, not {kind(value)}", "write a number such as 60")
    return int(text)


def _flag(value: Any, path: tuple, error) -> bool:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise error(path, f"must be true or false, not {kind(value)}", "write true or false")
    return value


def _pairs(value: Any, path: tuple, error, file: ConfigFile, secret: bool) -> dict[str, str]:
    if not isinstance(value, dict):
        raise error(path, f"must be a mapping of names to values, not {kind(value)}",
                    "write one `name: value` line per entry under it")
    out = {}
    for name, item in value.items():
        where = path + (name,)
        if name is None or not java_str(name).strip():
            raise error(where, "a name must not be blank", "give every entry a name")
        if item is None or isinstance(item, (dict, list)) or java_str(item) == "":
            raise error(where, f"must be a text value, not {kind(item)}", "write a value")
        text = java_str(item)
        out[java_str(name)] = file.variable(where, text) if secret else text
    return out


# key -> (field, read(value, path, error, file))
_KEYS: dict[str, tuple[str, Callable]] = {
    "endpoint": ("endpoint", lambda v, p, e, f: _endpoint(v, p, e)),
    "protocol": ("protocol", lambda v, p, e, f: _protocol(v, p, e)),
    "interval": ("interval", lambda v, p, e, f: _seconds(v, p, e)),
    "timeoutSeconds": ("timeout_seconds", lambda v, p, e, f: _seconds(v, p, e)),
    "preserveNames": ("preserve_names", lambda v, p, e, f: _flag(v, p, e)),
    "headers": ("headers", lambda v, p, e, f: _pairs(v, p, e, f, secret=True)),
    "resourceAttributes": ("resource_attributes", lambda v, p, e, f: _pairs(v, p, e, f, secret=False)),
    "serviceInstanceId": ("service_instance_id", lambda v, p, e, f: _text(v, p, e)),
    "serviceNamespace": ("service_namespace", lambda v, p, e, f: _text(v, p, e)),
    "serviceName": ("service_name", lambda v, p, e, f: _text(v, p, e)),
    "serviceVersion": ("service_version", lambda v, p, e, f: _text(v, p, e)),
}
KEYS = tuple(_KEYS)


def otlp_settings(file: ConfigFile) -> OtlpSettings | None:
    """The file's `openTelemetry:` block (None: no push), or ConfigError(s) naming file:line:key."""
    data = file.data if isinstance(file.data, Mapping) else {}
    if KEY not in data:
        return None
    raw = data[KEY]
    if raw is None:  # `openTelemetry:` alone: jmx_exporter pushes with every default
        return OtlpSettings()
    error = file.error
    if not isinstance(raw, dict):
        raise error((KEY,), f"must be a mapping, not {kind(raw)}", "indent the push's `key: value` lines under it")
    problems = Problems()  # every wrong key in one run
    values: dict[str, Any] = {}
    for key, value in raw.items():
        path = (KEY, key)
        if key not in _KEYS:
            problems.add(error(path, "unknown setting", f"use one of {', '.join(KEYS)}"))
        elif value is not None:  # a key left empty is not given, as jmx_exporter reads it
            name, read = _KEYS[key]
            values[name] = problems.check(read, value, path, error, file)
    problems.raise_any()
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
