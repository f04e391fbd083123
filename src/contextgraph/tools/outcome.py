"""What a tool call comes to, as the protocol layer sees it: the outcome of a call that succeeded, the failure of
one that did not, and where the pulse sits in either. Apart from dispatch.py so that the server can name them
without importing the dispatcher and, through it, every service (the handshake is answered before those load)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PULSE_KEY = "_cognitive_pulse"


class ToolCallFailed(Exception):
    """A failed call, ready for the wire: JSON-RPC code, model-readable message, data with hint and pulse."""

    def __init__(self, code: int, message: str, data: dict[str, Any]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True, slots=True)
class CallOutcome:
    tool: str
    alias: str | None
    payload: dict[str, Any]  # carries the pulse under PULSE_KEY

    @property
    def pulse(self) -> dict[str, Any]:
        return self.payload[PULSE_KEY]
