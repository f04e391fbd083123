"""Fusion weights learned, not hand-set (docs/retrieval.md#stage-3-fusion): a pairwise logistic regression over the
per-space evidence of each (query, candidate) in the cached candidate pools of bench_retrieval_corpora.py, fitted on
the tune halves of both corpora, mapped onto the constitution's stage-3 settings and replayed on the test halves.

Features of a candidate (one query's pool, after stages 1-2 at the constitution's candidate counts):
  rank part   x_s = (k + 1) / (k + rank_s) for every space that can vote (E2-E4 excluded: they vote only for
              temporal queries; E8/E10 count 0 where they rank the candidate exactly as E1 does, as in
              retrieval/fusion.py's deduplication), i.e. each space's RRF term scaled so that its first rank is 1
  score part  m_s = minmax(score_s) over the pool, for every space but E2-E4 (the corpora's timestamps are their order)
Model: score = Σ a_s x_s + Σ b_s m_s, fitted as a logistic regression on the differences (relevant − other
candidate) of each query's pairs (RankNet-style, no intercept), each query weighted equally and each corpus half the
total. Spaces whose coefficient comes out negative are dropped (a space either votes or not: the fusion has no
negative votes) and the model refitted. Regularisation C and rrf_k are chosen on the tune halves' objective.

Mapping: fuse() computes RRF / max(RRF) + Σ w_s minmax(score_s); with RRF ≈ Σ a_s/(k + rank_s) and its maximum
≈ Σ a_s/(k + 1), space_weights = a and score_weights = b / Σ a. The mapping is approximate (the maximum is not
always a candidate first everywhere), so every number reported is the real fusion replayed on the pools
(Bench.replay), not the model's own scores; "model" rows give the linear scorer's own ranking for comparison.
"constitution" rows are whatever constitution.yaml holds when the script runs: the hand-tuned values when the
learned ones were chosen (benchmarks/HISTORY.md, "Fusion learned, not hand-set"), the learned ones since, so a
rerun now reproduces the same weights and shows learned = constitution.

The query kinds (retrieval/query_kind.py) are checked too: a model per kind label with enough tune queries, its
RRF weights over the base model's as query_kinds multipliers.

Run:  .venv/bin/python benchmarks/learn_fusion.py [--corpora code,prose] [--rebuild]
(first run ~5-10 min: loads both corpora's fingerprints from the cache and builds every query's pool, kept in
benchmarks/results/learn_fusion_pools.pkl; later runs ~4 min, --gbdt ~2 min more).
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _stats import RESULTS_DIR, write_result
from bench_retrieval_corpora import (
    MAX_DENSE,
    MAX_SPARSE,
    Bench,
    bootstrap,
    metrics,
    objective,
    rrf_lists,
    settings_dict,
)

from contextgraph.retrieval.fusion import E1_COPIES, minmax, ranks
from contextgraph.retrieval.query_kind import classify
from contextgraph.services.memory.search import SEMANTIC, SPARSE, SPLADE, RetrievalSettings
from contextgraph.services.memory.stale_spaces import while_stale

SPACES = tuple(range(1, 14))
VOTERS = tuple(s for s in SPACES if s not in (2, 3, 4))  # the temporal spaces vote only for temporal queries
POOLS = RESULTS_DIR / "learn_fusion_pools.pkl"
perf = time.perf_counter


# --- pools ---------------------------------------------------------------------------------------------------------

def load_benches(names: Sequence[str], rebuild: bool, log: Any) -> tuple[list[Bench], RetrievalSettings]:
    """Benches with every query's pool (tune and test), from the pickle when it holds these corpora; the pickle
    also keeps the plain baselines' ranks (E1 alone, BM25 + E1 RRF) so that later runs need no store at all."""
    import yaml

    constitution = yaml.safe_load((Path(__file__).resolve().parents[1] / "constitution.yaml").read_text())
    base = RetrievalSettings.from_constitution(constitution)
    cached: dict[str, Any] = {}
    if POOLS.exists() and not rebuild:
        with open(POOLS, "rb") as f:
            cached = pickle.load(f)
    if all(n in cached for n in names):
        return [_from_cache(cached[n], base) for n in names], base
    from _workload import bench_settings

    from contextgraph.embedders.pipeline import build_pipeline

    pipeline = build_pipeline(bench_settings(tempfile.mkdtemp(prefix="cg-learn-")))
    for name in names:
        if name in cached:
            continue
        bn = Bench(name, pipeline, base, log)
        t0 = perf()
        bn.build_pools(bn.halves["all"])
        e6 = base.bm25.get(SPARSE, {"k1": 1.2, "b": 0.75})
        found = {"e1": bn.ranks_of(bn.e1_top()),
                 "rrf": bn.ranks_of(rrf_lists(bn.lexical(SPARSE, e6["k1"], e6["b"], k=100), bn.e1_top(100)))}
        cached[name] = {"name": name, "pools": bn.pools, "texts": bn.texts, "relevant": bn.relevant,
                        "halves": bn.halves, "baselines": found}
        log(f"[{name}] pools and baselines in {perf() - t0:.0f} s")
        bn.close()
    with open(POOLS, "wb") as f:
        pickle.dump(cached, f, protocol=pickle.HIGHEST_PROTOCOL)
    return [_from_cache(cached[n], base) for n in names], base


