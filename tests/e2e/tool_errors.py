"""A refused tool call, whichever way the session's protocol era returns it (SPEC D17): a JSON-RPC error (sessions
before 2025-11-25, and codes that stay protocol errors such as -32004) or a tool result with `isError: true`
whose structuredContent carries {code, name, message, hint, ...}. Tests that check what a refusal says use this,
so they hold in both eras; tests/e2e/test_error_results.py checks which era gets which shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.shared.exceptions import MCPError


@dataclass(frozen=True)
class Refusal:
    code: int
    message: str
    data: dict[str, Any]  # error.data's members: hint, field, allowed, ..., error (the registry name), pulse
    as_result: bool  # True when it came back as an isError tool result

    @property
    def error(self) -> Refusal:  # MCPError.error's spelling, for tests written against it
        return self


async def refusal(client, name: str, arguments: dict[str, Any] | None = None) -> Refusal:
    """Call a tool that must be refused, and return what the refusal says; fails the test if the call succeeds."""
    try:
        result = await client.call_tool(name, arguments or {})
    except MCPError as exc:
        return Refusal(exc.error.code, exc.error.message, dict(exc.error.data or {}), as_result=False)
    assert result.is_error, f"{name} was expected to be refused, got {result.structured_content}"
    body = dict(result.structured_content)
    code, message, registry_name = body.pop("code"), body.pop("message"), body.pop("name")
    return Refusal(code, message, {**body, "error": registry_name}, as_result=True)
