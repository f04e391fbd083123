"""get_graph_manifest: the five layers of the system with their live status, the embedder table as it
actually runs, and the size of every index. Everything here is read from the running objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextgraph.fingerprint import SPACES
from contextgraph.services.container import Services
from contextgraph.storage.maintenance import STORE_DIR


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


async def build_manifest(services: Services, tools_registered: int, tools_active: int) -> dict[str, Any]:
    storage = await services.storage.ready()
    perception = services.perception
    perception.start_model_load()
    pipeline = perception.loaded_pipeline()
    if pipeline is not None:
        embedders = pipeline.manifest()
        backbone = pipeline.backbone
        layer = {"status": "ready", "backbone": {"model": backbone.model_name, "runtime": backbone.runtime,
                                                 "hidden_size": backbone.hidden_size,
                                                 "max_tokens": backbone.max_tokens}}
    else:
        embedders = [{"space": s.id, "name": s.name, "kind": s.kind, "dim": None, "method": None} for s in SPACES]
        layer = {"status": perception.model_status()}
    count = await storage.read(lambda store: store.count())
    index_sizes = storage.indexes.sizes()
    return {
        "architecture": "Five layers: Perception turns text into a 13-space fingerprint; Memory keeps memories "
                        "durable in LMDB with per-space indexes; Reasoning retrieves in five fused stages; Meta "
                        "tracks learning (UTL) and drives the cognitive pulse; Action is the MCP tool surface.",
        "layers": {
            "perception": {**layer, "embedders": embedders, "re_embedding": _re_embedding(storage.space_refresh)},
            "memory": {"status": "ready", "memories": count, "data_dir": str(storage.home),
                       "store_bytes": _dir_bytes(storage.home / STORE_DIR), "indexes": index_sizes},
            "reasoning": {"status": "ready" if count else "empty",
                          "stages": ["s1_sparse_prefilter (E13, E6)", "s2_dense_ann (E1 HNSW)",
                                     "s3_rrf_fusion (13 spaces)", "s4_purpose", "s5_maxsim_rerank (E12)"],
                          "stage4": _stage4(services)},
            "meta": {"status": "ready: UTL (per-space ΔS/ΔC), Kuramoto network, workspace, ego node, "
                               "meta-cognition, dream consolidation, neuromodulation, steering, adaptive "
                               "thresholds (ATC) and Meta-UTL, purpose (north star, stage 4)",
                     "dream": services.dream.phase_description(),
                     "pulse": services.cognition.pulse(), "lifecycle": services.cognition.lifecycle.stage,
                     "workspace_active": services.workspace.active_id},
            "action": {"status": "ready", "tools_registered": tools_registered, "tools_active": tools_active},
        },
    }


def _re_embedding(refresh: Any) -> dict[str, Any]:
    """Spaces being re-embedded across the store (their embedder changed), with progress; {} when none."""
    report = refresh.report()
    if refresh.stale:
        report["note"] = ("left out of searches until every memory is re-embedded: "
                          + ", ".join(f"E{s}" for s in sorted(refresh.stale)))
    return report


def _stage4(services: Services) -> dict[str, Any]:
    view = services.purpose.teleology.star_view()
    if view is None:
        return {"active": False, "reason": "no north star yet: auto_bootstrap_north_star derives one"}
    return {"active": True, "star_id": view.id, "threshold": view.threshold,
            "mode": services.memory.retrieval_settings.stage4_mode, "goals": len(view.goals or ())}