def _from_cache(c: dict, base: RetrievalSettings) -> Bench:
    bn = Bench.__new__(Bench)  # replay needs only the pools, texts and relevant docs: no store, no pipeline
    bn.name = c["name"]
    bn.pools, bn.texts, bn.relevant, bn.halves = c["pools"], c["texts"], c["relevant"], c["halves"]
    bn.baselines = c["baselines"]  # type: ignore[attr-defined]
    bn.settings, bn._replay_cache = base, {}
    return bn


# --- features ------------------------------------------------------------------------------------------------------

def features(bn: Bench, i: int, s: RetrievalSettings, k: float,
             voters: tuple[int, ...] = VOTERS) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(candidate seqs, feature matrix [n, 2·13], row of the relevant doc) of query i's pool, or None when the
    relevant document is not in it. Spaces not in `voters` get zero columns (neither their rank nor their score)."""
    p = bn.pools[i]
    keep = ((p.source_rank[SPLADE] < s.sparse_candidates) | (p.source_rank[SPARSE] < s.sparse_candidates)
            | (p.source_rank[SEMANTIC] < s.dense_candidates))
    sel = np.flatnonzero(keep)
    seqs = p.seqs[sel]
    hit = np.flatnonzero(seqs == int(bn.relevant[i]))
    if not len(hit):
        return None
    r = {sp: ranks(p.scores[sp][sel]).astype(np.float64) for sp in SPACES}
    cols = []
    for sp in SPACES:
        x = (k + 1.0) / (k + r[sp]) if sp in voters else np.zeros(len(sel))
        if sp in E1_COPIES:
            x = np.where(r[sp] == r[1], 0.0, x)
        cols.append(x)
    # the temporal spaces' scores neither: the corpora's timestamps are the order they were stored in, and a
    # weight fitted to that would say something about this benchmark, not about a store
    cols += [minmax(p.scores[sp][sel]) if sp in voters else np.zeros(len(sel)) for sp in SPACES]
    return seqs, np.column_stack(cols), int(hit[0])


def pairs(benches: Sequence[Bench], idx_of: dict[str, np.ndarray], s: RetrievalSettings, k: float,
          keep_query: Any = None, voters: tuple[int, ...] = VOTERS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Difference vectors (relevant − other), labels (+1, and the mirrored −1), sample weights."""
    xs, ws = [], []
    for bn in benches:
        idx = [i for i in idx_of[bn.name].tolist() if keep_query is None or keep_query(bn.texts[i])]
        for i in idx:
            f = features(bn, i, s, k, voters)
            if f is None or len(f[0]) < 2:
                continue
            _, x, h = f
            d = x[h] - np.delete(x, h, axis=0)
            xs.append(d)
            ws.append(np.full(len(d), 0.5 / (len(idx) * len(d))))  # each query 1, each corpus ½
    x = np.vstack(xs)
    w = np.concatenate(ws)
    return np.vstack([x, -x]), np.r_[np.ones(len(x)), -np.ones(len(x))], np.r_[w, w] / w.sum()


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float) -> np.ndarray:
    """Non-negative coefficients: fit, drop the features that came out negative, refit, until none is."""
    from sklearn.linear_model import LogisticRegression

    active = np.ones(x.shape[1], dtype=bool)
    coef = np.zeros(x.shape[1])
    for _ in range(x.shape[1]):
        m = LogisticRegression(C=c, fit_intercept=False, max_iter=2000, random_state=0)
        m.fit(x[:, active], y, sample_weight=w * len(w))
        coef = np.zeros(x.shape[1])
        coef[active] = m.coef_[0]
        if (coef >= 0).all():
            break
        active &= coef > 0
    return np.maximum(coef, 0.0)


