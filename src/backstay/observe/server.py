"""``MetricsServer``: ``/metrics``, ``/healthz`` and ``/readyz`` of a state directory over
HTTP, from a thread of this process (``backstay serve``, ``backstay batch --serve-port``).

* ``/metrics``: ``render_metrics`` of a fresh snapshot (Prometheus text format);
* ``/healthz``: liveness, ``pass`` while the process serves;
* ``/readyz``: ``health_check`` (503 on ``fail``), ``application/health+json``.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Final

from backstay.observe.health import (
    HEALTH_CONTENT_TYPE,
    HealthReport,
    check_writable,
    health_of,
    liveness,
)
from backstay.observe.live import LiveCounters
from backstay.observe.prometheus import CONTENT_TYPE, render_metrics
from backstay.observe.snapshot import StateReader

__all__ = ["DEFAULT_HOST", "MetricsServer"]

DEFAULT_HOST: Final = "127.0.0.1"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        owner = self.server.owner
        try:
            if path == "/metrics":
                body = owner.metrics().encode()
                self._send(200, CONTENT_TYPE, body)
            elif path in ("/healthz", "/livez"):
                self._health(liveness())
            elif path == "/readyz":
                self._health(owner.readiness())
            else:
                self._send(
                    404, "text/plain; charset=utf-8", b"not found: /metrics, /healthz, /readyz\n"
                )
        except Exception as exc:  # noqa: BLE001 - a broken read is a 500, not a dead server
            self._send(500, "text/plain; charset=utf-8", f"{type(exc).__name__}: {exc}\n".encode())

    def _health(self, report: HealthReport) -> None:
        body = json.dumps(report.to_dict(), indent=2).encode()
        self._send(report.http_status, HEALTH_CONTENT_TYPE, body)

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return  # scrapes are not news


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: MetricsServer


class MetricsServer:
    """Serves ``state_dir`` on ``host:port`` (0: any free port; ``url`` says which) from
    a daemon thread once started; ``live`` adds this process's own counts."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        live: LiveCounters | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.live = live
        self._reader = StateReader(self.state_dir)
        try:
            self._http = _Server((host, port), _Handler)
        except BaseException:
            self._reader.close()
            raise
        self._http.owner = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    def metrics(self) -> str:
        return render_metrics(self._reader.read(), self.live)

    def readiness(self) -> HealthReport:
        return health_of(self._reader.read(), store=check_writable(self.state_dir))

    def start(self) -> MetricsServer:
        self._thread = threading.Thread(
            target=self._http.serve_forever, name="backstay-metrics", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._http.shutdown()
            self._thread.join()
        self._http.server_close()
        self._reader.close()

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
