"""ATC's on-demand levels and its two reports (trigger_recalibration, get_calibration_metrics,
get_threshold_status), over a ThresholdService's recorded pairs. Pure computation apart from the service's own
state; the tools run these in a worker thread (level 4 fits a Gaussian process per iteration).

    level 1  replay the recorded pairs, oldest first, through the EWMA drift step from the current θ
    level 2  temperature scaling: T fitted on the pairs by NLL with θ held
    level 3  Thompson sampling over Beta(α, β) on a grid of θ; then T refitted at the chosen θ
    level 4  Bayesian optimisation of (θ, log T) on the NLL: GP surrogate, expected improvement
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from contextgraph.calibration import bayes, levels, maps
from contextgraph.calibration.metrics import calibration_report
from contextgraph.errors import ThresholdError
from contextgraph.fingerprint import SPACES
from contextgraph.services.engine.atc import Setting, ThresholdService

LEVELS = {1: "EWMA drift", 2: "temperature scaling", 3: "Thompson sampling", 4: "Bayesian optimisation"}
# which score each threshold compares, for get_threshold_status's embedder detail
SCORE_SPACES = {"theta_warn": (1,), "theta_dup": (1,),
                "theta_kur": tuple(range(1, 14)), "johari": tuple(range(1, 14))}
_P = 6


def quality(service: ThresholdService, name: str, setting: Setting, scores: np.ndarray,
            outcomes: np.ndarray) -> dict[str, Any]:
    """ECE/MCE/Brier of the calibrated probabilities, the raw score's ECE, and the decision cost at θ."""
    spec = service.spec(name)
    bins = int(service.constitution["atc"]["bins"])
    p = maps.calibrated(scores, setting.theta, setting.temperature, spec.target) if scores.size else scores
    report = calibration_report(p, outcomes, bins)
    raw = calibration_report(scores, outcomes, bins)
    return {"theta": round(setting.theta, _P), "temperature": round(setting.temperature, _P),
            "ece": _r(report.ece), "mce": _r(report.mce), "brier": _r(report.brier), "ece_raw_score": _r(raw.ece),
            "decision_cost": round(maps.decision_cost(scores, outcomes, setting.theta, spec.target), _P),
            "pairs": report.pairs}


def recalibrate(service: ThresholdService, level: int, domain: str, threshold: str | None = None,
                start: float | None = None) -> dict[str, Any]:
    a = service.constitution["atc"]
    min_pairs = int(a["min_pairs"])
    names = [threshold] if threshold else list(service.specs)
    results, skipped = {}, {}
    for name in names:
        spec = service.spec(name)
        current = service.setting(name, domain)
        if start is not None and not spec.lo <= start <= spec.hi:  # refused before anything changes
            service.set(name, domain, replace(current, theta=float(start)), "", level)
        scores, outcomes = service.outcomes.pairs(name, domain)
        needed = 1 if level == 1 else min_pairs
        if scores.size < needed:
            skipped[name] = f"{scores.size} recorded pairs; level {level} needs at least {needed}"
            continue
        if start is not None:  # the caller's starting point (within the bounds: checked above)
            current = service.set(name, domain, replace(current, theta=float(start)),
                                  f"level {level}: started from the given θ", level)
        before = quality(service, name, current, scores, outcomes)
        after_setting, detail = _run(service, level, spec, current, scores, outcomes)
        reason = f"level {level} ({LEVELS[level]}) on {scores.size} pairs: {detail.pop('summary')}"
        after_setting = service.set(name, domain, after_setting, reason, level)
        results[name] = {"before": before, "after": quality(service, name, after_setting, scores, outcomes),
                         "bounds": {"min": spec.lo, "max": spec.hi}, "target_probability": spec.target, **detail}
    if not results:
        raise ThresholdError(
            f"Nothing to recalibrate at level {level} in domain {domain}: "
            + "; ".join(f"{n}: {why}" for n, why in skipped.items())
            + ". Outcomes are recorded as the agent judges what search_graph found (hydrate_citation, a citing or "
              "linking store, boost_importance, update_synergy_matrix's feedback, forget_concept as incorrect) "
              "and as merge_concepts confirms or refutes duplicates.",
            level=level, domain=domain, min_pairs=min_pairs, skipped=skipped)
    return {"level": level, "method": LEVELS[level], "domain": domain, "thresholds": results, "skipped": skipped}


