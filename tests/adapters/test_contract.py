"""The contract both adapters are generated from: its table is complete and bounded, `bind`
checks every call the same way, and the MCP schemas say what `bind` enforces."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from vaultmem.adapters import commands, contract
from vaultmem.core.errors import ConfigError, InvalidArgumentError

TOOLS = [op for op in commands.OPERATIONS if op.tool]


@pytest.mark.parametrize("op", TOOLS, ids=lambda op: op.tool)
def test_schemas_are_valid_and_bounded(op: contract.Operation) -> None:
    schema = contract.json_schema(op)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False
    for name, spec in schema["properties"].items():
        if spec["type"] == "string":
            assert "maxLength" in spec or "enum" in spec, name
        if spec["type"] == "array":
            assert "maxItems" in spec and "maxLength" in spec["items"], name
        if spec["type"] in ("integer", "number"):
            assert "minimum" in spec and "maximum" in spec, name


@pytest.mark.parametrize("op", TOOLS, ids=lambda op: op.tool)
def test_schema_defaults_pass_bind(op: contract.Operation) -> None:
    """What the schema advertises as defaults is what bind fills in (and accepts)."""
    schema = contract.json_schema(op)
    defaults = {k: v["default"] for k, v in schema["properties"].items() if "default" in v}
    required = {p.name: "x" for p in op.params if p.required and p.mcp}
    bound = contract.bind(op, {**required, **defaults}, adapter="mcp")
    assert bound == contract.bind(op, required, adapter="mcp") | {
        k: tuple(v) if isinstance(v, list) else v for k, v in defaults.items()
    }


def test_context_budget_has_one_minimum_for_both_adapters() -> None:
    op = commands.BY_NAME["context"]
    for adapter, label in (("cli", "--budget-chars"), ("mcp", "budget_chars")):
        with pytest.raises(InvalidArgumentError, match=f"^{label}: 199 is below the minimum 200"):
            contract.bind(op, {"budget_chars": 199}, adapter=adapter)  # type: ignore[arg-type]
    assert contract.json_schema(op)["properties"]["budget_chars"]["minimum"] == 200


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("recall", {"query": "x", "limit": True}, "expected an integer"),
        ("recall", {"query": "x", "limit": 2.5}, "expected an integer"),
        ("recall", {"query": "x", "scopes": "global"}, "expected a list"),
        ("recall", {"query": "x", "scopes": ["global:a b"]}, "does not match"),
        ("recall", {}, "query is required"),
        ("recall", {"query": "x", "extra": 1}, "Unknown argument 'extra'"),
        ("store", {"content": "x", "tags": ["ok"] * 33}, "33 items; at most 32"),
        ("store", {"content": ""}, "must not be empty"),
        ("store", {"content": "x", "key": "Bad_Key"}, "does not match"),
        ("search", {"query": "x", "until": "soon"}, "not an ISO date"),
        ("links", {"note": "x", "direction": "sideways"}, "is not one of"),
    ],
)
def test_bind_refuses_with_invalid_argument(name: str, raw: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as info:
        contract.bind(commands.BY_NAME[name], raw, adapter="mcp")
    assert info.value.code == "invalid_argument" and not isinstance(info.value, ConfigError)


def test_bind_fills_defaults_and_parses_dates() -> None:
    bound = contract.bind(
        commands.BY_NAME["search"], {"query": "x", "since": "2026-11-01"}, adapter="mcp"
    )
    assert bound["since"] == datetime(2026, 11, 1) and bound["limit"] == 10
    assert bound["scope"] is None
    store = contract.bind(commands.BY_NAME["store"], {"content": "x"}, adapter="mcp")
    assert store["source"] == "mcp" and store["scope"] == "project" and store["tags"] == ()
    assert (
        contract.bind(commands.BY_NAME["store"], {"content": "x"}, adapter="cli")["source"] is None
    )


def test_hits_render_as_one_object() -> None:
    assert contract.data(contract.Hits([{"a": 1}])) == {"hits": [{"a": 1}]}
