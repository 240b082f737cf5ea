"""A tiny OTLP/HTTP receiver on 127.0.0.1: it decodes the protobuf export requests the
OpenTelemetry exporters POST to ``/v1/traces`` and ``/v1/metrics`` and keeps them."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    return None if kind is None else getattr(value, kind)


def attributes(span: Span) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in span.attributes}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            with self.server.lock:
                self.server.traces.append(request)
        elif self.path == "/v1/metrics":
            metrics = ExportMetricsServiceRequest()
            metrics.ParseFromString(body)
            with self.server.lock:
                self.server.metrics.append(metrics)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    lock: threading.Lock
    traces: list[ExportTraceServiceRequest]
    metrics: list[ExportMetricsServiceRequest]


class OtlpReceiver:
    """``with OtlpReceiver() as receiver``: ``receiver.url`` to export to; ``spans()``."""

    def __init__(self) -> None:
        self._http = _Server(("127.0.0.1", 0), _Handler)
        self._http.lock = threading.Lock()
        self._http.traces = []
        self._http.metrics = []
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def spans(self) -> list[Span]:
        with self._http.lock:
            requests = list(self._http.traces)
        return [
            span
            for request in requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]

    def service_names(self) -> set[str]:
        with self._http.lock:
            requests = list(self._http.traces)
        return {
            value_of(kv.value)
            for request in requests
            for resource in request.resource_spans
            for kv in resource.resource.attributes
            if kv.key == "service.name"
        }

    def metric_names(self) -> set[str]:
        with self._http.lock:
            requests = list(self._http.metrics)
        return {
            metric.name
            for request in requests
            for resource in request.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._thread.join()
        self._http.server_close()


def spans_named(spans: list[Span], prefix: str) -> Iterator[Span]:
    return (span for span in spans if span.name.startswith(prefix))
