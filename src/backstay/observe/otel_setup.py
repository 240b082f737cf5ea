"""Setting up the OpenTelemetry sink the standard way: from the ``OTEL_*`` environment
variables and the ``observe.otel`` section of ``backstay.yaml``.

* ``OTEL_SDK_DISABLED=true``: no sink, whatever else says.
* An application that set its own global TracerProvider (and MeterProvider) gets its
  spans there: backstay adds no exporter of its own.
* Otherwise backstay makes an SDK TracerProvider and MeterProvider exporting over
  OTLP/HTTP; the exporters read ``OTEL_EXPORTER_OTLP_ENDPOINT``,
  ``OTEL_EXPORTER_OTLP_HEADERS`` and the rest themselves, and the resource reads
  ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` (service name ``backstay`` when
  neither names one).
* It is on when ``observe.otel.enabled`` says so, or, when that is not set, when an
  OTLP endpoint variable is set or the application has a TracerProvider.
* ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (or
  ``observe.otel.capture_content``) switches content capture on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from backstay.config._otel import OtelSettings
from backstay.errors import ConfigError
from backstay.observe.otel_watch import ExportWatch

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from backstay.observe.otel import OtelSink

__all__ = ["OtelSettings", "otel_sink"]

DEFAULT_SERVICE_NAME: Final = "backstay"
_LOGGER: Final = logging.getLogger("backstay")
_ENDPOINT_VARIABLES: Final = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_TRUE: Final = frozenset({"true", "1", "yes", "on"})


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in _TRUE


def _has_own_tracer_provider() -> bool:
    from opentelemetry import trace  # noqa: PLC0415 - optional extra

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def _import_sdk() -> None:
    try:
        import opentelemetry.exporter.otlp.proto.http  # noqa: PLC0415
        import opentelemetry.sdk  # noqa: F401, PLC0415
    except ModuleNotFoundError:
        raise ConfigError(
            "OpenTelemetry export needs opentelemetry-sdk and the OTLP exporter: "
            "pip install 'backstay[otel]'",
            where="observe.otel",
        ) from None


def otel_sink(
    settings: OtelSettings | None = None,
    *,
    env: Mapping[str, str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> OtelSink | None:
    """The sink ``settings`` and ``env`` (default: this process's environment) ask for,
    or None. ``ConfigError`` when it is asked for and the extra is not installed. When
    backstay makes its own exporters, their failures are one line through ``warn``
    (default: a warning of the ``backstay`` logger), never their own retry records, and
    an endpoint that fails costs at most ``EXIT_WAIT_S`` at ``close()``
    (``backstay.observe.otel_watch``)."""
    settings = settings or OtelSettings()
    env = os.environ if env is None else env
    if _flag(env, "OTEL_SDK_DISABLED") or settings.enabled is False:
        return None
    endpoint_set = any(env.get(name) for name in _ENDPOINT_VARIABLES) or bool(settings.endpoint)
    try:
        own = _has_own_tracer_provider()
    except ModuleNotFoundError:
        own = False
    if settings.enabled is None and not (endpoint_set or own):
        return None
    _import_sdk()
    from backstay.observe.otel import OtelSink  # noqa: PLC0415 - optional extra

    capture = settings.capture_content or _flag(
        env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    )
    if own:
        return OtelSink(capture_content=capture)
    watch = ExportWatch(_endpoint_text(settings, env), warn or _LOGGER.warning)
    tracer_provider, meter_provider = _own_providers(settings, env)
    watch.install()
    return OtelSink(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=capture,
        shutdown_providers=True,
        watch=watch,
    )


def _endpoint_text(settings: OtelSettings, env: Mapping[str, str]) -> str:
    """Where the exporters send, for the warning line (the traces endpoint's base)."""
    for name in _ENDPOINT_VARIABLES:
        if env.get(name):
            return env[name]
    return settings.endpoint or "the OTLP endpoint (http://localhost:4318)"


def _own_providers(
    settings: OtelSettings, env: Mapping[str, str]
) -> tuple[TracerProvider, MeterProvider]:
    # Imported here: the SDK is an optional extra.
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # noqa: PLC0415
        OTLPMetricExporter,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
        OTLPSpanExporter,
    )
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider  # noqa: PLC0415
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader  # noqa: PLC0415
    from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415

    attributes: dict[str, str] = {}
    if not env.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = settings.service_name or DEFAULT_SERVICE_NAME
    resource = Resource.create(attributes)
    base = None if any(env.get(n) for n in _ENDPOINT_VARIABLES) else settings.endpoint
    traces = None if base is None else base.rstrip("/") + "/v1/traces"
    metrics_url = None if base is None else base.rstrip("/") + "/v1/metrics"
    # Shut down by OtelSink.close(), within its bound: never by the SDK's own exit hook,
    # which would wait out the exporters' retries.
    tracer_provider = SdkTracerProvider(resource=resource, shutdown_on_exit=False)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces)))
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=metrics_url))
    meter_provider = SdkMeterProvider(
        resource=resource, metric_readers=[reader], shutdown_on_exit=False
    )
    return tracer_provider, meter_provider
