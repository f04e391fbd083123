"""get_autonomous_status: the autonomous services at a glance, from cached state only (the teleology document
loaded with the store, the recompute progress, the store's count): no scan, so it answers in well under the
25 ms status budget at any store size."""

from __future__ import annotations

from typing import Any

from contextgraph.services.purpose.autonomous import AutonomousService

# what a north star will change, in one sentence: the recommendation says it before the agent acts on it
STAR_CHANGES = ("a north star nudges each search toward the store theme the query belongs to (a bounded re-rank "
                "that never hides a memory; stage4=false turns it off) and adds drift checks and alignments to the "
                "status tools; it deletes nothing")

SERVICES = ("bootstrap_service", "drift_detector", "drift_corrector", "pruning_service", "consolidation_service",
            "subgoal_discovery")
_OPERATION = {"bootstrap_service": "bootstrap", "drift_detector": "drift", "drift_corrector": "correction",
              "pruning_service": "pruning", "consolidation_service": "consolidation", "subgoal_discovery": "subgoals"}


async def autonomous_status(autonomous: AutonomousService, include_metrics: bool, include_history: bool,
                            history_count: int) -> dict[str, Any]:
    def read(store: Any) -> int:
        autonomous.teleology.refresh()  # another process may have set a star since
        return store.count()

    count = await autonomous.storage.read(read)
    state = autonomous.teleology.state()
    star = state.get("star")
    minimum = int(autonomous.settings["min_memories"])
    operations = state.get("operations", [])
    latest = {op["operation"]: op for op in operations}
    services: dict[str, Any] = {}
    for name in SERVICES:
        last = latest.get(_OPERATION[name])
        entry: dict[str, Any] = {"ready": star is not None or name in ("bootstrap_service", "pruning_service",
                                                                        "consolidation_service", "subgoal_discovery"),
                                 "last_run": None if last is None else last["at"]}
        if include_metrics and last is not None:
            entry["last_result"] = {k: v for k, v in last.items() if k not in ("operation", "at")}
        services[name] = entry
    services["bootstrap_service"]["north_star"] = None if star is None else {
        k: star.get(k) for k in ("id", "set_at", "source", "size", "share", "label", "confidence", "k")}
    services["bootstrap_service"]["recompute"] = dict(autonomous.teleology.recompute)
    severity = (latest.get("drift") or {}).get("severity")
    recommendations: list[dict[str, Any]] = []
    if star is None:
        if count >= minimum:
            recommendations.append({"priority": 1, "tool": "auto_bootstrap_north_star",
                                    "why": f"{count} memories stored and no north star yet: {STAR_CHANGES}"})
        else:
            recommendations.append({"priority": 1, "tool": "store_memory",
                                    "why": f"{count} of the {minimum} memories a north star needs"})
    elif severity in ("medium", "high"):
        recommendations.append({"priority": 1, "tool": "trigger_drift_correction",
                                "why": f"the last drift check found {severity} drift"})
    elif "drift" not in latest:
        recommendations.append({"priority": 2, "tool": "get_alignment_drift", "why": "drift not checked yet"})
    if "consolidation" not in latest and count >= minimum:
        recommendations.append({"priority": 3, "tool": "trigger_consolidation", "why": "no consolidation run yet "
                                "(dry run by default: it lists near-duplicate pairs)"})
    if "subgoals" not in latest and count >= minimum:
        recommendations.append({"priority": 4, "tool": "discover_sub_goals", "why": "themes not discovered yet"})
    health = 1.0 if star is not None else 0.3
    if severity == "high":
        health = 0.4
    elif severity == "medium":
        health = 0.7
    status = "healthy" if health >= 0.9 else ("degraded" if star is not None else "uninitialised")
    out: dict[str, Any] = {
        "overall_health": {"score": health, "status": status,
                           "method": "1.0 with a north star and no medium/high drift at the last check; 0.7 medium, "
                                     "0.4 high; 0.3 without a star"},
        "north_star": None if star is None else star["id"],
        "stage4": {"active": star is not None, "threshold": autonomous.teleology.alignment_threshold(),
                   "mode": autonomous.teleology.constitution["retrieval"].get("stage4_mode", "rerank"),
                   "goals": len((state.get("goals") or {}).get("goals") or [])},
        "memory_count": count,
        "min_memories_for_bootstrap": minimum,
        "services": services,
        "recommendations": recommendations,
        "star_history_length": len(state.get("history", [])),
    }
    if include_history:
        out["history"] = operations[-history_count:]
    return out
