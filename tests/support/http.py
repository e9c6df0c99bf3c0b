"""Plain HTTP(S) GETs of the provider's endpoints (metrics, health, validation), as a scraper sends them."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

import anyio
from prometheus_client.parser import text_string_to_metric_families


def http_get(url: str, token: str | None = None, insecure: bool = False) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    context = None
    if url.startswith("https"):
        context = ssl.create_default_context()
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


async def fetch(url: str, token: str | None = None, insecure: bool = False) -> tuple[int, str]:
    """http_get off the event loop: the provider under test may serve from this very loop."""
    return await anyio.to_thread.run_sync(lambda: http_get(url, token, insecure))


def scrape(port: int, sample: str) -> list[tuple[dict[str, str], float]]:
    """The samples named `sample` (a counter's with its `_total`) on a provider process's /metrics,
    each with its labels."""
    status, text = http_get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200, (status, text[:200])
    return [(s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples if s.name == sample]


def scraped_total(port: int, sample: str, **labels: str) -> float:
    """The sum of `sample`'s series on a provider process's /metrics whose labels include `labels`."""
    return sum(value for found, value in scrape(port, sample) if all(found.get(k) == v for k, v in labels.items()))