def to_settings(coef: np.ndarray, base: RetrievalSettings, k: float) -> RetrievalSettings:
    a, b = coef[:13], coef[13:]
    total = float(a.sum()) or 1.0
    scale = 1.0 / float(a.max()) if a.max() > 0 else 1.0  # the largest RRF weight 1, as the constitution writes them
    space_w = {sp: round(float(a[sp - 1]) * scale, 3) for sp in SPACES}
    # spaces the corpora cannot speak for keep their hand-set weights: the temporal ones (no temporal query), and
    # E8/E10, which rank exactly as E1 on stores without graph edges or mixed modalities, so that their deduplicated
    # vote is always 0 here: their coefficient says nothing about a store where they differ from E1
    for sp in (2, 3, 4, *E1_COPIES):
        space_w[sp] = base.space_weights.get(sp, 0.0)
    # E8 and E10 score exactly like E1 on stores without graph edges (both corpora): their score coefficients are
    # E1's evidence split three ways by the regulariser, so they go back to E1, where they hold on any store
    b = b.copy()
    for sp in E1_COPIES:
        b[0], b[sp - 1] = b[0] + b[sp - 1], 0.0
    score_w = {sp: round(float(b[sp - 1]) / total, 3) for sp in SPACES if b[sp - 1] > 0}
    return dataclasses.replace(base, rrf_k=k, space_weights=space_w, score_weights=score_w)


def model_ranks(bn: Bench, idx: np.ndarray, s: RetrievalSettings, k: float, coef: np.ndarray) -> np.ndarray:
    """The linear scorer's own ranking (no mapping onto fuse, no rerank): rank of the relevant doc in its top 10."""
    out = np.zeros(len(idx), dtype=np.int64)
    for row, i in enumerate(idx.tolist()):
        f = features(bn, i, s, k)
        if f is None:
            continue
        _, x, h = f
        sc = x @ coef
        r = 1 + int((sc > sc[h]).sum())
        out[row] = r if r <= 10 else 0
    return out


