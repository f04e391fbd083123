"""What tools/list answers, as data: each listed tool's name, description (its aliases named in it), input and
output schema, and aliases. Two sources give the same rows:

* the live registry, once the App is built (its active set changes as tool_find activates tools);
* listing.json beside this module, a snapshot of the registry for every profile of the constitution, from which
  `contextgraph serve` answers the handshake before the tool modules and the services are imported (docs/budgets.md
  #cpu-budgets). `python -m contextgraph.tools.listing_snapshot` writes it; tests/contract/test_tool_listing.py
  fails when it no longer matches the registry. It records a digest of the constitution it was made from and is
  not used under any other (an edited constitution.yaml, CONTEXTGRAPH_CONSTITUTION): the server then waits for
  the registry, as before.

Imports nothing of the tool modules: that is what it is for.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextgraph.constitution import Constitution
    from contextgraph.tools.registry import Registry
    from contextgraph.tools.spec import ToolSpec

SNAPSHOT_PATH = Path(__file__).with_name("listing.json")


@dataclass(frozen=True, slots=True)
class ListedTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    aliases: tuple[str, ...]

    @classmethod
    def of(cls, registry: Registry, spec: ToolSpec) -> ListedTool:
        return cls(spec.name, registry.listed_description(spec), registry.input_schemas[spec.name],
                   spec.output_schema, registry.aliases_of[spec.name])


def live_listing(registry: Registry) -> list[ListedTool]:
    """The registry's active tools, in registry order."""
    return [ListedTool.of(registry, spec) for spec in registry.listed()]


def constitution_digest(c: Constitution) -> str:
    return hashlib.sha256(c.path.read_bytes()).hexdigest()


@dataclass(frozen=True, slots=True)
class ListingSnapshot:
    constitution: str  # constitution_digest of the constitution the registry was built under
    tools: dict[str, ListedTool]  # every registered tool, in registry order
    profiles: dict[str, tuple[str, ...]]  # profile → the names it lists at start, in registry order

    def listed(self, profile: str) -> list[ListedTool] | None:
        names = self.profiles.get(profile)
        return None if names is None else [self.tools[name] for name in names]

    def to_json(self) -> dict[str, Any]:
        return {
            "constitution_sha256": self.constitution,
            "profiles": {profile: list(names) for profile, names in self.profiles.items()},
            "tools": [{"name": t.name, "description": t.description, "input_schema": t.input_schema,
                       "output_schema": t.output_schema, "aliases": list(t.aliases)} for t in self.tools.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ListingSnapshot:
        tools = [ListedTool(t["name"], t["description"], t["input_schema"], t["output_schema"], tuple(t["aliases"]))
                 for t in data["tools"]]
        return cls(str(data["constitution_sha256"]), {t.name: t for t in tools},
                   {profile: tuple(names) for profile, names in data["profiles"].items()})


def load_snapshot(c: Constitution, path: Path = SNAPSHOT_PATH) -> ListingSnapshot | None:
    """The snapshot, if there is one and it was made under this constitution; else None."""
    try:
        snapshot = ListingSnapshot.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return snapshot if snapshot.constitution == constitution_digest(c) else None
