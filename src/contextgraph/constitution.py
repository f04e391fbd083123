"""Loads constitution.yaml once: thresholds, frequencies, budgets, aliases and the error-code registry.

The file lives at the repository root; an installed wheel carries a copy inside the package.
CONTEXTGRAPH_CONSTITUTION points at another file (tests use it to check a broken one is refused).
Imports nothing internal.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_PACKAGED = Path(__file__).with_name("constitution.yaml")
_REPO_ROOT = Path(__file__).resolve().parents[2] / "constitution.yaml"


class ConstitutionError(RuntimeError):
    """The constitution is missing or inconsistent; the server refuses to start."""


@dataclass(frozen=True, slots=True)
class ErrorCode:
    name: str
    code: int
    hint: str


class Constitution:
    """Read-only view of constitution.yaml with the lookups the code needs."""

    def __init__(self, data: dict[str, Any], path: Path) -> None:
        self.data = data
        self.path = path
        self.errors: dict[str, ErrorCode] = {
            name: ErrorCode(name, int(entry["code"]), str(entry["hint"])) for name, entry in data["errors"].items()
        }
        codes = [e.code for e in self.errors.values()]
        duplicated = sorted({c for c in codes if codes.count(c) > 1})
        if duplicated:
            raise ConstitutionError(f"{path}: error codes used twice: {duplicated}")

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, dotted: str) -> Any:
        """`get("pulse.ewma_alpha")` → the value at that path; KeyError names the missing part."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(f"constitution has no '{dotted}' (missing '{part}')")
            node = node[part]
        return node

    def error(self, name: str) -> ErrorCode:
        return self.errors[name]


def _locate() -> Path:
    override = os.environ.get("CONTEXTGRAPH_CONSTITUTION")
    if override:
        return Path(override)
    for candidate in (_REPO_ROOT, _PACKAGED):
        if candidate.is_file():
            return candidate
    raise ConstitutionError(f"constitution.yaml not found (looked in {_REPO_ROOT} and {_PACKAGED})")


def load(path: Path | None = None) -> Constitution:
    path = path or _locate()
    try:
        # libyaml's C loader when the wheel has it: 4 ms instead of 82 ms, paid by every process (hooks, CLI)
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError) as exc:
        raise ConstitutionError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict) or "errors" not in data:
        raise ConstitutionError(f"{path} is not a ContextGraph constitution (no 'errors' registry)")
    return Constitution(data, path)


@functools.cache
def constitution() -> Constitution:
    """The process-wide constitution, loaded on first use."""
    return load()
