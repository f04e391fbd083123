"""Teleological profiles (named space weights), the synergy matrix and fusion (manage_teleological_profile,
update_synergy_matrix, fuse_embeddings). State lives in the teleology document (services.teleology)."""

from __future__ import annotations

import re
import time
from typing import Any

import anyio
import numpy as np

from contextgraph.errors import InvalidParams, NodeNotFound
from contextgraph.fingerprint import SPACES, Fingerprint
from contextgraph.retrieval.similarity import space_similarities
from contextgraph.services.purpose.teleology import TeleologyService
from contextgraph.services.runtime.perception import Perception
from contextgraph.storage.base import MemoryStore
from contextgraph.teleology import synergy
from contextgraph.teleology.fusion import fuse, method_weights

FUSED_DOCUMENT = "teleology/fused/"
FEEDBACK = {"relevant": 1.0, "partially_relevant": 0.5, "not_relevant": 0.0}


class TeleologyProfiles:
    def __init__(self, teleology: TeleologyService, perception: Perception) -> None:
        self.teleology = teleology
        self.storage = teleology.storage
        self.perception = perception
        t = teleology.settings
        self.presets: dict[str, list[float]] = {k: [float(x) for x in v] for k, v in t["task_presets"].items()}
        self.default_weights = [float(teleology.constitution["retrieval"]["space_weights"].get(s.id, 0.0))
                                for s in SPACES]
        self.syn = t["synergy"]
        self.fusion = t["fusion"]
        self.max_profiles = int(t["profiles_max"])

    # -- profiles --------------------------------------------------------------------------------------------
    async def manage(self, action: str, profile_id: str | None, fields: dict[str, Any]) -> dict[str, Any]:
        await self.storage.ready()
        profiles: dict[str, Any] = dict(self.teleology.state().get("profiles") or {})
        if action == "list":
            return {"action": "list", "count": len(profiles), "profiles": list(profiles.values())}
        if action == "create":
            name = fields.get("name") or profile_id
            if not name:
                raise InvalidParams("create needs a name (or a profile_id).", field="name")
            pid = profile_id or _slug(name)
            if pid in profiles:
                raise InvalidParams(f"A profile with id {pid!r} exists already; use action=update to change it.",
                                    field="profile_id", existing=sorted(profiles))
            if len(profiles) >= self.max_profiles:
                raise InvalidParams(f"At most {self.max_profiles} profiles; delete one first.", field="action")
            now = time.time()
            profile = {"id": pid, "name": name, "task_type": fields.get("task_type") or "custom",
                       "embedder_weights": self._weights(fields), "group_priorities": self._groups(fields),
                       "fusion_strategy": fields.get("fusion_strategy") or "hierarchical",
                       "created_at": now, "updated_at": now}
            await self._store(pid, profile, {"operation": "profile_created", "profile_id": pid})
            return {"action": "create", "profile": profile}
        if profile_id is None:
            raise InvalidParams(f"{action} needs a profile_id.", field="profile_id", allowed=sorted(profiles))
        if profile_id not in profiles:
            raise NodeNotFound(f"No teleological profile has id {profile_id!r}. The profiles: "
                               f"{sorted(profiles) or 'none'} (action=list shows them).", field="profile_id",
                               allowed=sorted(profiles))
        if action == "read":
            return {"action": "read", "profile": profiles[profile_id]}
        if action == "delete":
            await self._store(profile_id, None, {"operation": "profile_deleted", "profile_id": profile_id})
            return {"action": "delete", "deleted": profile_id, "profile": profiles[profile_id]}
        old = profiles[profile_id]
        new = {**old, "updated_at": time.time()}
        if fields.get("name"):
            new["name"] = fields["name"]
        if fields.get("task_type"):
            new["task_type"] = fields["task_type"]
        if fields.get("embedder_weights") is not None or (fields.get("task_type") and fields["task_type"] != "custom"):
            new["embedder_weights"] = self._weights(fields)
        if fields.get("group_priorities") is not None:
            new["group_priorities"] = self._groups(fields)
        if fields.get("fusion_strategy"):
            new["fusion_strategy"] = fields["fusion_strategy"]
        await self._store(profile_id, new, {"operation": "profile_updated", "profile_id": profile_id})
        return {"action": "update", "profile": new, "previous": old}

    def _weights(self, fields: dict[str, Any]) -> list[float]:
        given = fields.get("embedder_weights")
        if given is None:
            preset = self.presets.get(fields.get("task_type") or "custom")
            return list(preset) if preset else list(self.default_weights)
        if sum(given) <= 0:
            raise InvalidParams("embedder_weights must not all be 0: at least one space has to count.",
                                field="embedder_weights")
        return [float(x) for x in given]

    def _groups(self, fields: dict[str, Any]) -> dict[str, float]:
        given = fields.get("group_priorities") or {}
        return {g: float(given.get(g, 1.0)) for g in self.teleology.groups}

    async def _store(self, profile_id: str, profile: dict[str, Any] | None, log: dict[str, Any]) -> None:
        """Set (or, with None, delete) one profile in the profiles as saved when the write runs: under the
        service's lock, so two concurrent calls each keep the other's change (a copy read before awaiting the
        write would put back what the other call just removed or drop what it added)."""
        def mutate(state: dict[str, Any]) -> None:
            profiles = dict(state.get("profiles") or {})
            if log["operation"] == "profile_created" and profile_id in profiles:
                raise InvalidParams(f"A profile with id {profile_id!r} exists already; use action=update to "
                                    "change it.", field="profile_id", existing=sorted(profiles))
            if profile is None:
                profiles.pop(profile_id, None)
            else:
                profiles[profile_id] = profile
            state["profiles"] = profiles
            self.teleology.log_operation(state, log)

        await anyio.to_thread.run_sync(lambda: self.teleology.save(mutate))

    def profile(self, profile_id: str | None) -> dict[str, Any] | None:
        if profile_id is None:
            return None
        profiles = self.teleology.state().get("profiles") or {}
        if profile_id not in profiles:
            raise NodeNotFound(f"No teleological profile has id {profile_id!r}; manage_teleological_profile "
                               "action=list shows them.", field="profile_id", allowed=sorted(profiles))
        return profiles[profile_id]

    def matrix(self) -> np.ndarray:
        m = self.teleology.state().get("synergy")
        return synergy.initial(float(self.syn["prior"])) if m is None else np.asarray(m, dtype=np.float64)

    # -- synergy ---------------------------------------------------------------------------------------------
    async def update_synergy(self, query_id: str, result_id: str, feedback: str, relevance: float | None,
                             rate: float, scope: str) -> dict[str, Any]:
        await self.storage.ready()
        pipeline = await self.perception.pipeline()
        by_space = self.teleology.use_embedders(pipeline.embedders)
        fq, fr = await self.fingerprints_of([query_id, result_id], ("query_vector_id", "result_vector_id"))
        sims = np.array([float(space_similarities(by_space, s, fq, [fr])[0]) for s in SPACES])
        y = FEEDBACK[feedback] if relevance is None else relevance
        floor = float(self.syn["contribution_floor"])
        before = after = changed = np.zeros((13, 13))

        def mutate(state: dict[str, Any]) -> None:
            # from the matrix as saved now (under the service's lock), so concurrent feedback all counts
            nonlocal before, after, changed
            saved = state.get("synergy")
            before = synergy.initial(float(self.syn["prior"])) if saved is None else np.asarray(saved, np.float64)
            after, changed = synergy.update(before, sims, y, rate, scope, floor)
            state["synergy"] = [[round(float(v), 6) for v in row] for row in after]
            state["synergy_updates"] = int(state.get("synergy_updates", 0)) + 1
            self.teleology.log_operation(state, {"operation": "synergy_updated", "feedback": feedback,
                                                 "pairs": int(np.triu(changed).sum())})

        state = await anyio.to_thread.run_sync(lambda: self.teleology.save(mutate))
        delta = after - before
        i, j = np.triu_indices(13)
        order = np.argsort(-np.abs(delta[i, j]), kind="stable")[:10]
        return {"query_vector_id": query_id, "result_vector_id": result_id, "feedback": feedback, "relevance": y,
                "learning_rate": rate, "update_scope": scope,
                "space_similarities": {f"E{s.id}": round(float(v), 4) for s, v in zip(SPACES, sims)},
                "pairs_updated": int(np.triu(changed).sum()),
                "largest_changes": [{"pair": f"E{i[k] + 1}xE{j[k] + 1}", "from": round(float(before[i[k], j[k]]), 5),
                                     "to": round(float(after[i[k], j[k]]), 5)}
                                    for k in order if delta[i[k], j[k]] != 0],
                "updates_total": state["synergy_updates"],
                "matrix": [[round(float(v), 4) for v in row] for row in after],
                "rule": "S_ij += rate * s_i * s_j * (relevance - S_ij), s the per-space similarity of the pair"}

    async def fingerprints_of(self, ids: list[str], fields: tuple[str, ...]) -> list[Fingerprint]:
        """The fingerprints of live memories, read off the event loop; NodeNotFound names the argument (`fields`,
        one per id) whose memory does not exist."""

        def read(store: MemoryStore) -> list[Fingerprint]:
            out = []
            for memory_id, field in zip(ids, fields):
                record = store.get(memory_id)
                if record is None:
                    raise NodeNotFound(f"{field}: no live memory has id {memory_id}. A teleological vector is a "
                                       "stored memory's; search_graph finds ids.", field=field, node_id=memory_id)
                (fp,) = store.fingerprints([record.seq])
                if fp is None:
                    raise NodeNotFound(f"{field}: memory {memory_id} was deleted meanwhile.", field=field)
                out.append(fp)
            return out

        return await self.storage.read(read)

    # -- fusion ----------------------------------------------------------------------------------------------
    async def fuse(self, memory_id: str, method: str, profile_id: str | None, custom_weights: list[float] | None,
                   apply_synergy: bool, store_result: bool) -> dict[str, Any]:
        await self.storage.ready()
        pipeline = await self.perception.pipeline()
        by_space = self.teleology.use_embedders(pipeline.embedders)
        profile = self.profile(profile_id)
        if custom_weights is not None and sum(custom_weights) <= 0:
            raise InvalidParams("custom_weights must not all be 0.", field="custom_weights")
        base = np.asarray(custom_weights if custom_weights is not None
                          else (profile["embedder_weights"] if profile else self.default_weights), dtype=np.float64)
        (fp,) = await self.fingerprints_of([memory_id], ("memory_id",))
        view = self.teleology.star_view()
        pv = None if view is None else view.purpose(by_space, [fp])[0]
        if method in ("attention", "gated") and pv is None:
            raise InvalidParams(f"fusion_method={method} weighs spaces by the memory's alignment to the north star, "
                                "and there is none yet: use linear or hierarchical, or call auto_bootstrap_north_star.",
                                field="fusion_method", allowed=["linear", "hierarchical"])
        if apply_synergy:
            base = synergy.reweight(base, self.matrix())
        weights = method_weights(method, base, groups=self.teleology.groups,
                                 priorities=(profile or {}).get("group_priorities"), purpose=pv,
                                 temperature=float(self.fusion["attention_temperature"]),
                                 gate=float(self.fusion["gate"]))
        if weights.sum() <= 0:
            raise InvalidParams("Every fusable space got weight 0 (E6/E13 are sparse and not fused; a gated fusion "
                                "drops spaces below the gate).", field="custom_weights")
        vector, layout = fuse(fp, weights)
        out = {"memory_id": memory_id, "fusion_method": method, "profile_id": profile_id,
               "synergy_applied": apply_synergy, "weights": [round(float(w), 5) for w in weights],
               "unused_spaces": [f"E{s.id}" for s in SPACES if weights[s.id - 1] <= 0],
               "layout": {f"E{k}": {"offset": o, "length": n} for k, (o, n) in layout.items()},
               "dimension": len(vector), "norm": round(float(np.linalg.norm(vector)), 6),
               "purpose_alignment": None if pv is None or view is None else round(float(view.align(pv)), 5),
               "vector": [round(float(v), 5) for v in vector], "stored": False,
               "method": "concatenation of each space's unit vector scaled by √w (dot product of two fused vectors "
                         "= Σ w·cos); E9 as ±1/√d, E12 its mean token; sparse E6/E13 not fused"}
        if store_result:
            doc = {"memory_id": memory_id, "method": method, "profile_id": profile_id, "weights": out["weights"],
                   "vector": out["vector"], "at": time.time()}
            await self.storage.writer.submit(self.storage.store.put_document, FUSED_DOCUMENT + memory_id, doc)
            out["stored"] = True
        return out


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:48] or "profile"
