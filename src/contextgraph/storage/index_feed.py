"""What the indexes are fed from the store: a scan cut into batches for a rebuild, and the current vectors of
the spaces an oplog entry says were rewritten."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from contextgraph.fingerprint import Fingerprint
from contextgraph.storage.base import MemoryStore, OplogEntry
from contextgraph.storage.index_files import INDEXED_SPACES


def rewritten_spaces(store: MemoryStore, entries: Sequence[OplogEntry],
                     indexed: Sequence[int] = INDEXED_SPACES) -> list[tuple[list[int], list[Fingerprint]]]:
    """The rewritten spaces (of those `indexed`) of the memories `entries` name, their current values, grouped by
    the set of spaces, since _add wants every fingerprint of a batch to hold the same spaces. A memory deleted
    since reads None and is skipped (its delete entry follows)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for e in entries:
        spaces = tuple(s for s in e.spaces if s in indexed)
        if spaces:
            groups.setdefault(spaces, []).append(e.memory_seq)
    out = []
    for spaces, seqs in groups.items():
        fps = store.fingerprints(seqs, spaces=spaces)
        live = [(s, fp) for s, fp in zip(seqs, fps) if fp is not None]
        out.append(([s for s, _ in live], [fp for _, fp in live]))
    return out


def scan_batches(scan: Iterable, upto: int, batch: int) -> Iterable[tuple[list[int], list[Fingerprint]]]:
    seqs: list[int] = []
    fps: list[Fingerprint] = []
    for record, fp in scan:
        if record.seq > upto:
            break  # scan is in seq order; later puts are catch_up's
        seqs.append(record.seq)
        fps.append(fp)
        if len(seqs) == batch:
            yield seqs, fps
            seqs, fps = [], []
    if seqs:
        yield seqs, fps
