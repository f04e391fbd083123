"""tools/listing.json, from which `contextgraph serve` answers tools/list before the tool modules are imported
(tools/listing.py), is the registry's listing for every profile: the same names, descriptions, schemas and
aliases, in the same order, that the live registry lists at start."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from contextgraph.constitution import constitution, load
from contextgraph.tools.catalog import build_registry
from contextgraph.tools.listing import SNAPSHOT_PATH, live_listing, load_snapshot
from contextgraph.tools.listing_snapshot import snapshot_of

REGENERATE = "tools/listing.json is stale: run `python -m contextgraph.tools.listing_snapshot` and commit it"


def test_the_snapshot_is_the_registrys_listing():
    on_disk = json.loads(SNAPSHOT_PATH.read_text(encoding="utf-8"))
    assert on_disk == snapshot_of(constitution()).to_json(), REGENERATE


def test_every_profile_lists_what_the_registry_lists_at_start():
    c = constitution()
    snapshot = load_snapshot(c)
    assert snapshot is not None, REGENERATE
    for profile in c.get("server.profiles"):
        assert snapshot.listed(profile) == live_listing(build_registry(c, profile)), profile


def test_the_snapshot_is_not_used_under_another_constitution(tmp_path: Path):
    edited = tmp_path / "constitution.yaml"
    shutil.copyfile(constitution().path, edited)
    with edited.open("a", encoding="utf-8") as f:
        f.write("\n# an edit\n")
    assert load_snapshot(load(edited)) is None
    assert load_snapshot(constitution(), tmp_path / "missing.json") is None