def _run(service: ThresholdService, level: int, spec: Any, current: Setting, scores: np.ndarray,
         outcomes: np.ndarray) -> tuple[Setting, dict[str, Any]]:
    a = service.constitution["atc"]
    t_min, t_max = float(a["temperature"]["min"]), float(a["temperature"]["max"])
    if level == 1:
        alpha, bandwidth, step = (float(a["level1"][k]) for k in ("ewma_alpha", "bandwidth", "step"))
        theta, drift = current.theta, current.drift
        for s, y in zip(scores, outcomes):
            moved = levels.ewma_step(theta, drift, float(s), float(y), spec.target, alpha=alpha, bandwidth=bandwidth,
                                     step=step, lo=spec.lo, hi=spec.hi)
            theta, drift = moved.theta, moved.drift
        return (replace(current, theta=theta, drift=drift),
                {"drift": round(drift, _P), "summary": f"θ {current.theta:.4f} → {theta:.4f}, drift {drift:+.5f}"})
    if level == 2:
        t = maps.fit_temperature(scores, outcomes, current.theta, spec.target, t_min, t_max)
        return replace(current, temperature=t), {"summary": f"T {current.temperature:.4f} → {t:.4f} (θ held)"}
    if level == 3:
        th = a["thompson"]
        result = levels.thompson_choice(scores, outcomes, spec.target, spec.lo, spec.hi, arms=int(th["arms"]),
                                        draws=int(th["draws"]), rng=np.random.default_rng(int(th["seed"])))
        t = maps.fit_temperature(scores, outcomes, result.theta, spec.target, t_min, t_max)
        top = np.argsort(result.chosen_share)[::-1][:5]
        arms = [{"theta": round(result.arms[i], 4), "chosen_share": round(result.chosen_share[i], 4),
                 "alpha": round(result.alpha[i], 3), "beta": round(result.beta[i], 3)} for i in top]
        return (replace(current, theta=result.theta, temperature=t),
                {"bandit": {"arms": len(result.arms), "draws": int(th["draws"]), "top_arms": arms},
                 "summary": f"θ {current.theta:.4f} → {result.theta:.4f} (chosen in "
                            f"{max(result.chosen_share):.0%} of the draws), T → {t:.4f}"})
    b = a["bayes"]
    log_bounds = (float(np.log(t_min)), float(np.log(t_max)))
    result = bayes.gp_minimize(lambda x: maps.nll(scores, outcomes, float(x[0]), float(np.exp(x[1])), spec.target),
                               [(spec.lo, spec.hi), log_bounds], initial=int(b["initial"]),
                               iterations=int(b["iterations"]), candidates=int(b["candidates"]), xi=float(b["xi"]),
                               rng=np.random.default_rng(int(b["seed"])),
                               start=(current.theta, float(np.log(current.temperature))))
    theta, t = float(np.clip(result.x[0], spec.lo, spec.hi)), float(np.exp(result.x[1]))
    return (replace(current, theta=theta, temperature=t),
            {"bayes": {"evaluations": result.evaluations, "best_nll": round(result.value, _P)},
             "summary": f"θ {current.theta:.4f} → {theta:.4f}, T {current.temperature:.4f} → {t:.4f} "
                        f"(NLL {result.value:.4f} after {result.evaluations} evaluations)"})


def metrics(service: ThresholdService, timeframe: str) -> dict[str, Any]:
    a = service.constitution["atc"]
    seconds = float(a["timeframes"][timeframe])
    since = service.clock() - seconds
    targets = a["ece_targets"]
    out: dict[str, dict[str, Any]] = {}
    total = 0
    for name, domain in service.outcomes.keys():
        in_window = service.outcomes.count_since(name, domain, since)
        if in_window == 0:
            continue
        setting = service.setting(name, domain)
        # unchanged pairs, window and setting: the last answer stands (a status call stays well under 25 ms)
        stamp = (service.outcomes.versions.get((name, domain)), in_window, setting)
        cached = service.metrics_cache.get((name, domain, timeframe))
        if cached is not None and cached[0] == stamp:
            q = cached[1]
        else:
            scores, outcomes = service.outcomes.pairs(name, domain, since)
            q = quality(service, name, setting, scores, outcomes)
            ece = q["ece"]
            q["status"] = ("excellent" if ece < float(targets["excellent"]) else
                           "good" if ece < float(targets["good"]) else "poor")
            q["drift"] = round(setting.drift, _P)
            service.metrics_cache[(name, domain, timeframe)] = (stamp, q)
        out.setdefault(name, {})[domain] = dict(q)
        total += q["pairs"]
    return {"timeframe": timeframe, "pairs": total, "metrics": out, "pending": service.outcomes.pending_count,
            "targets": {"ece_excellent": targets["excellent"], "ece_good": targets["good"]},
            "method": "ece/mce over equal-width bins and brier of the calibrated probability "
                      "sigmoid((logit s − logit θ)/T + logit q) against the observed outcomes; ece_raw_score treats "
                      "the raw score as the probability"}


def status(service: ThresholdService, domain: str, embedder_id: int | None) -> dict[str, Any]:
    thresholds = {}
    for name, spec in service.specs.items():
        s = service.setting(name, domain)
        thresholds[name] = {"value": round(s.theta, _P), "min": spec.lo, "max": spec.hi, "prior": spec.prior,
                            "target_probability": spec.target, "temperature": round(s.temperature, _P),
                            "drift": round(s.drift, _P), "observations": s.observations,
                            "pairs": service.outcomes.count(name, domain), "updated_at": s.updated_at}
    changes = [e for e in service.log if e["domain"] == domain][-10:]
    out: dict[str, Any] = {"domain": domain, "thresholds": thresholds,
                           "pending_outcomes": service.outcomes.pending_count,
                           # closed with no judgement since the server started: no evidence, only counted
                           "unjudged_outcomes": service.expired_unused, "recent_changes": changes[::-1]}
    if embedder_id is not None:
        space = SPACES[embedder_id - 1]
        out["embedder"] = {"id": embedder_id, "name": space.name,
                           "thresholds_scoring_it": [n for n, spaces in SCORE_SPACES.items() if embedder_id in spaces],
                           "note": "thresholds are calibrated per domain, not per embedder; these compare a score "
                                   "computed in this space"}
    return out


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, _P)
