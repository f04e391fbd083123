"""A saved index set on disk: which index kind serves each space, the file each is saved to, and reading them
back (IndexSet.load, and `contextgraph doctor`'s check, which reads without loading the whole set at once)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from contextgraph.storage.base import MemoryStore
from contextgraph.storage.binary_index import BinaryIndex
from contextgraph.storage.derived_index import BORROWED, DERIVED_SCORE, TIMELINES, BorrowedIndex, TimelineIndex
from contextgraph.storage.hnsw_index import DenseIndex
from contextgraph.storage.sparse_index import SparseIndex

GRAPH_SPACES = (1, 5, 7, 11)
SPARSE_SPACES = (6, 13)
BINARY_SPACES = (9,)
INDEXED_SPACES = tuple(sorted((*GRAPH_SPACES, *DERIVED_SCORE, *SPARSE_SPACES, *BINARY_SPACES)))
MANIFEST_VERSION = 2  # 2: E2-E4, E8, E10 derived (a version-1 set is rebuilt on open)
DIGESTS = "sha256"  # a manifest entry's {file: hex digest} of each file the index saved
FILES = {"dense": "e{:02d}.hnsw", "sparse": "e{:02d}.sparse.npz", "binary": "e{:02d}.binary.npz",
         "timeline": "e{:02d}.timeline.npz", "borrowed": "e{:02d}.borrowed.npz"}

Index = DenseIndex | SparseIndex | BinaryIndex | TimelineIndex | BorrowedIndex


class UnreadableIndex(Exception):
    """A saved index file that does not load as what the manifest says it is (truncated, overwritten, ...)."""


def kind_of(space: int) -> str:
    """The index kind that serves `space` (a key of FILES)."""
    if space in TIMELINES:
        return "timeline"
    if space in BORROWED:
        return "borrowed"
    return "dense" if space in GRAPH_SPACES else "sparse" if space in SPARSE_SPACES else "binary"


def read_manifest(directory: Path) -> dict:
    text = (directory / "manifest.json").read_text()  # FileNotFoundError passes: load() tells the cases apart
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise UnreadableIndex(f"manifest.json: {type(exc).__name__}: {exc}") from exc
    if not isinstance(manifest, dict):
        raise UnreadableIndex("manifest.json: not a JSON object")
    return manifest


def file_digest(path: Path) -> str:
    # SHA-256: OpenSSL's runs on the CPU's SHA instructions, over twice blake2b's rate here (1.4 vs 0.6 GB/s),
    # and a million memories' graphs are gigabytes, hashed at every start
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def saved_digests(directory: Path, name: str) -> dict[str, str]:
    """The digest of every file an index saved as `name` wrote (a dense index writes two siblings beside it)."""
    return {path.name: file_digest(path) for path in sorted(directory.iterdir())
            if path.name == name or path.name.startswith(name + ".")}


def verify_digests(directory: Path, entry: dict) -> None:
    """UnreadableIndex unless every file of the entry hashes to what was saved. hnswlib trusts its file: a few
    garbled bytes inside a graph of the right size crashed the process (SIGSEGV) instead of failing the load,
    and the other loaders can take a flipped bit for a value. A file with no digest is not trusted either."""
    name = entry["file"]
    digests = entry.get(DIGESTS)
    if not isinstance(digests, dict) or name not in digests:
        raise UnreadableIndex(f"{name}: no checksum was saved for it")
    for file, expected in digests.items():
        if Path(file).name != file or not (file == name or file.startswith(name + ".")):
            raise UnreadableIndex(f"{name}: the manifest lists {file!r} among its files")
        if file_digest(directory / file) != expected:  # FileNotFoundError passes: load() tells the cases apart
            raise UnreadableIndex(f"{file}: checksum mismatch, the file changed after it was saved")


def verify_set(directory: Path, entries: Sequence[dict]) -> None:
    """verify_digests of every entry, the files hashed on a few threads (hashlib lets go of the GIL)."""
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        for done in [pool.submit(verify_digests, directory, entry) for entry in entries]:
            done.result()  # the first entry's problem, in manifest order


def load_entry(directory: Path, entry: dict, ef_search: int | None, *, verified: bool = False) -> Index:
    """One manifest entry's index, its files' checksums verified first (unless the caller did), then loaded and
    checked against the entry; UnreadableIndex names the file."""
    path = directory / entry["file"]
    if not verified:
        verify_digests(directory, entry)
    try:
        index = load_index(path, entry["kind"], ef_search)
    except FileNotFoundError:
        raise  # load() tells a set being replaced from a missing file
    except Exception as exc:  # whichever way the loader failed, the file is what is wrong
        raise UnreadableIndex(f"{path.name}: {type(exc).__name__}: {exc}") from exc
    if len(index) != entry["size"]:  # parsed, but not the index that was saved
        raise UnreadableIndex(f"{path.name}: holds {len(index)} entries, the manifest says {entry['size']}")
    return index


def load_index(path: Path, kind: str, ef_search: int | None) -> Index:
    if kind == "dense":
        return DenseIndex.load(path, ef_search)
    if kind == "sparse":
        return SparseIndex.load(path)
    if kind == "binary":
        return BinaryIndex.load(path)
    if kind == "timeline":
        return TimelineIndex.load(path)
    if kind == "borrowed":
        return BorrowedIndex.load(path)
    raise ValueError(f"unknown index kind {kind!r}")


def saved_set_problems(directory: Path | str, store: MemoryStore | None = None) -> list[str]:
    """What keeps the saved set in `directory` from loading ([] when it would load, or there is none), one
    index in memory at a time; reads only (`contextgraph doctor`). A set being replaced by a running save
    right now may show a transient problem."""
    directory = Path(directory)
    if not directory.exists():
        return []
    try:
        manifest = read_manifest(directory)
        if manifest.get("version") != MANIFEST_VERSION:
            return [f"manifest version {manifest.get('version')!r}, this version reads {MANIFEST_VERSION}"]
        entries = list(manifest["spaces"].values())
    except Exception as exc:  # reported, like every other way a saved set can be broken
        return [str(exc) if isinstance(exc, UnreadableIndex) else f"manifest.json: {type(exc).__name__}: {exc}"]
    problems = []
    for entry in entries:
        try:
            load_entry(directory, entry, None)
        except Exception as exc:
            problems.append(str(exc) if isinstance(exc, UnreadableIndex) else f"{type(exc).__name__}: {exc}")
    if store is not None and manifest.get("store_id") != getattr(store, "store_id", None):
        problems.append("the saved indexes belong to another store")
    elif store is not None and manifest.get("applied_seq", 0) > store.last_seq():
        problems.append(f"the saved indexes are ahead of the store (seq {manifest['applied_seq']} > "
                        f"{store.last_seq()})")
    return problems
