"""The OpenAPI v3 conversion of the parameter models' JSON schemas."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict, Field

from provider.generate.definition import DefinitionError
from provider.generate.openapi_schema import openapi_v3


class _Inner(BaseModel):
    size: int = Field(gt=0, description="inner size")


class _Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(examples=["a", "b"])
    inner: _Inner | None = Field(default=None, description="optional inner")
    items: list[_Inner] = Field(default_factory=list)
    kind: str = Field(default="fixed", json_schema_extra={"const": "fixed"})


def test_openapi_v3_inlines_refs_and_nulls() -> None:
    out = openapi_v3(_Outer.model_json_schema(by_alias=True))
    assert "$defs" not in json.dumps(out) and "$ref" not in json.dumps(out)
    assert "title" not in json.dumps(out)
    inner = out["properties"]["inner"]
    assert inner["nullable"] is True and inner["description"] == "optional inner"
    assert inner["properties"]["size"] == {
        "description": "inner size",
        "exclusiveMinimum": True,
        "minimum": 0,
        "type": "integer",
    }
    assert out["properties"]["items"]["items"]["type"] == "object"
    assert out["properties"]["name"]["example"] == "a"
    assert out["properties"]["kind"]["enum"] == ["fixed"]
    assert out["additionalProperties"] is False


def test_openapi_v3_rejects_unknown_keywords() -> None:
    with pytest.raises(DefinitionError, match="prefixItems"):
        openapi_v3({"type": "array", "prefixItems": [{"type": "string"}]})
    with pytest.raises(DefinitionError, match="recursive"):
        openapi_v3({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"})
