"""Query-side help on the fused head (issue 37, item 3): pseudo-relevance feedback and E12 late interaction, each
replayed over the cached candidate pools of bench_retrieval_corpora.py / learn_fusion.py (every query's pool with
every space's score, benchmarks/results/learn_fusion_pools.pkl), with the constitution's fusion as the first pass.

Methods (each re-scores the same candidates; nothing new is fetched):
  rocchio   dense PRF: a space's query vector moved toward the mean of the first pass's top-k documents,
            q' = q + β·mean(d_1..d_k); its cosine to a candidate is score_s + β·mean_j cos(d_j, d) up to the norm of
            q', which neither the space's ranks nor its min-max score see. Spaces E1, E7 or both
  prf_term  the same feedback similarity as a term of its own, γ·minmax(Σ_s mean_j cos_s(d_j, d)) added to the
            fused score (the spaces' own scores and ranks untouched)
  rm3       sparse PRF on E6: the query's terms (weight 1 − λ, spread evenly) and the m heaviest terms of the top-k
            documents' term distributions (weight λ, each doc's share its fused-score softmax), BM25-scored over the
            pool with the corpus's own df/avgdl and the constitution's k1/b
  e12       stage 5's MaxSim rerank of the fused head (rerank_weight > 0, head 10-50), and a symmetric MaxSim
            (mean of query→doc and doc→query) in place of E12's score in stage 3, and E12's MaxSim as a stage-3
            score weight (score-level fusion, as E6's and E7's)
  e12_full  (--full-states) E12's MaxSim over every content token's last hidden state (not only the 48 rarest, not
            projected: what E12 does not store today), in stage 3 and as the rerank; e12_full128 the same tokens
            through E12's own projection to 128-d
Every parameter is chosen on the prose tune half (objective nDCG@10 + R@10, the benchmark's), the code tune half only
reported; the test halves are scored once, for the chosen settings, with paired-bootstrap 95% intervals against
the constitution's fusion. A method is kept only if its prose test gain's interval is above zero and code's test
nDCG@10 falls by no more than 0.003.

Run:  .venv/bin/python benchmarks/bench_query_feedback.py [--full-states] [--methods e12_full,...] [--name NAME]
(~5 min on 2 busy cores: the fingerprints from the cache, the pools from learn_fusion's pickle, which
learn_fusion.py writes on its first run; --full-states runs the transformer over both corpora once, ~3 min, then
each of its trials takes ~0.5-1.5 min)
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _corpora import corpus, embed_corpus, refresh_lexical
from _stats import write_result
from bench_retrieval_corpora import TOP_K, Bench, bootstrap, metrics, objective, rank_in
from learn_fusion import load_benches

from contextgraph.retrieval.fusion import E1_COPIES, fuse, minmax, rerank
from contextgraph.services.memory.search import LATE, SEMANTIC, SPARSE, SPLADE, RetrievalSettings

CODE_SPACE = 7
FEEDBACK = -1  # prf_term's pseudo-space: added to the fused score, never fused itself
perf = time.perf_counter
# a re-scoring of one query's pool: (bench, query, candidate rows of the pool, their scores, first-pass fused
# scores) → the scores to fuse again
Method = Callable[["Corpus", int, np.ndarray, dict[int, np.ndarray], np.ndarray], dict[int, np.ndarray]]


@dataclasses.dataclass
class Corpus:
    bench: Bench
    dense: dict[int, np.ndarray]  # space → [docs, dim] float32 unit rows
    e6_docs: list[Any]  # Sparse per doc
    e6_queries: list[Any]
    e12_docs: list[np.ndarray]
    e12_queries: list[np.ndarray]
    idf: np.ndarray  # E6 BM25 idf per term id (the corpus's statistics)
    avgdl: float
    first_seq: int
    full_docs: list[np.ndarray] | None = None  # --full-states: every content token's 384-d state, unit rows
    full_queries: list[np.ndarray] | None = None


def full_states(name: str, texts: Sequence[str], backbone: Any, log: Callable[[str], None]) -> list[np.ndarray]:
    """Every content token's last hidden state (E12's kept_tokens without its 48-token limit and without its
    projection to 128-d), unit rows in float16; cached beside the fingerprints."""
    import hashlib
    import pickle

    from _corpora import CACHE_DIR

    from contextgraph.embedders.e12_late_interaction import kept_tokens
    from contextgraph.vectors import l2_normalize

    key = hashlib.sha256("\0".join(texts).encode() + backbone.model_name.encode()).hexdigest()[:16]
    path = CACHE_DIR / f"{name}-e12full-{key}.pkl"
    if path.exists():
        with open(path, "rb") as f:
            return pickle.load(f)
    out: list[np.ndarray] = []
    t0 = perf()
    for lo in range(0, len(texts), 64):
        for enc in backbone.encode(texts[lo: lo + 64]):
            keep = kept_tokens(enc, limit=10**6)
            states = enc.states[keep] if len(keep) else enc.states.mean(axis=0, keepdims=True)
            out.append(l2_normalize(states).astype(np.float16))
        log(f"[{name}] full token states {lo + 64}/{len(texts)} ({perf() - t0:.0f} s)")
    with open(path, "wb") as f:
        pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
    return out


def load(names: Sequence[str], log: Callable[[str], None],
         with_states: bool = False) -> tuple[list[Corpus], RetrievalSettings]:
    from _workload import bench_settings

    from contextgraph.embedders.pipeline import build_pipeline

    benches, base = load_benches(names, False, log)
    pipeline = build_pipeline(bench_settings(tempfile.mkdtemp(prefix="cg-prf-")))
    out = []
    for bn in benches:
        data = corpus(bn.name)
        emb = embed_corpus(data, pipeline, log=log)
        refresh_lexical(data, emb, pipeline)
        dense = {s: np.stack([fp[s] for fp in emb.docs]).astype(np.float32) for s in (SEMANTIC, CODE_SPACE)}
        e6 = [fp[SPARSE] for fp in emb.docs]
        vocab = 1 + max(int(v.indices.max()) for v in e6 + [fp[SPARSE] for fp in emb.queries] if len(v))
        df = np.zeros(vocab)
        for v in e6:
            df[v.indices] += 1
        n = len(e6)
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        avgdl = float(np.mean([float(v.values.sum()) for v in e6]))
        out.append(Corpus(bn, dense, e6, [fp[SPARSE] for fp in emb.queries], [fp[LATE] for fp in emb.docs],
                          [fp[LATE] for fp in emb.queries], idf, avgdl, int(bn.relevant[0])))
        bn.queries = emb.queries  # type: ignore[attr-defined]
        if with_states:
            out[-1].full_docs = full_states(f"{bn.name}-docs", [it.document for it in data.items],
                                            pipeline.backbone, log)
            out[-1].full_queries = full_states(f"{bn.name}-queries", [it.query for it in data.items],
                                               pipeline.backbone, log)
        log(f"[{bn.name}] {n} docs' vectors loaded")
    return out, base


# --- the replay with a second pass ---------------------------------------------------------------------------------

def pool_of(c: Corpus, s: RetrievalSettings, i: int) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    p = c.bench.pools[i]
    keep = ((p.source_rank[SPLADE] < s.sparse_candidates) | (p.source_rank[SPARSE] < s.sparse_candidates)
            | (p.source_rank[SEMANTIC] < s.dense_candidates))
    sel = np.flatnonzero(keep)
    return sel, {k: v[sel] for k, v in p.scores.items()}


def replay(c: Corpus, s: RetrievalSettings, idx: np.ndarray, method: Method | None = None) -> np.ndarray:
    """Rank (1..10, 0 = missed) of each query's relevant document: stages 3-5 as Retriever.rank, with `method`'s
    re-scored spaces fused again after a first pass."""
    bn = c.bench
    out = np.zeros(len(idx), dtype=np.int64)
    for row, i in enumerate(idx.tolist()):
        sel, scores = pool_of(c, s, i)
        if not len(sel):
            continue
        weights = s.weights_for(bn.texts[i])
        fused = fuse(scores, weights, s.rrf_k, s.score_weights)
        if method is not None:
            scores = {**scores, **method(c, i, bn.pools[i].seqs[sel] - c.first_seq, scores, fused)}
            extra = scores.pop(FEEDBACK, 0.0)
            fused = fuse(scores, weights, s.rrf_k, s.score_weights) + extra
        order, _ = rerank(fused, scores[LATE], max(s.rerank_head, TOP_K), s.rerank_weight)
        out[row] = rank_in(bn.pools[i].seqs[sel[order[:TOP_K]]].tolist(), int(bn.relevant[i]))
    return out


def rocchio(spaces: Sequence[int], k: int, beta: float) -> Method:
    def apply(c: Corpus, i: int, docs: np.ndarray, scores: dict[int, np.ndarray],
              fused: np.ndarray) -> dict[int, np.ndarray]:
        head = docs[np.argsort(-fused, kind="stable")[:k]]
        out = {}
        for sp in spaces:
            m = c.dense[sp][head].mean(axis=0)
            delta = beta * (c.dense[sp][docs] @ m).astype(np.float64)
            # E8 and E10 are E1's copies (fusion.E1_COPIES): moved with it, else they would vote where E1 moved
            for target in (sp, *(E1_COPIES if sp == SEMANTIC else ())):
                out[target] = scores[target] + delta
        return out
    return apply


def prf_term(spaces: Sequence[int], k: int, gamma: float) -> Method:
    """Feedback as evidence of its own: γ·minmax(Σ_s mean_j cos_s(d_j, d)) added to the fused score (returned
    under the pseudo-space FEEDBACK, which replay adds after fusing)."""
    def apply(c: Corpus, i: int, docs: np.ndarray, scores: dict[int, np.ndarray],
              fused: np.ndarray) -> dict[int, np.ndarray]:
        head = docs[np.argsort(-fused, kind="stable")[:k]]
        sim = sum((c.dense[sp][docs] @ c.dense[sp][head].mean(axis=0)).astype(np.float64) for sp in spaces)
        return {FEEDBACK: gamma * minmax(np.asarray(sim))}
    return apply


def bm25_weighted(c: Corpus, terms: np.ndarray, qw: np.ndarray, docs: np.ndarray, k1: float, b: float) -> np.ndarray:
    out = np.zeros(len(docs))
    pos = {int(t): j for j, t in enumerate(terms)}
    w = qw * c.idf[terms]
    for row, d in enumerate(docs.tolist()):
        v = c.e6_docs[d]
        dl = float(v.values.sum())
        norm = k1 * (1.0 - b + b * dl / c.avgdl)
        total = 0.0
        for t, tf in zip(v.indices.tolist(), v.values.tolist()):
            j = pos.get(t)
            if j is not None:
                total += w[j] * tf * (k1 + 1.0) / (tf + norm)
        out[row] = total
    return out


def rm3(k: int, m: int, lam: float, bm25: dict[str, float]) -> Method:
    def apply(c: Corpus, i: int, docs: np.ndarray, scores: dict[int, np.ndarray],
              fused: np.ndarray) -> dict[int, np.ndarray]:
        order = np.argsort(-fused, kind="stable")[:k]
        share = np.exp(fused[order] - fused[order].max())
        share /= share.sum()
        model: dict[int, float] = {}
        for d, wd in zip(docs[order].tolist(), share.tolist()):
            v = c.e6_docs[d]
            tot = float(v.values.sum()) or 1.0
            for t, tf in zip(v.indices.tolist(), v.values.tolist()):
                model[t] = model.get(t, 0.0) + wd * tf / tot
        q = np.unique(c.e6_queries[i].indices.astype(np.int64))
        expansion = sorted(model.items(), key=lambda kv: -kv[1])[:m]
        weights: dict[int, float] = {int(t): (1.0 - lam) / max(len(q), 1) for t in q.tolist()}
        z = sum(v for _, v in expansion) or 1.0
        for t, v in expansion:
            weights[t] = weights.get(t, 0.0) + lam * v / z
        terms = np.array(list(weights), dtype=np.int64)
        return {SPARSE: bm25_weighted(c, terms, np.array(list(weights.values())), docs, bm25["k1"], bm25["b"])}
    return apply


def symmetric_maxsim() -> Method:
    def apply(c: Corpus, i: int, docs: np.ndarray, scores: dict[int, np.ndarray],
              fused: np.ndarray) -> dict[int, np.ndarray]:
        q = np.asarray(c.e12_queries[i], dtype=np.float32)
        back = np.array([float((np.asarray(c.e12_docs[d], dtype=np.float32) @ q.T).max(axis=1).mean())
                         for d in docs.tolist()])
        return {LATE: 0.5 * (scores[LATE] + back)}
    return apply


def full_maxsim(projected: bool = False) -> Method:
    """E12's score replaced by MaxSim over every content token's state (--full-states): unprojected (384-d), or
    through E12's own projection to 128-d (`projected`: only the 48-token limit lifted)."""
    from contextgraph.embedders.e12_late_interaction import maxsim, projection
    from contextgraph.vectors import l2_normalize

    proj = projection(384) if projected else None

    def vectors(x: np.ndarray) -> np.ndarray:
        return x if proj is None else l2_normalize(x.astype(np.float32) @ proj)

    def apply(c: Corpus, i: int, docs: np.ndarray, scores: dict[int, np.ndarray],
              fused: np.ndarray) -> dict[int, np.ndarray]:
        assert c.full_docs is not None and c.full_queries is not None
        return {LATE: maxsim(vectors(c.full_queries[i]),
                             [vectors(c.full_docs[d]) for d in docs.tolist()]).astype(np.float64)}
    return apply


