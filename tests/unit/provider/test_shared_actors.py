"""The catalog and AI Gateway shared actors, in-process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from actors.interface import KubeObject
from provider.model.catalog import CatalogError, CatalogModel, LoraAdapter, parse_model_catalog
from provider.model.settings import ProviderSettings
from provider.shared_actors.ai_gateway import AIGatewayActor, gateway_base_url, uses_ai_gateway
from provider.shared_actors.catalog_actors import LoraCatalogActor, ModelCatalogActor
from tests.support.instances import llm_instance, predictor_instance


def _llm(**topology_params: object) -> KubeObject:
    return llm_instance(topology=topology_params)


@pytest.mark.parametrize(
    ("address", "settings", "expected"),
    [
        (
            "gateway.example.com",
            {"ai_gateway_scheme": "https", "ai_gateway_port_override": 8443, "ai_gateway_hostname": "llm.example.com"},
            "https://llm.example.com:8443",
        ),
        ("gateway.example.com", {}, "http://gateway.example.com"),
        ("gateway.example.com", {"ai_gateway_scheme": "https"}, "https://gateway.example.com"),
        (
            "203.0.113.7",
            {"ai_gateway_scheme": "https", "ai_gateway_hostname": "llm.example.com"},
            "https://llm.example.com",
        ),
        ("1.2.3.4:8080", {}, "http://1.2.3.4:8080"),
        ("[::1]:80", {}, "http://[::1]"),
        ("2001:db8::1", {}, "http://[2001:db8::1]"),
        ("https://x:9443", {}, "https://x:9443"),
        ("", {}, None),
    ],
)
def test_gateway_base_url(address: str, settings: dict[str, object], expected: str | None) -> None:
    assert gateway_base_url(address, ProviderSettings(**settings)) == expected  # type: ignore[arg-type]


def test_uses_ai_gateway_follows_external_access_then_the_legacy_flag() -> None:
    assert uses_ai_gateway(_llm(externalAccess="EnvoyAIGateway"))
    assert uses_ai_gateway(_llm(enableAIGateway="true"))
    assert not uses_ai_gateway(_llm(externalAccess="ClusterIP", enableAIGateway=True))
    assert not uses_ai_gateway(_llm(externalAccess=42))  # invalid input is not an opt-in
    assert not uses_ai_gateway(predictor_instance())


def test_model_catalog_parsing_rules() -> None:
    text = json.dumps(
        [
            {"label": "Llama", "uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "gated": True},
            {"label": "Qwen", "uri": "hf://Qwen/Qwen2.5-0.5B-Instruct"},
        ]
    )
    assert parse_model_catalog(text) == (
        CatalogModel("Llama", "hf://meta-llama/Llama-3.1-8B-Instruct", True),
        CatalogModel("Qwen", "hf://Qwen/Qwen2.5-0.5B-Instruct", False),
    )
    with pytest.raises(CatalogError, match=r"^model catalog 0\.gated: Input should be a valid boolean$"):
        parse_model_catalog('[{"uri": "hf://x/y", "gated": "yes"}]')
    with pytest.raises(CatalogError, match="not valid JSON"):
        parse_model_catalog("[")


def test_catalog_file_change_reloads_and_wakes_only_its_users(tmp_path: Path) -> None:
    woken: list[KubeObject] = []
    instances = [
        _llm(),
        llm_instance(engine={"loraSlot1": "sql"}),
    ]

    def wake(predicate: object) -> int:
        matched = [o for o in instances if predicate(o)]  # type: ignore[operator]
        woken.extend(matched)
        return len(matched)

    file = tmp_path / "lora.json"
    file.write_text(json.dumps([{"label": "SQL", "name": "sql", "uri": "hf://a/sql"}]))
    actor = LoraCatalogActor(str(file), "")
    assert actor.entries == (LoraAdapter("SQL", "sql", "hf://a/sql"),)
    actor.reload(wake)  # unchanged file: nobody woken
    assert actor.entries == (LoraAdapter("SQL", "sql", "hf://a/sql"),)
    assert woken == []
    file.write_text(json.dumps([{"label": "SQL v2", "name": "sql", "uri": "hf://a/sql2"}]))
    actor.reload(wake)
    assert actor.entries == (LoraAdapter("SQL v2", "sql", "hf://a/sql2"),)
    assert woken == [instances[1]]
    file.write_text("not json")  # a broken update keeps the last good catalog
    actor.reload(wake)
    assert actor.entries == (LoraAdapter("SQL v2", "sql", "hf://a/sql2"),)


def test_model_catalog_from_inline_env_text() -> None:
    actor = ModelCatalogActor(None, '[{"label": "Q", "uri": "hf://q/q"}]')
    assert actor.entries == (CatalogModel("Q", "hf://q/q", False),)


def test_gateway_actor_publishes_address_changes_to_opted_in_instances() -> None:
    woken: list[int] = []
    instances = [_llm(externalAccess="EnvoyAIGateway"), _llm(externalAccess="ClusterIP")]

    def wake(predicate: Callable[[KubeObject], bool]) -> int:
        count = sum(1 for o in instances if predicate(o))
        woken.append(count)
        return count

    settings = ProviderSettings(ai_gateway_enabled=True, ai_gateway_name="gw", ai_gateway_namespace="sys")
    actor = AIGatewayActor(None, settings)  # type: ignore[arg-type]
    assert actor.base_url is None
    actor.publish(("203.0.113.9",), wake)
    assert actor.base_url == "http://203.0.113.9"
    actor.publish(("203.0.113.9",), wake)  # same address: no second wake
    assert actor.base_url == "http://203.0.113.9"
    assert woken == [1]
