"""compute_delta_sc (docs/utl.md): what updating a stored vertex would do to entropy and coherence.

The vertex's new version (a fingerprint the caller supplies, or content embedded here) and its old version (the
stored fingerprint unless the caller supplies one) are each scored against the store with the vertex itself
excluded (services.delta_sc): per-space ΔS and ΔC with the method used, the aggregates, Johari per space and
overall, and the change from old to new. Graph context: the vertex's edges (their effective weights feed E8's
connectivity); cluster context: each space's neighbourhood. Read-only: nothing is stored or changed.

A fingerprint arrives as JSON, one entry per space keyed "E1".."E13" (or "1".."13"): dense → list of floats;
sparse → {"indices": [...], "values": [...]}; binary → list of byte values (0..255, packed bits); multivector →
list of token vectors. Every space must be present with its configured dimension (ARCH-05); otherwise -32602
naming what is missing or mis-shaped.
"""

from __future__ import annotations

import re
import time
from typing import Any

import anyio
import numpy as np

from contextgraph.constitution import Constitution
from contextgraph.embedders.validation import check_fingerprint
from contextgraph.errors import DimensionMismatch, InvalidFingerprint, InvalidParams, NodeNotFound
from contextgraph.fingerprint import SPACES, Fingerprint, Sparse
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.engine.delta_sc_result import DeltaSc
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.utl.johari import classify

_SPACE_KEY = re.compile(r"E?([0-9]{1,2})", re.ASCII | re.IGNORECASE)


def parse_fingerprint(raw: Any, manifest: list[dict], field: str) -> Fingerprint:
    """A JSON fingerprint → Fingerprint, validated against the configured embedders; -32602 on any fault."""
    if not isinstance(raw, dict):
        raise InvalidParams(f"{field} must be an object with one entry per space, E1..E13", field=field)
    by_space: dict[int, Any] = {}
    for key, value in raw.items():
        match = _SPACE_KEY.fullmatch(str(key))
        if match is None or not 1 <= int(match.group(1)) <= len(SPACES):
            raise InvalidParams(f"{field} has an unknown space {key!r}; keys are E1..E13", field=field)
        by_space[int(match.group(1))] = value
    kinds = {int(e["space"]): e for e in manifest}
    missing = sorted(set(kinds) - set(by_space))
    if missing:
        raise InvalidParams(f"{field} is incomplete: all 13 spaces are required (ARCH-05); missing "
                            f"{', '.join(f'E{m}' for m in missing)}", field=field, missing=[f"E{m}" for m in missing],
                            reason="INVALID_FINGERPRINT")
    fingerprint: Fingerprint = {}
    try:
        for space, value in by_space.items():
            fingerprint[space] = _vector(kinds[space]["kind"], value)
        check_fingerprint(fingerprint, manifest)
    except (InvalidFingerprint, DimensionMismatch) as exc:
        raise InvalidParams(f"{field}: {exc}", field=field, reason=type(exc).__name__) from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidParams(f"{field}: a vector could not be read ({exc}); dense = list of numbers, sparse = "
                            "{indices, values}, binary = list of bytes, multivector = list of vectors",
                            field=field) from None
    return fingerprint


