"""Derived object names (knative ChildName for the suffixes KServe and the Go provider hash)."""

from __future__ import annotations

import hashlib

from provider.model import names


def test_short_names_are_concatenated() -> None:
    assert names.metrics_name("chat") == "chat-metrics"
    assert names.ai_gateway_route_name("chat") == "chat-ai-gateway"
    assert names.token_limit_name("chat") == "chat-token-limit"
    assert names.inference_pool_name("chat") == "chat-inference-pool"
    assert names.workload_service_name("chat") == "chat-kserve-workload-svc"
    assert names.config_name("chat") == "chat-config"
    assert names.model_puller_name("chat") == "chat-model-puller"
    assert names.external_service_name("chat") == "chat-external"


def test_exactly_63_characters_is_kept() -> None:
    parent = "p" * (63 - len("-metrics"))
    assert names.metrics_name(parent) == parent + "-metrics"


def test_long_names_are_hashed_like_knative() -> None:
    parent = "q" * 60
    digest = hashlib.md5(parent.encode()).hexdigest()
    assert names.child_name(parent, "-inference-pool") == "q" * (31 - 15) + digest + "-inference-pool"
    assert len(names.child_name(parent, "-inference-pool")) == 63


def test_hashed_names_differ_per_parent() -> None:
    assert names.metrics_name("x" * 60 + "a") != names.metrics_name("x" * 60 + "b")


def test_suffix_longer_than_the_head() -> None:
    suffix = "-" + "s" * 40
    out = names.child_name("parent", suffix)
    assert out == "parent" + suffix
    long_parent = "p" * 40
    hashed = names.child_name(long_parent, suffix)
    assert len(hashed) <= 63
    assert hashed.startswith("p" * 31 + hashlib.md5((long_parent + suffix).encode()).hexdigest())
