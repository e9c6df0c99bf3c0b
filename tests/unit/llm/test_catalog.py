"""The chart's LoRA adapter catalog."""

from __future__ import annotations

import json

import pytest

from provider.model.catalog import CatalogError, LoraAdapter, parse_lora_catalog


def test_parse() -> None:
    text = json.dumps(
        [
            {"label": "SQL", "name": "sql", "uri": "hf://o/sql"},
            {"label": "No uri", "name": "broken", "uri": ""},
            {"name": "  ", "uri": "hf://o/x"},
            {"label": "Chat v2", "name": "chat", "uri": "hf://o/chat-v2", "extra": 1},
        ]
    )
    assert parse_lora_catalog(text) == (
        LoraAdapter("SQL", "sql", "hf://o/sql"),
        LoraAdapter("Chat v2", "chat", "hf://o/chat-v2"),
    )


def test_later_entry_with_same_name_wins() -> None:
    text = json.dumps(
        [{"name": "a", "uri": "hf://o/1"}, {"name": "b", "uri": "hf://o/b"}, {"name": "a", "uri": "hf://o/2"}]
    )
    assert [(a.name, a.uri, a.label) for a in parse_lora_catalog(text)] == [
        ("a", "hf://o/2", "a"),
        ("b", "hf://o/b", "b"),
    ]


def test_empty() -> None:
    assert parse_lora_catalog("  ") == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[{",
            "LoRA catalog is not valid JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 3 (char 2)",
        ),
        ('{"name": "a"}', "LoRA catalog: Input should be a valid list"),
        ('[{"name": 5, "uri": "hf://x/y"}]', "LoRA catalog entry 0.name: Input should be a valid string"),
    ],
)
def test_invalid(text: str, message: str) -> None:
    with pytest.raises(CatalogError) as info:
        parse_lora_catalog(text)
    assert str(info.value) == message
