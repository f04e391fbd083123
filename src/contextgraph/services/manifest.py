"""get_graph_manifest: the five layers of the system (seed 004) with their live status, the embedder table as it
actually runs, and the size of every index. Everything here is read from the running objects."""

from __future__ import annotations

from typing import Any

from contextgraph.fingerprint import SPACES
from contextgraph.storage.maintenance import STORE_DIR


def _dir_bytes(path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


async def build_manifest(app: Any) -> dict[str, Any]:
    memory = app.memory
    memory.open()
    memory.start_model_load()
    pipeline = memory.loaded_pipeline()
    if pipeline is not None:
        embedders = pipeline.manifest()
        perception = {"status": "ready", "backbone": {"model": pipeline.backbone.model_name,
                                                       "runtime": pipeline.backbone.runtime,
                                                       "hidden_size": pipeline.backbone.hidden_size,
                                                       "max_tokens": pipeline.backbone.max_tokens}}
    else:
        embedders = [{"space": s.id, "name": s.name, "kind": s.kind, "dim": None, "method": None} for s in SPACES]
        perception = {"status": memory.model_status()}
    store = memory.record_store
    count = store.count()
    index_sizes = memory.indexes.sizes()
    registry = app.registry
    return {
        "architecture": "Five layers: Perception turns text into a 13-space fingerprint; Memory keeps memories "
                        "durable in LMDB with per-space indexes; Reasoning retrieves in five fused stages; Meta "
                        "tracks learning (UTL) and drives the cognitive pulse; Action is the MCP tool surface.",
        "layers": {
            "perception": {**perception, "embedders": embedders},
            "memory": {"status": "ready", "memories": count, "data_dir": str(memory.home),
                       "store_bytes": _dir_bytes(memory.home / STORE_DIR), "indexes": index_sizes},
            "reasoning": {"status": "ready" if count else "empty",
                          "stages": ["s1_sparse_prefilter (E13, E6)", "s2_dense_ann (E1 HNSW)",
                                     "s3_rrf_fusion (13 spaces)", "s4_alignment_filter", "s5_maxsim_rerank (E12)"],
                          "stage4": "inactive: no north star yet"},
            "meta": {"status": "ready: UTL (per-space ΔS/ΔC), Kuramoto network, workspace, ego node, "
                               "meta-cognition; dream, neuromodulation and ATC are not built yet",
                     "pulse": app.cognition.pulse(), "lifecycle": app.cognition.lifecycle.stage,
                     "workspace_active": app.workspace.active_id},
            "action": {"status": "ready", "tools_registered": len(registry.specs), "tools_active": len(registry.active)},
        },
    }
