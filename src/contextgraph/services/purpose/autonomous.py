"""The autonomous north star (docs/engine.md): bootstrap, drift, drift correction and the status.

The north star emerges from the store: k-means over E1 (services.autonomous_scan), the dominant (largest)
cluster's centroid in every space (teleology.star) is the star, kept with its provenance (its members, when,
the clustering) and gated on its stability across restarts. Nothing here runs by itself: every step is a tool
call; a new star never deletes an old one (history), so a correction can be reverted.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import numpy as np

from contextgraph.clock import Clock
from contextgraph.constitution import Constitution
from contextgraph.errors import BootstrapError, DriftCorrectorError, DriftDetectorError, InvalidParams
from contextgraph.fingerprint import Fingerprint
from contextgraph.log import get_logger
from contextgraph.services.purpose.autonomous_scan import Corpus, goals_of, label, preview, read_corpus, themes
from contextgraph.services.purpose.teleology import StarView, TeleologyService
from contextgraph.services.runtime.perception import Perception
from contextgraph.teleology import drift as drift_kernel
from contextgraph.teleology.clustering import dominant, stability, unit
from contextgraph.teleology.purpose import alignment, member_reference
from contextgraph.teleology.star import blend, centroid

_log = get_logger("autonomous")
CONFIDENCE_METHOD = ("stability: mean best Jaccard between the dominant cluster's members and any cluster of "
                     "k-means restarted with other seeds (1 = the same theme comes back whatever the start)")


class AutonomousService:
    def __init__(self, teleology: TeleologyService, perception: Perception, constitution: Constitution,
                 clock: Clock) -> None:
        self.teleology = teleology
        self.storage = teleology.storage
        self.perception = perception
        self.clock = clock
        self.settings = constitution["autonomous"]
        self.star_members_max = int(constitution["teleology"]["star_members_max"])
        self.last: dict[str, dict[str, Any]] = {}  # the latest result of each service (status reads it)

    async def _embedders(self) -> None:
        pipeline = await self.perception.pipeline()
        self.teleology.use_embedders(pipeline.embedders)

    # -- bootstrap -------------------------------------------------------------------------------------------
    async def bootstrap(self, confidence_threshold: float, max_candidates: int) -> dict[str, Any]:
        await self.storage.ready()
        n = self.storage.store.count()
        minimum = int(self.settings["min_memories"])
        if n < minimum:
            raise BootstrapError(
                f"The store holds {n} memories; a north star needs at least {minimum} to emerge from (a theme "
                f"among fewer is noise). Store more memories with store_memory, then call auto_bootstrap_north_star "
                "again.", memory_count=n, min_memories=minimum)
        await self._embedders()
        started = time.perf_counter()
        proposal = await anyio.to_thread.run_sync(lambda: self._propose(max_candidates))
        if proposal["confidence"] < confidence_threshold:
            raise BootstrapError(
                f"No stable dominant theme: the largest cluster ({proposal['size']} of {proposal['scanned']} "
                f"memories, '{proposal['label']}') comes back with confidence {proposal['confidence']:.2f} < "
                f"confidence_threshold {confidence_threshold}. Store more memories on your main theme, or call "
                "again with a lower confidence_threshold.",
                **{k: v for k, v in proposal.items() if k not in ("star", "goals")})
        star: Fingerprint = proposal.pop("star")
        members = proposal.pop("member_ids")
        goals = proposal.pop("goals")
        previous = (self.teleology.state().get("star") or {}).get("id")
        entry = await anyio.to_thread.run_sync(
            lambda: self.teleology.set_star(star, proposal, members, "auto_bootstrap_north_star", goals=goals))
        elapsed = round((time.perf_counter() - started) * 1000, 1)
        out = {"bootstrapped": True, "star_id": entry["id"], "previous_star_id": previous, **proposal,
               "member_ids": members[:50], "members_listed": min(len(members), 50),
            "goals": [{k: g[k] for k in ("id", "label", "size")} for g in goals],
               "confidence_method": CONFIDENCE_METHOD, "recompute": dict(self.teleology.recompute),
               "elapsed_ms": elapsed}
        await self.remember("bootstrap", {"star_id": entry["id"], "confidence": proposal["confidence"],
                                     "elapsed_ms": elapsed})
        return out

    def _propose(self, max_candidates: int) -> dict[str, Any]:
        """Cluster the store and build the dominant cluster's star (worker thread)."""
        s = self.settings
        corpus = read_corpus(self.storage.store, int(s["max_scan"]))
        t = themes(corpus, 2, 1 + max_candidates, s)
        c = t.clustering
        d = dominant(t.labels[t.labels >= 0]) if (t.labels >= 0).any() else 0
        rows = np.flatnonzero(t.labels == d)
        confidence = stability(corpus.vectors, np.flatnonzero(c.labels == d), c.k, int(s["stability_restarts"]),
                               minibatch_above=int(s["minibatch_above"])) if c.k > 1 else 0.0
        star = self._star_of(corpus, rows, c.centroids[d])
        view = StarView("proposal", star, self.teleology.weights, self.teleology.alignment_threshold())
        sample = self._sample(corpus, 2000)
        fps = self.storage.store.fingerprints([corpus.records[i].seq for i in sample])
        present = [(i, fp) for i, fp in zip(sample, fps) if fp is not None]
        pvs = view.purpose(self.teleology.use_embedders([]), [fp for _, fp in present])
        in_star = np.isin([i for i, _ in present], rows)
        reference = member_reference(pvs[in_star]) if in_star.any() else None
        aligned = alignment(pvs, view.weights, reference)
        return {
            "star": star, "member_ids": [corpus.records[i].id for i in rows], "goals": goals_of(corpus, t),
            "scanned": len(corpus), "k": c.k, "silhouette": round(c.silhouette, 6),
            "silhouettes_by_k": {str(k): v for k, v in c.silhouettes_by_k.items()},
            "cluster_sizes": t.sizes, "unthemed": int((t.labels < 0).sum()), "size": len(rows),
            "share": round(len(rows) / max(len(corpus), 1), 4),
            "label": label(t.terms[d]), "terms": t.terms[d], "coherence": t.coherence[d],
            "confidence": round(confidence, 4),
            "reference": None if reference is None else [round(float(v), 5) for v in reference],
            "baseline_alignment": round(float(aligned.mean()), 4) if len(aligned) else 0.0,
            "member_alignment": round(float(aligned[in_star].mean()), 4) if in_star.any() else 0.0,
            "other_alignment": round(float(aligned[~in_star].mean()), 4) if (~in_star).any() else None,
            "created_at": self.clock.now(),
        }

    def _star_of(self, corpus: Corpus, rows: np.ndarray, centre: np.ndarray) -> Fingerprint:
        """The centroid in every space of the members nearest the E1 centre (at most star_members_max)."""
        closeness = unit(corpus.vectors[rows]) @ centre
        chosen = rows[np.argsort(-closeness, kind="stable")[: self.star_members_max]]
        fps = [fp for fp in self.storage.store.fingerprints([corpus.records[i].seq for i in chosen]) if fp is not None]
        return centroid(fps)

    @staticmethod
    def _sample(corpus: Corpus, n: int) -> np.ndarray:
        if len(corpus) <= n:
            return np.arange(len(corpus))
        return np.sort(np.random.default_rng(0).choice(len(corpus), size=n, replace=False))

    # -- drift -----------------------------------------------------------------------------------------------
    def _view(self, error: type[Exception]) -> StarView:
        view = self.teleology.star_view()
        if view is None:
            raise error("No north star yet, so there is no alignment to drift from. Call auto_bootstrap_north_star "
                        "(it needs at least " f"{self.settings['min_memories']} stored memories).")
        return view

    async def drift(self, timeframe: str, include_history: bool) -> dict[str, Any]:
        await self.storage.ready()
        view = self._view(DriftDetectorError)
        await self._embedders()
        out = await anyio.to_thread.run_sync(lambda: self._drift(view, timeframe))
        if include_history:
            state = self.teleology.state()
            out["star_history"] = [*state.get("history", []), state.get("star")]
        else:
            out.pop("windows_detail", None)
        await self.remember("drift", {"severity": out["severity"], "trend": out["trend"], "timeframe": timeframe})
        return out

    def _drift(self, view: StarView, timeframe: str) -> dict[str, Any]:
        d = self.settings["drift"]
        span = float(d["timeframes"][timeframe])
        n_windows = int(d["windows"])
        now = self.clock.now()
        limit = int(self.settings["max_scan"])
        records = self.storage.store.graph_read(lambda g: g.recent(limit, now - span, None))
        _, aligned = self.teleology.alignments_of(records, view) if records else (None, np.zeros(0))
        times = np.array([r.created_at for r in records])
        w = drift_kernel.windows(times, aligned, now, span, n_windows)
        star = self.teleology.state()["star"] or {}
        baseline = float(star.get("baseline_alignment", 0.0))
        present = np.flatnonzero(w.counts > 0)
        latest = float(w.means[present[-1]]) if len(present) else None
        drop = 0.0 if latest is None else baseline - latest
        sev = drift_kernel.severity(drop, d["severity"]) if latest is not None else "none"
        stable = float(d["stable_slope"])
        trend = "stable" if abs(w.slope) <= stable else ("improving" if w.slope > 0 else "worsening")
        drivers: list[dict[str, Any]] = []
        if len(present):
            start = w.starts[present[-1]]
            in_latest = [i for i, r in enumerate(records) if r.created_at >= start]
            in_latest.sort(key=lambda i: aligned[i])
            for i in in_latest[: int(d["drivers"])]:
                drivers.append({"id": records[i].id, "alignment": round(float(aligned[i]), 4),
                                "pull": round((float(aligned[i]) - baseline) / len(in_latest), 5),
                                "preview": preview(records[i].content)})
        return {
            "star_id": view.id, "timeframe": timeframe, "memories": len(records),
            "baseline_alignment": round(baseline, 4),
            "latest_mean_alignment": None if latest is None else round(latest, 4),
            "mean_alignment": round(float(aligned.mean()), 4) if len(aligned) else None,
            "drop": round(drop, 4), "severity": sev, "trend": trend, "slope_per_window": round(w.slope, 6),
            "window_seconds": span / n_windows,
            "windows": [{"start": float(s), "mean_alignment": None if np.isnan(m) else round(float(m), 4),
                         "count": int(c)} for s, m, c in zip(w.starts, w.means, w.counts)],
            "drivers": drivers,
            "recommendation": _recommendation(sev, trend),
            "method": "mean alignment (weighted PV to the north star) of the memories written in each window; "
                      "severity by the latest window's fall below the store's mean alignment when the star was "
                      "set (baseline); drivers: the latest window's least aligned memories and how far each "
                      "pulls its mean",
        }

    # -- correction ------------------------------------------------------------------------------------------
    async def correct(self, *, force: bool, target_alignment: float | None, execute: bool, timeframe: str,
                      revert_to: str | None) -> dict[str, Any]:
        await self.storage.ready()
        await self._embedders()
        if revert_to is not None:
            return await self._revert(revert_to, execute)
        view = self._view(DriftCorrectorError)
        report = await anyio.to_thread.run_sync(lambda: self._drift(view, timeframe))
        sev = report["severity"]
        if sev in ("none", "low") and not force and target_alignment is None:
            return {"strategy": "none", "executed": False, "severity": sev, "drift": _brief(report),
                    "reason": f"drift severity is {sev}: nothing to correct (force=true corrects anyway)"}
        strategy = "rebootstrap" if sev == "high" else "reinforce"
        plan = await anyio.to_thread.run_sync(lambda: self._plan(view, strategy, report, target_alignment))
        out: dict[str, Any] = {"strategy": strategy, "severity": sev, "drift": _brief(report), "dry_run": not execute,
                               "executed": False, **{k: v for k, v in plan.items() if k != "star"}}
        if plan.get("star") is None:
            return out
        if execute:
            meta = {k: v for k, v in plan.items() if k not in ("star", "member_ids")}
            entry = await anyio.to_thread.run_sync(lambda: self.teleology.set_star(
                plan["star"], {**meta, "baseline_alignment": plan["predicted_mean_alignment"]},
                plan.get("member_ids", []), f"trigger_drift_correction:{strategy}"))
            out.update(executed=True, star_id=entry["id"], previous_star_id=view.id,
                       undo={"tool": "trigger_drift_correction", "arguments": {"revert_to": view.id, "execute": True}})
        else:
            out["hint"] = "Dry run: nothing changed. Call again with execute=true to apply this correction."
        await self.remember("correction", {"strategy": strategy, "executed": execute, "severity": sev})
        return out

    def _plan(self, view: StarView, strategy: str, report: dict[str, Any],
              target: float | None) -> dict[str, Any]:
        corpus = read_corpus(self.storage.store, int(self.settings["max_scan"]))
        if strategy == "rebootstrap":
            proposal = self._propose(10)
            star = proposal.pop("star")
            proposal.pop("goals")  # a correction moves the star; the store's goals stay as they were
            predicted = proposal["baseline_alignment"]
            return {"star": star, "member_ids": proposal.pop("member_ids"), "proposal": proposal,
                    "predicted_mean_alignment": predicted, "current_mean_alignment": report["mean_alignment"]}
        # reinforce: move the star toward the centroid of the recent memories by β (the smallest on the grid
        # that reaches the target alignment of the recent window, or the constitution's β without a target)
        recent_ids = {d["id"] for d in report["drivers"]}
        window_start = self.clock.now() - report["window_seconds"]
        rows = np.array([i for i, r in enumerate(corpus.records) if r.created_at >= window_start or r.id in recent_ids])
        if not len(rows):
            return {"star": None, "reason": "no recent memories to reinforce the star toward"}
        toward = self._star_of(corpus, rows, unit(corpus.vectors[rows].mean(axis=0, keepdims=True))[0])
        sample = self._sample(corpus, 2000)
        fps = [fp for fp in self.storage.store.fingerprints([corpus.records[i].seq for i in sample]) if fp is not None]
        recent_fps = [fp for fp in self.storage.store.fingerprints([corpus.records[i].seq for i in rows[-500:]])
                      if fp is not None]
        betas = [float(self.settings["correction"]["reinforce_beta"])] if target is None else \
            [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
        by_space = self.teleology.use_embedders([])
        for beta in betas:
            star = blend(view.fingerprint, toward, beta)
            candidate = StarView("candidate", star, view.weights, view.threshold, view.reference)
            recent = float(candidate.alignments(by_space, recent_fps).mean())
            if target is None or recent >= target or beta == betas[-1]:
                overall = float(candidate.alignments(by_space, fps).mean())
                return {"star": star, "beta": beta,
                        "reference": None if view.reference is None else [float(v) for v in view.reference],
                        "predicted_recent_alignment": round(recent, 4),
                        "predicted_mean_alignment": round(overall, 4),
                        "current_mean_alignment": report["mean_alignment"],
                        "target_alignment": target, "target_reached": target is None or recent >= target}
        return {"star": None}

    async def _revert(self, star_id: str, execute: bool) -> dict[str, Any]:
        state = self.teleology.state()
        known = [h["id"] for h in state.get("history", [])] + ([state["star"]["id"]] if state.get("star") else [])
        if star_id not in known:
            raise InvalidParams(f"revert_to names no earlier north star: {star_id!r}. The stars this store has had: "
                                f"{known or 'none'} (get_autonomous_status include_history=true lists them).",
                                field="revert_to", allowed=known)
        current = (state.get("star") or {}).get("id")
        if not execute:
            return {"strategy": "revert", "dry_run": True, "executed": False, "revert_to": star_id,
                    "current_star_id": current, "hint": "Call again with execute=true to put this star back."}
        doc = self.teleology.star_document(star_id)
        if doc is None:
            raise DriftCorrectorError(f"The stored document of star {star_id} is missing; it cannot be put back.")
        star = self.teleology._read_star(self.storage.store, star_id)
        meta = next((h for h in state.get("history", []) if h["id"] == star_id), state.get("star") or {})
        keep = {k: v for k, v in meta.items() if k not in ("id", "set_at", "source")}
        assert star is not None
        entry = await anyio.to_thread.run_sync(
            lambda: self.teleology.set_star(star, keep, doc.get("members", []), "revert", star_id=star_id))
        await self.remember("correction", {"strategy": "revert", "executed": True})
        return {"strategy": "revert", "dry_run": False, "executed": True, "star_id": entry["id"],
                "previous_star_id": current}

    # -- bookkeeping -----------------------------------------------------------------------------------------
    async def remember(self, service: str, summary: dict[str, Any]) -> None:
        """Log the operation in the teleology document (get_autonomous_status reads it), off the event loop."""
        self.last[service] = {"at": time.time(), **summary}
        await anyio.to_thread.run_sync(
            lambda: self.teleology.save(lambda s: self.teleology.log_operation(s, {"operation": service, **summary})))


def _brief(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("timeframe", "baseline_alignment", "latest_mean_alignment", "mean_alignment", "drop", "trend",
            "slope_per_window")
    return {k: report[k] for k in keys}


def _recommendation(severity: str, trend: str) -> str:
    if severity == "high":
        return ("Recent memories have moved far from the north star: trigger_drift_correction (dry run first) "
                "re-bootstraps it from the store as it is now.")
    if severity == "medium":
        return "trigger_drift_correction reinforces the star toward what you work on now (dry run first)."
    if trend == "worsening":
        return "Alignment is falling slowly; watch get_alignment_drift, no correction needed yet."
    return "No correction needed."