def _integers(value: Any, lo: int, hi: int, what: str) -> np.ndarray:
    """Whole numbers in [lo, hi] (JSON has one number type: 1.7 is refused, not truncated to 1)."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)) or arr.min() < lo
                     or arr.max() > hi):
        raise ValueError(f"{what} must be whole numbers in {lo}..{hi}")
    return arr


def _vector(kind: str, value: Any) -> Any:
    if kind == "sparse":
        if not isinstance(value, dict):
            raise ValueError("a sparse space needs {indices, values}")
        indices = _integers(value.get("indices", []), 0, 2**31 - 1, "sparse indices")
        return Sparse(indices.astype(np.int32), np.asarray(value.get("values", []), dtype=np.float32))
    if kind == "binary":
        return _integers(value, 0, 255, "binary bytes").astype(np.uint8)
    return np.asarray(value, dtype=np.float32)


def fingerprint_to_json(fingerprint: Fingerprint) -> dict[str, Any]:
    """The inverse of parse_fingerprint (tests and clients that hold a fingerprint)."""
    out: dict[str, Any] = {}
    for space in SPACES:
        v = fingerprint[space.id]
        if isinstance(v, Sparse):
            out[f"E{space.id}"] = {"indices": v.indices.tolist(), "values": v.values.tolist()}
        else:
            out[f"E{space.id}"] = np.asarray(v).tolist()
    return out


async def compute(storage: StoreHandle, perception: Perception, cognition: CognitiveState, constitution: Constitution,
                  vertex_id: str, *,
                  new_fingerprint: Any = None, new_content: str | None = None, old_fingerprint: Any = None,
                  old_content: str | None = None, diagnostics: bool = False) -> dict[str, Any]:
    started = time.perf_counter()
    store = (await storage.ready()).store
    record = await storage.live_record(vertex_id)  # compute_delta_sc scores an update of a stored memory
    pipeline = await perception.pipeline()
    manifest = pipeline.manifest()
    new = parse_fingerprint(new_fingerprint, manifest, "new_fingerprint") if new_fingerprint is not None else None
    old = parse_fingerprint(old_fingerprint, manifest, "old_fingerprint") if old_fingerprint is not None else None
    to_embed = [text for text in (new_content if new is None else None, old_content if old is None else None) if text]
    embedded, triples = (await perception.embed_texts(to_embed, record.modality, record.session) if to_embed
                         else ([], []))
    # its triples are taken out of the TransE fit: the vertex is not its own context
    own_triples = await storage.read(lambda s: s.triples_of(vertex_id))
    new_triples: list = []
    old_triples: list = []
    if new is None:
        new, new_triples = embedded.pop(0), triples.pop(0)
    if old is None:
        old, old_triples = ((embedded.pop(0), triples.pop(0)) if old_content
                            else ((await storage.read(lambda s: s.fingerprints([record.seq])))[0], own_triples))
    if old is None:  # forgotten between the lookup and the read
        raise NodeNotFound(f"Memory {vertex_id} was deleted while its update was being scored.",
                           node_id=vertex_id)
    state = cognition.snapshot()
    edges = await storage.read(lambda s: s.graph_read(lambda g: g.edges(vertex_id)))
    edge_weights = [e.weight for e in edges]

    def run() -> tuple[DeltaSc, DeltaSc]:
        kw = dict(coherence_history=state["coherence_history"], emotional_weight=state["emotional_weight"],
                  exclude=frozenset({record.seq}),
                  edge_weights=edge_weights, own_triples=own_triples)
        embedders = pipeline.embedders
        return (storage.delta_sc.compute(store, storage.indexes, embedders, new, triples=new_triples, **kw),
                storage.delta_sc.compute(store, storage.indexes, embedders, old, triples=old_triples, **kw))

    after, before = await anyio.to_thread.run_sync(run)
    p = int(constitution.get("pulse.precision"))
    payload: dict[str, Any] = {
        "vertex_id": vertex_id,
        "delta_s": [round(v, p) for v in after.delta_s],
        "delta_c": [round(v, p) for v in after.delta_c],
        "per_space": after.per_space(p),
        "methods": {f"E{s.space}": s.method for s in after.spaces},
        "aggregate": {"delta_s": round(after.entropy, p), "delta_c": round(after.coherence, p),
                      "learning_score": round(after.learning_score, p)},
        "johari": {"quadrant": after.quadrant, "suggested_action": cognition.action_for(after.quadrant),
                   "per_space": [classify(s, c, after.threshold) for s, c in zip(after.delta_s, after.delta_c)]},
        "old": {"delta_s": round(before.entropy, p), "delta_c": round(before.coherence, p),
                "learning_score": round(before.learning_score, p), "quadrant": before.quadrant},
        "change": {"delta_s": round(after.entropy - before.entropy, p),
                   "delta_c": round(after.coherence - before.coherence, p),
                   "per_space_delta_s": [round(a - b, p) for a, b in zip(after.delta_s, before.delta_s)],
                   "per_space_delta_c": [round(a - b, p) for a, b in zip(after.delta_c, before.delta_c)]},
        "lifecycle": {"stage": after.lifecycle.stage, "lambda_s": after.lifecycle.lambda_s,
                      "lambda_c": after.lifecycle.lambda_c},
        "sources": {"new": "new_fingerprint" if new_fingerprint is not None else "new_content (embedded)",
                    "old": ("old_fingerprint" if old_fingerprint is not None else
                            "old_content (embedded)" if old_content else "the stored fingerprint")},
    }
    if diagnostics:
        payload["diagnostics"] = {
            "per_space": after.diagnostics(p),
            "edge_weights": [round(w, p) for w in edge_weights],
            "consistency": round(after.consistency, p),
            "coherence_history_length": len(state["coherence_history"]),
            "timings_ms": {"new": after.timings_ms, "old": before.timings_ms,
                           "total": round((time.perf_counter() - started) * 1000, 3)},
        }
    return payload
