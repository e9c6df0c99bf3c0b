"""OpenTelemetry: a span per reconcile, a child per step and per API write.

Exported over OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variable is set;
otherwise no span is made at all: even the no-op tracer costs a proxy tracer, a context manager and
a context token per span, on every reconcile step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource as OtelResource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

_NO_SPAN: AbstractContextManager[None] = nullcontext()
_exporting = False


def span(
    tracer: trace.Tracer, name: str, attributes: Mapping[str, str] | None = None
) -> AbstractContextManager[trace.Span | None]:
    """`tracer.start_as_current_span(name)` when spans are exported, else a shared no-op context."""
    if not _exporting:
        return _NO_SPAN
    return tracer.start_as_current_span(name, attributes=attributes)


def annotate(current: trace.Span | None, attributes: Mapping[str, str | int]) -> None:
    """Attributes known only once a span has started, on the span `span()` gave (None when no
    spans are made)."""
    if current is not None:
        current.set_attributes(attributes)


_WRITES = frozenset({"create", "update", "patch", "delete"})


def annotate_write(verb: str, resource: str, code: int, seconds: float) -> None:
    """The client's observer of every request: a write's verb and HTTP status on the span it was
    made in (apply, delete, status-update; a step's own span for the finalizer's patch)."""
    if not _exporting or verb not in _WRITES:
        return
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes({"k8s.verb": verb, "http.response.status_code": code})


def configure_tracing(
    service_name: str, environ: Mapping[str, str] | None = None, exporter: SpanExporter | None = None
) -> TracerProvider | None:
    env = os.environ if environ is None else environ
    if exporter is None:
        if not (env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")):
            return None
        if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
            return None
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()  # reads the OTEL_EXPORTER_OTLP_* variables itself
    provider = TracerProvider(
        resource=OtelResource.create({"service.name": env.get("OTEL_SERVICE_NAME", service_name)})
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    global _exporting
    _exporting = True
    return provider
