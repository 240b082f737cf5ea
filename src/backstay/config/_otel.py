"""``OtelSettings``: the ``observe.otel`` section of ``backstay.yaml``, frozen. The sink it
asks for is built by ``backstay.observe.otel_setup.otel_sink`` (which re-exports this name)."""

from __future__ import annotations

import dataclasses

__all__ = ["OtelSettings"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class OtelSettings:
    """``observe.otel`` of ``backstay.yaml``. ``enabled`` None: decided by the
    environment. ``endpoint``: the OTLP/HTTP base URL when no variable names one."""

    enabled: bool | None = None
    service_name: str | None = None
    endpoint: str | None = None
    capture_content: bool = False
