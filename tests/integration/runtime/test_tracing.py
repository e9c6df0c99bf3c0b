"""An in-process OTLP/HTTP collector receives the reconcile span tree from the real runtime."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from actors.client.known_resources import INSTANCES
from actors.observe.tracing import configure_tracing
from plane import free_port
from tests.support.instances import null_instance
from tests.support.null_provider import NullProvider
from tests.support.runtime import running_manager
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration


async def test_otlp_collector_receives_reconcile_span_tree(
    controlplane: Any, kube: Any, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spans: list[Any] = []

    async def receive(request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.read())
        for resource_spans in export.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                spans.extend(scope_spans.spans)
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{port}/v1/traces")
    tracer_provider = configure_tracing("provider-kserve-test")
    assert tracer_provider is not None
    try:
        async with running_manager(controlplane, NullProvider(), namespace):
            await kube.create(INSTANCES, null_instance("traced", namespace))

            async def ready() -> bool:
                obj = await kube.get(INSTANCES, namespace, "traced")
                return bool(obj and (obj.get("status") or {}).get("phase") == "Ready")

            await wait_for(ready)
        tracer_provider.force_flush()

        async def received() -> bool:
            return any(s.name == "status" for s in spans)

        await wait_for(received, timeout=10)
    finally:
        tracer_provider.shutdown()
        await runner.cleanup()

    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if s.name == "reconcile" and not s.parent_span_id]
    assert roots, [s.name for s in spans]
    # The pass that did the work: reconcile → sync → apply, and reconcile → status → status-update.
    full = next(
        r for r in roots if {c.name for c in spans if c.parent_span_id == r.span_id} >= {"validate", "sync", "status"}
    )
    children = {c.name: c for c in spans if c.parent_span_id == full.span_id}
    assert {"validate", "sync", "status"} <= set(children)
    grandchildren = {s.name for s in spans if by_id.get(s.parent_span_id) in children.values()}
    assert {"apply", "status-update"} <= grandchildren
    attributes = {kv.key: kv.value.string_value for kv in full.attributes}
    assert attributes["instance"] == f"{namespace}/traced"
