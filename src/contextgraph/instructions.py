"""The server's instructions to the model (instructions.md beside this module): sent with every initialize answer
and returned by get_system_instructions. Imports nothing internal, so the handshake can read them."""

from __future__ import annotations

from importlib import resources


def system_instructions() -> str:
    return resources.files("contextgraph").joinpath("instructions.md").read_text(encoding="utf-8")