# --- tuning on the prose tune half ---------------------------------------------------------------------------------

def grid(base: RetrievalSettings, with_states: bool = False
         ) -> dict[str, list[tuple[str, RetrievalSettings, Method | None]]]:
    e6 = base.bm25.get(SPARSE, {"k1": 1.2, "b": 0.75})
    g: dict[str, list[tuple[str, RetrievalSettings, Method | None]]] = {"rocchio": [], "prf_term": [], "rm3": [],
                                                                        "e12": []}
    for spaces in ((SEMANTIC,), (CODE_SPACE,), (SEMANTIC, CODE_SPACE)):
        for k in (1, 3, 5, 10):
            for beta in (0.1, 0.25, 0.5, 1.0):
                g["rocchio"].append((f"rocchio E{'+E'.join(map(str, spaces))} k {k} β {beta}", base,
                                     rocchio(spaces, k, beta)))
        for k in (1, 3, 5):
            for gamma in (0.05, 0.1, 0.2, 0.4):
                g["prf_term"].append((f"prf term E{'+E'.join(map(str, spaces))} k {k} γ {gamma}", base,
                                      prf_term(spaces, k, gamma)))
    for k in (3, 5, 10):
        for m in (10, 20):
            for lam in (0.1, 0.25, 0.5):
                g["rm3"].append((f"rm3 k {k} m {m} λ {lam}", base, rm3(k, m, lam, e6)))
    for head in (10, 20, 30, 50):
        for w in (0.05, 0.1, 0.2, 0.3, 0.5):
            g["e12"].append((f"e12 rerank head {head} w {w}",
                             dataclasses.replace(base, rerank_head=head, rerank_weight=w), None))
    g["e12"].append(("e12 symmetric MaxSim in stage 3", base, symmetric_maxsim()))
    for w in (0.1, 0.2, 0.4, 0.8):
        g["e12"].append((f"e12 score weight {w} in stage 3",
                         dataclasses.replace(base, score_weights={**base.score_weights, LATE: w}), None))
    if with_states:
        g["e12_full"] = [("e12 full states in stage 3", base, full_maxsim())]
        for head in (20, 50):
            for w in (0.1, 0.2, 0.3, 0.5):
                g["e12_full"].append((f"e12 full states, rerank head {head} w {w}",
                                      dataclasses.replace(base, rerank_head=head, rerank_weight=w), full_maxsim()))
        g["e12_full128"] = [("e12 all tokens at 128-d in stage 3", base, full_maxsim(True))]
        for w in (0.2, 0.3, 0.5):
            g["e12_full128"].append((f"e12 all tokens at 128-d, rerank head 20 w {w}",
                                     dataclasses.replace(base, rerank_head=20, rerank_weight=w), full_maxsim(True)))
    return g


