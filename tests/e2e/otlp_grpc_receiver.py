"""An OTLP/gRPC metrics receiver on a loopback port, for the push's grpc protocol: Prometheus 3's
OTLP receiver speaks http/protobuf only. It is OpenTelemetry's own service definition
(opentelemetry-proto's MetricsService) served by grpcio, keeping what it is sent; no collector
program is built for this one protocol.

    with GrpcReceiver() as receiver:
        receiver.wait_for(lambda points: "kafka_x" in points)   # {name: {labels: (kind, value)}}
"""
from __future__ import annotations

import threading
import time
from concurrent import futures

import grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc

from harness.processes import free_port


def _value(point) -> float:
    return point.as_double if point.HasField("as_double") else float(point.as_int)


class GrpcReceiver(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.requests: list = []  # every ExportMetricsServiceRequest, in arrival order
        self.headers: list[dict] = []  # the metadata each came with
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(self, self._server)
        self._server.add_insecure_port(f"127.0.0.1:{self.port}")

    def Export(self, request, context):  # noqa: N802 (the service's method name)
        with self._lock:
            self.requests.append(request)
            self.headers.append(dict(context.invocation_metadata()))
        return metrics_service_pb2.ExportMetricsServiceResponse()

    def points(self) -> dict[str, dict[tuple, tuple[str, float]]]:
        """The last value received of every series: {metric name: {sorted attributes: (kind, value)}},
        kind "gauge" or "sum" (monotonic cumulative) or "histogram" (its count)."""
        out: dict[str, dict] = {}
        with self._lock:
            requests = list(self.requests)
        for request in requests:
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        data = getattr(m, kind)
                        for p in data.data_points:
                            labels = tuple(sorted((a.key, a.value.string_value) for a in p.attributes))
                            value = float(p.count) if kind == "histogram" else _value(p)
                            if kind == "sum":
                                kind_text = "sum" if data.is_monotonic and data.aggregation_temporality == 2 else "sum?"
                            else:
                                kind_text = kind
                            out.setdefault(m.name, {})[labels] = (kind_text, value)
        return out

    def resource(self) -> dict[str, str]:
        with self._lock:
            request = self.requests[-1]
        return {a.key: a.value.string_value for a in request.resource_metrics[0].resource.attributes}

    def wait_for(self, check, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        while True:
            points = self.points()
            if check(points):
                return points
            if time.monotonic() > deadline:
                raise AssertionError(f"the receiver did not get what was expected in {timeout} s; "
                                     f"{len(self.requests)} request(s), names: {sorted(points)[:20]}")
            time.sleep(0.2)

    def __enter__(self) -> "GrpcReceiver":
        self._server.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.stop(0)
