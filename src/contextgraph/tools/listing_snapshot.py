"""Writes tools/listing.json (tools/listing.py says why it exists): the registry of every profile, as tools/list
lists it at start. Run after changing a tool's name, description, arguments or output schema, an alias, a
profile, or anything in constitution.yaml:

    python -m contextgraph.tools.listing_snapshot
"""

from __future__ import annotations

import json
import sys

from contextgraph.constitution import Constitution, constitution
from contextgraph.tools.catalog import build_registry
from contextgraph.tools.listing import SNAPSHOT_PATH, ListedTool, ListingSnapshot, constitution_digest


def snapshot_of(c: Constitution) -> ListingSnapshot:
    registries = {str(profile): build_registry(c, str(profile)) for profile in c.get("server.profiles")}
    anyone = next(iter(registries.values()))  # names, descriptions, schemas and aliases do not vary by profile
    return ListingSnapshot(
        constitution_digest(c),
        {name: ListedTool.of(anyone, spec) for name, spec in anyone.specs.items()},
        {profile: tuple(spec.name for spec in registry.listed()) for profile, registry in registries.items()},
    )


def main() -> int:
    text = json.dumps(snapshot_of(constitution()).to_json(), indent=1, ensure_ascii=False) + "\n"
    SNAPSHOT_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {SNAPSHOT_PATH} ({len(text)} characters)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