def gbdt_ranks(benches: Sequence[Bench], s: RetrievalSettings, k: float) -> dict[str, np.ndarray]:
    """For comparison only (not shippable as settings): a pointwise gradient-boosted classifier on the same
    features, fitted on the tune halves, ranking each test query's pool: how much a non-linear fusion could add."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    xs, ys, ws = [], [], []
    for bn in benches:
        tune = bn.halves["tune"].tolist()
        for i in tune:
            f = features(bn, i, s, k)
            if f is None:
                continue
            y = np.zeros(len(f[0]))
            y[f[2]] = 1.0
            xs.append(f[1])
            ys.append(y)
            ws.append(np.where(y > 0, 0.5, 0.5 / max(len(y) - 1, 1)) / len(tune))  # relevant = the rest, per query
    model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15,
                                           random_state=0).fit(np.vstack(xs), np.concatenate(ys),
                                                               sample_weight=np.concatenate(ws) * 1e4)
    out = {}
    for bn in benches:
        idx = bn.halves["test"]
        r = np.zeros(len(idx), dtype=np.int64)
        for row, i in enumerate(idx.tolist()):
            f = features(bn, i, s, k)
            if f is not None:
                sc = model.predict_proba(f[1])[:, 1]
                rank = 1 + int((sc > sc[f[2]]).sum())
                r[row] = rank if rank <= 10 else 0
        out[bn.name] = r
    return out


# --- main ----------------------------------------------------------------------------------------------------------

def tune_objective(benches: Sequence[Bench], s: RetrievalSettings) -> float:
    return float(np.mean([objective(bn.replay(s, bn.halves["tune"])) for bn in benches]))


def learn(benches: list[Bench], base: RetrievalSettings, log: Any,
          voters: tuple[int, ...] = VOTERS) -> tuple[RetrievalSettings, list[dict]]:
    tune = {bn.name: bn.halves["tune"] for bn in benches}
    trail: list[dict] = [{"step": "constitution", "objective": round(tune_objective(benches, base), 4)}]
    best: tuple[float, RetrievalSettings, dict] | None = None
    for k in (1.0, 2.0, 5.0, 10.0):
        x, y, w = pairs(benches, tune, base, k, voters=voters)
        for c in (0.01, 0.1, 1.0, 10.0):
            coef = fit(x, y, w, c)
            s = to_settings(coef, base, k)
            for rw in (0.0, 0.1, 0.2, 0.3):
                s_rw = dataclasses.replace(s, rerank_weight=rw)
                obj = tune_objective(benches, s_rw)
                step = {"step": f"k {k} C {c} rerank {rw}", "objective": round(obj, 4)}
                trail.append(step)
                if best is None or obj > best[0] + 1e-9:
                    best = (obj, s_rw, {"k": k, "C": c, "coef": coef.round(4).tolist()})
        log(f"   rrf_k {k}: best so far {best[0]:.4f} ({best[2]['k']}, C {best[2]['C']})")
    assert best is not None
    trail.append({"step": "chosen", "objective": round(best[0], 4), **best[2]})
    return best[1], trail


def kinds(benches: list[Bench], chosen: RetrievalSettings, fit_info: dict, log: Any) -> tuple[RetrievalSettings, dict]:
    """Per query kind: the same model on that kind's tune queries only; its RRF weights over the base model's become
    query_kinds multipliers; kept only where the tune objective rises by more than 0.001."""
    counts = {lab: {bn.name: sum(lab in classify(bn.texts[i]).labels() for i in bn.halves["tune"].tolist())
                    for bn in benches} for lab in ("code", "question", "keyword")}
    info: dict[str, Any] = {"tune_counts": counts}
    k, c = fit_info["k"], fit_info["C"]
    base_a = np.asarray(fit_info["coef"][:13])
    current, obj = chosen, tune_objective(benches, chosen)
    for lab, by_corpus in counts.items():
        if sum(by_corpus.values()) < 100:
            info[lab] = "too few tune queries"
            continue
        x, y, w = pairs(benches, {bn.name: bn.halves["tune"] for bn in benches}, chosen, k,
                        keep_query=lambda t, lab=lab: lab in classify(t).labels())
        a = fit(x, y, w, c)[:13]
        mult = {sp: round(float(min(4.0, a[sp - 1] / base_a[sp - 1])), 2) if base_a[sp - 1] > 0 else 1.0
                for sp in VOTERS}
        trial = dataclasses.replace(current, query_kinds={**current.query_kinds, lab: mult})
        o = tune_objective(benches, trial)
        info[lab] = {"multipliers": mult, "tune_objective": round(o, 4), "kept": o > obj + 0.001}
        log(f"   kind {lab}: {o:.4f} against {obj:.4f}")
        if o > obj + 0.001:
            current, obj = trial, o
    return current, info


def evaluate(benches: list[Bench], base: RetrievalSettings, learned: RetrievalSettings, coef: np.ndarray,
             k: float) -> dict:
    out: dict[str, Any] = {}
    for bn in benches:
        r: dict[str, Any] = {}
        ranks_by: dict[str, np.ndarray] = bn.baselines  # type: ignore[attr-defined]
        for half in ("tune", "test"):
            idx = bn.halves[half]
            found = {"constitution": bn.replay(base, idx), "learned": bn.replay(learned, idx),
                     "model": model_ranks(bn, idx, base, k, coef),
                     **{n: v[idx] for n, v in ranks_by.items()}}
            r[half] = {n: metrics(v) for n, v in found.items()}
            r[f"{half}_learned_minus"] = {n: bootstrap(v, found["learned"]) for n, v in found.items()
                                          if n != "learned"}
        t = r["test"]
        r["goals"] = {"code: learned / e1 (≥ 1.10)": round(t["learned"]["ndcg@10"] / t["e1"]["ndcg@10"], 4),
                      "prose: learned / rrf (≥ 1.05)": round(t["learned"]["ndcg@10"] / t["rrf"]["ndcg@10"], 4)}
        out[bn.name] = r
    return out


STALE_FALLBACK = (7,)  # the space a store re-embeds in practice (E7 has a model of its own; the rest share E1's)


def learn_while_stale(benches: list[Bench], chosen: RetrievalSettings, log: Any) -> tuple[dict, dict]:
    """retrieval.while_stale (services/memory/stale_spaces.py): for each space of STALE_FALLBACK, the fusion fitted
    on the tune halves without it, what a search uses while that space is re-embedded; and on the test halves the
    search with the space, with it dropped (the rest as learned), and with the profile, as the product applies them."""
    profiles: dict[int, dict] = {}
    found: dict[int, dict] = {}
    for space in STALE_FALLBACK:
        voters = tuple(v for v in VOTERS if v != space)
        fitted, trail = learn(benches, dataclasses.replace(chosen, space_weights={**chosen.space_weights, space: 0.0}),
                              log, voters=voters)
        if (fitted.rrf_k, fitted.rerank_weight) != (chosen.rrf_k, chosen.rerank_weight):
            log(f"   E{space} left out: its best rrf_k / rerank weight differ ({fitted.rrf_k}, "
                f"{fitted.rerank_weight}); the profile keeps the weights only")
        profiles[space] = {"space_weights": {sp: w for sp, w in fitted.space_weights.items() if sp != space},
                           "score_weights": dict(fitted.score_weights)}
        stale = frozenset({space})
        dropped = while_stale(dataclasses.replace(chosen, while_stale={}), stale)
        profiled = while_stale(dataclasses.replace(chosen, while_stale=profiles), stale)
        found[space] = {"tune_objective": trail[-1]["objective"]}
        for bn in benches:
            idx = bn.halves["test"]
            runs = {"with it": bn.replay(chosen, idx), "dropped": bn.replay(dropped, idx),
                    "while_stale": bn.replay(profiled, idx)}
            found[space][bn.name] = {**{n: metrics(r) for n, r in runs.items()},
                                     "while_stale − dropped": bootstrap(runs["dropped"], runs["while_stale"])}
            ndcg = {n: round(found[space][bn.name][n]["ndcg@10"], 4) for n in runs}
            log(f"   [{bn.name}] while E{space} is re-embedded, test nDCG@10: {ndcg}")
    return profiles, found


def report(res: dict) -> None:
    for name, r in res.items():
        print(f"\n[{name}]  nDCG@10 / R@10 / MRR@10")
        for half in ("tune", "test"):
            for n, m in r[half].items():
                print(f"  {half:<5} {n:<13} {m['ndcg@10']:.4f} / {m['recall@10']:.4f} / {m['mrr@10']:.4f}")
            for n, d in r[f"{half}_learned_minus"].items():
                print(f"  {half:<5} learned − {n:<13} nDCG {d['ndcg@10']}  R@10 {d['recall@10']}  MRR {d['mrr@10']}")
        if "test_gbdt_minus_learned" in r:
            print(f"  test  gbdt − learned  {r['test_gbdt_minus_learned']}")
        print(f"  goals (test): {r['goals']}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", default="code,prose")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the pools (after a change to stages 1-2)")
    ap.add_argument("--name", default="learn_fusion")
    ap.add_argument("--gbdt", action="store_true", help="also a gradient-boosted ranker, for comparison (~2 min)")
    args = ap.parse_args(argv)

    def log(m: str) -> None:
        print(m, flush=True)

    started = perf()
    benches, base = load_benches(args.corpora.split(","), args.rebuild, log)
    assert base.sparse_candidates <= MAX_SPARSE and base.dense_candidates <= MAX_DENSE
    learned, trail = learn(benches, base, log)
    fit_info = trail[-1]
    with_kinds, kind_info = kinds(benches, learned, fit_info, log)
    coef = np.asarray(fit_info["coef"])
    res = evaluate(benches, base, with_kinds, coef, fit_info["k"])
    if args.gbdt:
        for name, r in gbdt_ranks(benches, base, fit_info["k"]).items():
            bn = next(b for b in benches if b.name == name)
            res[name]["test"]["gbdt (comparison)"] = metrics(r)
            res[name]["test_gbdt_minus_learned"] = bootstrap(bn.replay(with_kinds, bn.halves["test"]), r)
    report(res)
    profiles, stale_found = learn_while_stale(benches, with_kinds, log)
    with_kinds = dataclasses.replace(with_kinds, while_stale=profiles)
    write_result(args.name, {"constitution": settings_dict(base), "learned": settings_dict(with_kinds),
                             "while_stale": stale_found,
                             "trail": trail, "query_kinds": kind_info, "corpora": res,
                             "wall_s": round(perf() - started, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
