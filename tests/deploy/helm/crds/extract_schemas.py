"""Writes the JSON schemas of the custom resources the chart renders, from two PyPI packages
generated from those resources' own definitions (the CRDs' openAPIV3Schema, the Spark Operator's
OpenAPI spec), so the tests can check the rendered objects with jsonschema without a cluster:

    python -m venv /tmp/crd-venv
    /tmp/crd-venv/bin/pip install cloudcoil-models-prometheus-operator==0.80.1.0 kubeflow-spark-api==2.4.0
    /tmp/crd-venv/bin/python tests/deploy/helm/crds/extract_schemas.py

The packages' pydantic models ignore unknown fields; the API server prunes or (kubectl's strict
field validation) refuses them, so every object schema with declared properties gets
`additionalProperties: false` here, except where a map's value schema is already given.
"""
from __future__ import annotations

import json
import pathlib

HERE = pathlib.Path(__file__).parent


def strict(node):
    """additionalProperties: false on every object schema that lists its properties; Go's
    `^(?i)...` patterns as Python's re takes them (`(?i)^...`: global flags first)."""
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict) and "additionalProperties" not in node:
            node["additionalProperties"] = False
        pattern = node.get("pattern")
        if isinstance(pattern, str) and pattern.startswith("^(?i)"):
            node["pattern"] = "(?i)^" + pattern[len("^(?i)"):]
        for value in node.values():
            strict(value)
    elif isinstance(node, list):
        for value in node:
            strict(value)
    return node


def main() -> None:
    from cloudcoil.models.prometheus_operator import v1
    from kubeflow_spark_api.models.spark_v1beta2_spark_application import SparkV1beta2SparkApplication

    sources = {
        "monitoring.coreos.com_v1_servicemonitor.json": v1.ServiceMonitor,
        "monitoring.coreos.com_v1_podmonitor.json": v1.PodMonitor,
        "monitoring.coreos.com_v1_prometheusrule.json": v1.PrometheusRule,
        "sparkoperator.k8s.io_v1beta2_sparkapplication.json": SparkV1beta2SparkApplication,
    }
    for name, model in sources.items():
        schema = strict(model.model_json_schema(by_alias=True, mode="validation"))
        (HERE / name).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
