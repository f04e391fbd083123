"""From memories to complete fingerprints: one forward pass of the shared transformer for all texts of a batch,
then each of the 13 embedders over the results, then the completeness check (ARCH-05). Keeps the timing of the
last batch per stage, for benchmarks and `debug_*` tools."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contextgraph.embedders import code_model
from contextgraph.embedders.backbone import OnnxBackbone, default_model_dir, load_backbone
from contextgraph.embedders.base import Backbone, Embedder, MemoryInput
from contextgraph.embedders.e07_code import CodeEmbedder
from contextgraph.embedders.registry import default_embedders
from contextgraph.embedders.side_forward import SideForward
from contextgraph.embedders.validation import check_fingerprint
from contextgraph.errors import ContextGraphError, EmbeddingError, InvalidFingerprint, InvalidParams
from contextgraph.fingerprint import MODALITIES, SPACES, Fingerprint


@dataclass(frozen=True, slots=True)
class Draft:
    """A memory (or query) to fingerprint."""

    text: str
    modality: str = "text"
    timestamp: float = 0.0  # unix seconds
    session_position: int = 0
    global_position: int = 0
    neighbours: tuple[tuple[float, np.ndarray], ...] = field(default_factory=tuple)  # (edge weight, E1 vector)


@dataclass(frozen=True, slots=True)
class StageTimings:
    items: int
    encode_ms: float
    embedder_ms: dict[int, float]  # space → milliseconds for the whole batch
    validate_ms: float
    total_ms: float

    def as_dict(self) -> dict:
        return {
            "items": self.items,
            "encode_ms": round(self.encode_ms, 3),
            "embedder_ms": {f"E{space}": round(ms, 3) for space, ms in self.embedder_ms.items()},
            "validate_ms": round(self.validate_ms, 3),
            "total_ms": round(self.total_ms, 3),
        }


class FingerprintPipeline:
    def __init__(self, backbone: Backbone, embedders: Sequence[Embedder] | None = None,
                 code_encoder: Backbone | None = None, side_forward: bool = False) -> None:
        """`side_forward`: E7's code encoder (when it has one) runs beside the shared forward, on a thread of
        its own (embedders.side_forward: the CPU path, both forwards on one intra-op thread each)."""
        self.backbone = backbone
        chosen = default_embedders(backbone, code_encoder) if embedders is None else embedders
        self.embedders = tuple(sorted(chosen, key=lambda e: e.space))  # index i holds space i + 1
        spaces = [e.space for e in self.embedders]
        if sorted(spaces) != [s.id for s in SPACES]:
            raise InvalidFingerprint(
                f"the pipeline needs exactly one embedder per space 1..{len(SPACES)}, got spaces {spaces}"
            )
        for embedder in self.embedders:
            space = SPACES[embedder.space - 1]
            if embedder.name != space.name or embedder.kind != space.kind:
                raise InvalidFingerprint(
                    f"embedder for E{space.id} says {embedder.name}/{embedder.kind}, "
                    f"the space is {space.name}/{space.kind}"
                )
        self._manifest = [
            {"space": e.space, "name": e.name, "kind": e.kind, "dim": int(e.dim), "method": e.method}
            for e in self.embedders
        ]
        self.last_timings: StageTimings | None = None
        code = self.embedders[6]
        # E7 with a code encoder of its own, whose forward runs beside the shared one, and the thread it runs on
        self._side_code = code if side_forward and isinstance(code, CodeEmbedder) and code.encoder else None
        self._side = SideForward("e7-forward") if self._side_code is not None else None

    def manifest(self) -> list[dict]:
        """Per space: {space, name, kind, dim, method} — what get_graph_manifest reports."""
        return [dict(entry) for entry in self._manifest]

    def method(self, space: int) -> str:
        """What makes space `space`'s vectors now (the manifest's method): a store records it per space."""
        return self._manifest[space - 1]["method"]

    def embed_space(self, space: int, texts: Sequence[str], modalities: Sequence[str]) -> list[Any]:
        """One space's vectors for these texts (a store's space re-embedded after its embedder changed): straight
        from the texts when the embedder can (E7 with a code encoder of its own), else from whole fingerprints."""
        embedder = self.embedders[space - 1]
        direct = getattr(embedder, "embed_texts", None)
        if direct is not None and getattr(embedder, "encoder", None) is not None:
            return direct(texts, modalities)
        return [fp[space] for fp in self.embed([Draft(t, m) for t, m in zip(texts, modalities)])]

    def embed(self, items: Sequence[Draft]) -> list[Fingerprint]:
        """One complete fingerprint per draft, in order; raises InvalidParams for a bad draft, EmbeddingError when
        an embedder fails, InvalidFingerprint / DimensionMismatch when a result is incomplete or misshapen."""
        return self._embed(items)[0]

    def embed_with_triples(self, items: Sequence[Draft]) -> tuple[list[Fingerprint], list[list[Any]]]:
        """embed(), plus each draft's E11 relation triples with pooled head and tail vectors from the same
        forward pass (stored beside the fingerprint for E11's TransE novelty)."""
        return self._embed(items, with_triples=True)

    def _embed(self, items: Sequence[Draft], with_triples: bool = False) -> tuple[list[Fingerprint], list[list[Any]]]:
        started = time.perf_counter()
        for draft in items:
            check_draft(draft)
        texts = [draft.text for draft in items]
        code = self._side_code
        side = self._side.submit(lambda: code.encoder_pooled(texts)) if self._side and code and items else None
        encoded = self.backbone.encode(texts)
        encoded_at = time.perf_counter()
        inputs = [
            MemoryInput(
                encoded=enc, modality=d.modality, timestamp=float(d.timestamp),
                session_position=int(d.session_position), global_position=int(d.global_position),
                neighbours=tuple(d.neighbours),
            )
            for d, enc in zip(items, encoded)
        ]
        fingerprints: list[Fingerprint] = [{} for _ in items]
        triples: list[list[Any]] = [[] for _ in items]
        embedder_ms: dict[int, float] = {}
        for embedder in self.embedders:
            t0 = time.perf_counter()
            # E11's vectors and relation triples from one search for entity mentions per text (its time includes
            # the triples); a configured E11 model without triples yields none
            with_e11_triples = getattr(embedder, "embed_with_triples", None) if embedder.space == 11 else None
            if with_triples and with_e11_triples is not None:
                vectors, triples = _run(embedder, inputs, with_e11_triples)
            elif side is not None and code is not None and embedder is code:  # its forward ran beside the shared one
                vectors = _run(embedder, inputs, lambda batch: code.finish(side.result(), texts,
                                                                           [item.modality for item in batch]))
            else:
                vectors = list(_run(embedder, inputs, embedder.embed_batch))
            embedder_ms[embedder.space] = (time.perf_counter() - t0) * 1e3
            if len(vectors) != len(inputs):
                raise InvalidFingerprint(
                    f"E{embedder.space} returned {len(vectors)} vectors for {len(inputs)} memories",
                    space=embedder.space,
                )
            for fingerprint, vector in zip(fingerprints, vectors):
                fingerprint[embedder.space] = vector
        t0 = time.perf_counter()
        for fingerprint in fingerprints:
            check_fingerprint(fingerprint, self._manifest)
        done = time.perf_counter()
        self.last_timings = StageTimings(
            items=len(items), encode_ms=(encoded_at - started) * 1e3, embedder_ms=embedder_ms,
            validate_ms=(done - t0) * 1e3, total_ms=(done - started) * 1e3,
        )
        return fingerprints, triples


def build_pipeline(settings: Any) -> FingerprintPipeline:
    """The pipeline the server runs, from Settings: the model directory (None: the packaged all-MiniLM-L6-v2),
    where exported graphs are cached (the data directory by default, keyed by the model's hash), the runtime
    ("auto" | "onnx" | "torch"), the int8 graph, the device, and E7's code encoder (`code_model`)."""
    return load_pipeline(settings.model_dir or default_model_dir(), settings.models_dir, runtime=settings.runtime,
                         quantized=settings.quantized, device=settings.device, code_model=settings.code_model)


def load_pipeline(model_dir: Path, cache_dir: Path, *, runtime: str, quantized: bool, device: str,
                  dtype: str | None = None, code_model: str = "shipped") -> FingerprintPipeline:
    """The shared backbone from `model_dir` and E7's encoder per `code_model` (code_model_dir): what the server
    and each worker of a PipelinePool load. On CPU (ONNX Runtime) with a code encoder, the two forwards run side
    by side on one intra-op thread each (embedders.side_forward); alone, the shared forward takes two."""
    code_dir = code_model_dir(code_model, cache_dir)
    threads = 2 if code_dir is None else 1
    backbone = load_backbone(model_dir, cache_dir, runtime=runtime, quantized=quantized, device=device, dtype=dtype,
                             threads=threads)
    if code_dir is None:
        return FingerprintPipeline(backbone)
    # E7's second forward in int8 on CPU (docs/spaces.md#e7-code): 2.5x faster, E7 alone 0.6362 -> 0.6333 nDCG@10
    code = load_backbone(code_dir, cache_dir, runtime=runtime, quantized=True, device=device, dtype=dtype,
                         threads=threads)
    side = isinstance(backbone, OnnxBackbone) and isinstance(code, OnnxBackbone)
    return FingerprintPipeline(backbone, code_encoder=code, side_forward=side)


def code_model_dir(choice: str, cache_dir: Path) -> Path | None:
    """E7's encoder directory for Settings.code_model: "shipped" (the code model trained for E7, assembled from
    the packaged base model on first use), "shared" (None: E7 pools the shared forward), or a model directory."""
    if choice == "shared":
        return None
    if choice == "shipped":
        return code_model.assemble(default_model_dir(), cache_dir)
    return Path(choice)


def _run(embedder: Embedder, inputs: list[MemoryInput], method: Callable[[list[MemoryInput]], Any]) -> Any:
    try:
        return method(inputs)
    except ContextGraphError:
        raise
    except Exception as exc:  # a bug or a bad model: name the space, keep the cause for the log
        raise EmbeddingError(f"E{embedder.space} ({embedder.name}) failed: {exc}", space=embedder.space) from exc


def check_draft(draft: Draft) -> None:
    if not isinstance(draft.text, str):
        raise InvalidParams("a memory's text must be a string", field="text")
    if draft.modality not in MODALITIES:
        raise InvalidParams(
            f"unknown modality {draft.modality!r}; allowed: {', '.join(MODALITIES)}",
            field="modality", allowed=list(MODALITIES),
        )
    # E3 reads the UTC calendar, which Python's datetime covers for years 1..9999.
    if not (isinstance(draft.timestamp, (int, float)) and math.isfinite(draft.timestamp)
            and -62_135_596_800 <= draft.timestamp < 253_402_300_800):
        raise InvalidParams(f"timestamp must be finite unix seconds in years 1..9999, got {draft.timestamp!r}",
                            field="timestamp")
    for name in ("session_position", "global_position"):
        value = getattr(draft, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InvalidParams(f"{name} must be an integer ≥ 0, got {value!r}", field=name, min=0)