def replay_cost(c: Corpus, base: RetrievalSettings, s: RetrievalSettings, method: Method | None,
                n: int = 300) -> dict[str, float]:
    """Milliseconds per query of stages 3-5 replayed without and with the method (the second pass included), on
    the first n test queries: what the method would add to a search over a pool of this size."""
    idx = c.bench.halves["test"][:n]
    out = {}
    for label, st, m in (("without", base, None), ("with", s, method)):
        t0 = perf()
        replay(c, st, idx, m)
        out[label] = round((perf() - t0) * 1e3 / len(idx), 3)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="query_feedback")
    ap.add_argument("--methods", default="rocchio,prf_term,rm3,e12,e12_full,e12_full128")
    ap.add_argument("--full-states", action="store_true",
                    help="also E12 over every content token's unprojected state (runs the transformer over both "
                         "corpora once, ~10 min, then cached)")
    args = ap.parse_args(argv)

    def log(m: str) -> None:
        print(m, flush=True)

    started = perf()
    corpora, base = load(("code", "prose"), log, args.full_states)
    by = {c.bench.name: c for c in corpora}
    prose, code = by["prose"], by["code"]
    tune = prose.bench.halves["tune"]
    before = {c.bench.name: {h: replay(c, base, c.bench.halves[h]) for h in ("tune", "test")} for c in corpora}
    base_obj = objective(before["prose"]["tune"])
    log(f"constitution: prose tune {metrics(before['prose']['tune'])}, test {metrics(before['prose']['test'])}; "
        f"code test {metrics(before['code']['test'])}")
    results: dict[str, Any] = {"constitution": {n: {h: metrics(r) for h, r in v.items()} for n, v in before.items()},
                               "methods": {}}
    for family, trials in grid(base, args.full_states).items():
        if family not in args.methods.split(","):
            continue
        t0 = perf()
        scored = []
        for label, s, method in trials:
            obj = objective(replay(prose, s, tune, method))
            scored.append({"trial": label, "prose_tune_objective": round(obj, 4)})
            log(f"   {label}: {obj:.4f} (constitution {base_obj:.4f})")
        best = max(range(len(trials)), key=lambda j: scored[j]["prose_tune_objective"])
        label, s, method = trials[best]
        res: dict[str, Any] = {"trials": scored, "chosen": label, "tune_s": round(perf() - t0, 1)}
        for c in corpora:
            r: dict[str, Any] = {"replay_ms_per_query": replay_cost(c, base, s, method)}
            for h in ("tune", "test"):
                after = replay(c, s, c.bench.halves[h], method)
                r[h] = {"before": metrics(before[c.bench.name][h]), "after": metrics(after),
                        "after_minus_before": bootstrap(before[c.bench.name][h], after)}
            res[c.bench.name] = r
        # kept: better on the tune half by the benchmark's margin, better on the prose test half beyond its 95%
        # interval, and code's test nDCG@10 not down by more than 0.003
        res["kept"] = bool(res["prose"]["test"]["after_minus_before"]["ndcg@10"][0] > 0
                           and res["code"]["test"]["after_minus_before"]["ndcg@10"][2] >= -0.003
                           and scored[best]["prose_tune_objective"] > base_obj + 0.001)
        results["methods"][family] = res
        log(f"[{family}] chosen {label}: {res['prose']} | code {res['code']}")
    del code
    results["wall_s"] = round(perf() - started, 1)
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
