"""The runtime's registry carries the process's own figures and the Instances by phase; /metrics is
prometheus-client's handler: the format the scraper asks for, compressed when it may be."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from actors.observe.metrics import InstancePhases, RuntimeMetrics
from actors.serve.apps import metrics_app


def samples(metrics: RuntimeMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_process_and_platform_collectors_are_in_the_runtime_registry() -> None:
    values = samples(RuntimeMetrics())
    names = {name for name, _ in values}
    assert values[("process_resident_memory_bytes", ())] > 1024**2
    assert {"process_cpu_seconds_total", "process_open_fds", "process_start_time_seconds"} <= names
    assert any(name == "python_info" for name in names)


def test_instances_by_phase_and_the_longest_time_in_each() -> None:
    now = [100.0]
    phases = InstancePhases(clock=lambda: now[0])
    phases.record("a/one", "Provisioning")
    now[0] = 110.0
    phases.record("a/two", "Provisioning")
    phases.record("a/three", "Ready")
    now[0] = 130.0
    phases.record("a/one", "Provisioning")  # unchanged: still there since 100
    families = {f.name: {s.labels["phase"]: s.value for s in f.samples} for f in phases.collect()}
    assert families["provider_instances"] == {"Provisioning": 2, "Ready": 1}
    assert families["provider_instance_phase_longest_seconds"] == {"Provisioning": 30.0, "Ready": 20.0}
    phases.record("a/one", "Ready")  # a change restarts its clock
    phases.forget("a/two")
    families = {f.name: {s.labels["phase"]: s.value for s in f.samples} for f in phases.collect()}
    assert families["provider_instances"] == {"Ready": 2}
    assert families["provider_instance_phase_longest_seconds"] == {"Ready": 20.0}


@pytest.fixture
async def client() -> AsyncIterator[TestClient[web.Request, web.Application]]:
    metrics = RuntimeMetrics()
    metrics.reconciles.labels(result="success").inc(3)
    async with TestClient(TestServer(metrics_app(metrics.registry))) as test_client:
        yield test_client


async def test_text_format_by_default(client: TestClient[web.Request, web.Application]) -> None:
    response = await client.get("/metrics", headers={"Accept-Encoding": "identity"})
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert 'provider_reconciles_total{result="success"} 3.0' in await response.text()


async def test_openmetrics_when_asked_for(client: TestClient[web.Request, web.Application]) -> None:
    response = await client.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert response.headers["Content-Type"].startswith("application/openmetrics-text")
    body = await response.text()
    assert body.endswith("# EOF\n")
    assert 'provider_reconciles_total{result="success"} 3.0' in body


async def test_gzip_when_the_scraper_accepts_it(client: TestClient[web.Request, web.Application]) -> None:
    response = await client.get("/metrics", headers={"Accept-Encoding": "gzip"}, auto_decompress=False)
    assert response.headers["Content-Encoding"] == "gzip"
    assert b"process_resident_memory_bytes" in gzip.decompress(await response.read())


async def test_names_filter(client: TestClient[web.Request, web.Application]) -> None:
    response = await client.get("/metrics", params={"name[]": "provider_reconciles_total"})
    body = await response.text()
    assert "provider_reconciles_total" in body and "process_resident_memory_bytes" not in body
