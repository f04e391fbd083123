"""A learned re-scorer of the fused head (issue 37: "fusion learned, not hand-set ... a simple model over the
per-space scores, per query kind"), replayed over the cached candidate pools of learn_fusion.py
(benchmarks/results/learn_fusion_pools.pkl: every query's pool with every space's score), stages 3-5 as
constitution.yaml sets them as the first pass.

The first pass's best K candidates (K 20/30/50) are re-scored by a model over features of each (query, candidate):
  fusion    the fused score over the best one's, its rank in the head (1/rank), its gap to the best
  spaces    for E1, E5, E6, E7, E9, E11, E12, E13 (E2-E4 vote only for temporal queries; E8/E10 are E1's copies on
            these stores): the min-max score over the pool, 1/rank in the pool, the raw score and its gap to the
            pool's best raw score
  text      from the stored texts with the project's analyzer (retrieval/analyzer.py) and the corpus's idf (what
            E6's index statistics hold): query-term coverage of the document (plain and idf-weighted), of its
            first 30 terms and of its last paragraph, the largest idf of a query term the document lacks, adjacent
            query-term pairs found adjacent in the document, the query as a phrase, log document length, log query
            length; and each coverage's gap to the head's best
  dense     over E1 and E7's stored vectors: the candidate's hubness (mean cosine to its 10 nearest documents in the
            corpus, which the store would keep per memory at index time), its cosine to the head's best (to the
            second for the best itself) and its mean cosine to the head's first 5 (itself left out)
Models, each fitted on a corpus's tune half only (the kind of query: code vs prose; one model per corpus):
  logit     a pairwise logistic regression (relevant − other head candidate, each query weighted equally, no
            intercept) on standardised features: linear, its coefficients fit in a JSON file
  gbdt      a pointwise HistGradientBoostingClassifier (relevant 1, others 0; each query weighted equally)
  logit_nohub  logit without the hubness features (what a search could compute with no change to the store)
  product   logit over the product's own features (contextgraph/retrieval/head_rescorer.py: fusion, spaces, E6
            term coverage from the stored buckets with the corpus's idf, E1/E7 head cosines; no hubness, no
            positions),
            computed by that module for a head of each K; its test half is replayed through head_rescorer.apply
            (what Retriever does) and checked against the model's own ranks. --write stores the chosen models in
            src/contextgraph/retrieval/head_rescorer.json (prose's as the "text" model, code's as "code")
K, C (logit) and the trees' depth/leaves/iterations (gbdt) are chosen by 5-fold cross-validation over the tune
half's queries (objective nDCG@10 + R@10, the benchmarks'); the test halves are scored once per chosen model, with
paired-bootstrap 95% intervals against today's ranking. Kept only if prose's test gain's interval is above zero and
code's test nDCG@10 falls by no more than 0.003.

Run:  .venv/bin/python benchmarks/bench_head_rescorer.py [--models logit,logit_nohub,gbdt,product] [--write]
(~3-10 min on 2 busy cores: pools from learn_fusion's pickle, texts from _corpora; no embedding)
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _corpora import corpus
from _stats import write_result
from bench_query_feedback import Corpus, load
from bench_retrieval_corpora import TOP_K, Bench, bootstrap, metrics, objective, rank_in

from contextgraph.retrieval import head_rescorer as hr
from contextgraph.retrieval.analyzer import analyze
from contextgraph.retrieval.fusion import fuse, minmax, ranks, rerank
from contextgraph.services.memory.search import LATE, SEMANTIC, SPARSE, SPLADE, RetrievalSettings

SPACES = (1, 5, 6, 7, 9, 11, 12, 13)
DENSE = (1, 7)
K_MAX = 50
HEADS = (10, 20, 30, 50)
HUB_K = 10
perf = time.perf_counter


@dataclasses.dataclass
class Heads:
    """One corpus's first-pass heads: per query, the head's features [K_MAX or fewer, F], the row of the relevant
    document in the head (−1 when absent) and the first pass's own rank (1..10, 0 = missed)."""
    name: str
    x: list[np.ndarray]
    hit: np.ndarray
    first: np.ndarray
    names: list[str]


class Texts:
    """The corpus's analysed texts and idf (the corpus's own document frequencies, as E6's index keeps them)."""

    def __init__(self, name: str) -> None:
        data = corpus(name)
        self.queries = [analyze(it.query) for it in data.items]
        self.phrases = [" ".join(it.query.lower().split()) for it in data.items]
        self.docs = [analyze(it.document) for it in data.items]
        self.lower = [" ".join(it.document.lower().split()) for it in data.items]
        paragraphs = [it.document.split("\n\n") for it in data.items]
        self.last = [set(analyze(p[-1])) if len(p) > 1 else set() for p in paragraphs]
        self.sets = [set(d) for d in self.docs]
        self.pairs = [set(pairwise(d)) for d in self.docs]
        df = Counter(t for s in self.sets for t in s)
        n = len(self.docs)
        self.idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.unseen = math.log(1.0 + (n + 0.5) / 0.5)


TEXT_NAMES = ["cov", "idf_cov", "cov_first", "cov_last", "missing_idf", "pair_cov", "phrase", "log_dl", "log_ql"]


def text_features(t: Texts, q: int, docs: Sequence[int]) -> np.ndarray:
    terms = list(dict.fromkeys(t.queries[q]))
    idf = np.array([t.idf.get(w, t.unseen) for w in terms])
    qpairs = set(pairwise(t.queries[q]))
    out = np.zeros((len(docs), len(TEXT_NAMES)))
    for row, d in enumerate(docs):
        present = np.array([w in t.sets[d] for w in terms], dtype=bool)
        first = set(t.docs[d][:30])
        out[row] = [
            present.mean() if len(terms) else 0.0,
            float(idf[present].sum() / idf.sum()) if len(terms) else 0.0,
            float(np.mean([w in first for w in terms])) if len(terms) else 0.0,
            float(np.mean([w in t.last[d] for w in terms])) if len(terms) else 0.0,
            float(idf[~present].max()) if (~present).any() else 0.0,
            len(qpairs & t.pairs[d]) / len(qpairs) if qpairs else 0.0,
            float(t.phrases[q] in t.lower[d]),
            math.log1p(len(t.docs[d])),
            math.log1p(len(terms)),
        ]
    return out


def first_pass(bn: Bench, s: RetrievalSettings, i: int) -> tuple[np.ndarray, dict[int, np.ndarray], np.ndarray]:
    """(pool rows kept at the constitution's candidate counts, their scores, the fused order of stages 3-5)."""
    p = bn.pools[i]
    keep = ((p.source_rank[SPLADE] < s.sparse_candidates) | (p.source_rank[SPARSE] < s.sparse_candidates)
            | (p.source_rank[SEMANTIC] < s.dense_candidates))
    sel = np.flatnonzero(keep)
    scores = {k: v[sel] for k, v in p.scores.items()}
    fused = fuse(scores, s.weights_for(bn.texts[i]), s.rrf_k, s.score_weights)
    order, final = rerank(fused, scores[LATE], max(s.rerank_head, K_MAX), s.rerank_weight)
    return sel, scores, np.column_stack([order, final])


def hubness(v: np.ndarray) -> np.ndarray:
    """Each document's mean cosine to its HUB_K nearest other documents (unit rows)."""
    out = np.zeros(len(v))
    for lo in range(0, len(v), 512):
        sim = v[lo: lo + 512] @ v.T
        sim[np.arange(len(sim)), np.arange(lo, lo + len(sim))] = -1.0
        out[lo: lo + 512] = np.sort(sim, axis=1)[:, -HUB_K:].mean(axis=1)
    return out


def dense_features(dense: dict[int, np.ndarray], hub: dict[int, np.ndarray], docs: np.ndarray) -> list[np.ndarray]:
    cols = []
    for sp in DENSE:
        d = dense[sp][docs]
        sim = (d @ d.T).astype(np.float64)
        best = sim[:, 0].copy()
        best[0] = sim[0, 1] if len(docs) > 1 else 0.0
        head = sim[:, :5].copy()
        for r in range(min(5, len(docs))):
            head[r, r] = np.nan
        cols += [hub[sp][docs], best, np.nanmean(head, axis=1)]
    return cols


def heads(bn: Bench, t: Texts, s: RetrievalSettings, dense: dict[int, np.ndarray]) -> Heads:
    first_seq = int(bn.relevant[0])
    hub = {sp: hubness(dense[sp]) for sp in DENSE}
    xs: list[np.ndarray] = []
    hit = np.full(len(bn.pools), -1, dtype=np.int64)
    first = np.zeros(len(bn.pools), dtype=np.int64)
    names = ["fused", "head_rr", "fused_gap"] + [f"E{sp}_{f}" for sp in SPACES for f in ("mm", "rr", "raw", "gap")]
    names += TEXT_NAMES + [f"{n}_gap" for n in TEXT_NAMES[:6]]
    names += [f"E{sp}_{f}" for sp in DENSE for f in ("hub", "to_best", "to_head5")]
    for i in range(len(bn.pools)):
        sel, scores, of = first_pass(bn, s, i)
        order, final = of[:K_MAX, 0].astype(np.int64), of[:K_MAX, 1]
        docs = (bn.pools[i].seqs[sel[order]] - first_seq).tolist()
        rel = int(bn.relevant[i]) - first_seq
        if rel in docs:
            hit[i] = docs.index(rel)
            first[i] = hit[i] + 1 if hit[i] < TOP_K else 0
        cols = [final / max(final[0], 1e-9), 1.0 / np.arange(1, len(order) + 1), final - final[0]]
        for sp in SPACES:
            raw = np.nan_to_num(scores[sp], nan=0.0)
            cols += [minmax(raw)[order], 1.0 / ranks(raw)[order], raw[order], raw[order] - raw.max()]
        tf = text_features(t, i, docs)
        cols += dense_features(dense, hub, np.asarray(docs))
        xs.append(np.column_stack(cols[:3 + 4 * len(SPACES)] + [tf, tf[:, :6] - tf[:, :6].max(axis=0)]
                                  + cols[3 + 4 * len(SPACES):]))
    return Heads(bn.name, xs, hit, first, names)


# --- models --------------------------------------------------------------------------------------------------------

def rescored_ranks(h: Heads, idx: np.ndarray, k: int, score: Any) -> np.ndarray:
    """Rank (1..10, 0 = missed) of the relevant document once the first k of each head are re-scored by `score`
    (features → scores; ties keep the first pass's order)."""
    out = np.zeros(len(idx), dtype=np.int64)
    for row, i in enumerate(idx.tolist()):
        j = int(h.hit[i])
        if j < 0:
            continue
        if j >= k:
            out[row] = h.first[i]
            continue
        sc = score(h.x[i][:k])
        r = 1 + int((sc > sc[j]).sum() + (sc[:j] == sc[j]).sum())
        out[row] = r if r <= TOP_K else 0
    return out


def fit_logit(h: Heads, idx: np.ndarray, k: int, c: float) -> Any:
    from sklearn.linear_model import LogisticRegression

    xs, ws = [], []
    for i in idx.tolist():
        j = int(h.hit[i])
        x = h.x[i][:k]
        if j < 0 or j >= k or len(x) < 2:
            continue
        d = x[j] - np.delete(x, j, axis=0)
        xs.append(d)
        ws.append(np.full(len(d), 1.0 / len(d)))
    x, w = np.vstack(xs), np.concatenate(ws)
    scale = x.std(axis=0) + 1e-9
    m = LogisticRegression(C=c, fit_intercept=False, max_iter=3000, random_state=0)
    m.fit(np.vstack([x, -x]) / scale, np.r_[np.ones(len(x)), -np.ones(len(x))], sample_weight=np.r_[w, w])
    coef = m.coef_[0] / scale
    return lambda f: f @ coef, coef


def fit_gbdt(h: Heads, idx: np.ndarray, k: int, params: dict) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    xs, ys, ws = [], [], []
    for i in idx.tolist():
        j = int(h.hit[i])
        x = h.x[i][:k]
        if j < 0 or j >= k:
            continue
        y = np.zeros(len(x))
        y[j] = 1.0
        xs.append(x)
        ys.append(y)
        ws.append(np.where(y > 0, 0.5, 0.5 / max(len(x) - 1, 1)))
    m = HistGradientBoostingClassifier(random_state=0, **params)
    m.fit(np.vstack(xs), np.concatenate(ys), sample_weight=np.concatenate(ws) * 100)
    return lambda f: m.decision_function(f), m


def folds(idx: np.ndarray, n: int = 5, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    perm = np.random.default_rng(seed).permutation(idx)
    parts = np.array_split(perm, n)
    return [(np.concatenate(parts[:f] + parts[f + 1:]), parts[f]) for f in range(n)]


def grid(model: str) -> list[tuple[int, Any]]:
    if model.startswith("logit"):
        return [(k, c) for k in HEADS for c in (0.03, 0.1, 0.3, 1.0)]
    return [(20, {"max_iter": 150, "learning_rate": 0.05, "max_leaf_nodes": leaves, "min_samples_leaf": 40})
            for leaves in (7, 15)]


def columns(model: str, h: Heads) -> Heads:
    """The heads with the model's features only (logit_nohub: without the hubness columns)."""
    if model != "logit_nohub":
        return h
    keep = [j for j, n in enumerate(h.names) if not n.endswith("_hub")]
    return dataclasses.replace(h, x=[x[:, keep] for x in h.x], names=[h.names[j] for j in keep])


def fit(model: str, h: Heads, idx: np.ndarray, k: int, p: Any) -> Any:
    return fit_logit(h, idx, k, p) if model.startswith("logit") else fit_gbdt(h, idx, k, p)


def cross_validate(model: str, h: Heads, tune: np.ndarray, log: Any) -> tuple[list[dict], tuple[int, Any]]:
    trials = []
    base = objective(h.first[tune])
    pos = {q: r for r, q in enumerate(tune.tolist())}
    for k, p in grid(model):
        found = np.zeros(len(tune), dtype=np.int64)
        for train, held in folds(tune):
            score, _ = fit(model, h, train, k, p)
            found[[pos[q] for q in held.tolist()]] = rescored_ranks(h, held, k, score)
        obj = objective(found)
        trials.append({"k": k, "params": p, "cv_objective": round(obj, 4), "cv": metrics(found)})
        log(f"   [{h.name}] {model} k {k} {p}: CV {obj:.4f} (first pass {base:.4f})")
    best = max(range(len(trials)), key=lambda j: trials[j]["cv_objective"])
    return trials, (trials[best]["k"], trials[best]["params"])


def evaluate(model: str, h: Heads, halves: dict[str, np.ndarray], log: Any) -> dict[str, Any]:
    """Cross-validation on the tune half, the chosen setting refitted on the whole tune half, the test half once."""
    h = columns(model, h)
    tune, test = halves["tune"], halves["test"]
    trials, (k, p) = cross_validate(model, h, tune, log)
    score, fitted = fit(model, h, tune, k, p)
    r: dict[str, Any] = {"trials": trials, "chosen": {"k": k, "params": p}}
    for half, idx in (("tune", tune), ("test", test)):
        after = rescored_ranks(h, idx, k, score)
        r[half] = {"before": metrics(h.first[idx]), "after": metrics(after),
                   "after_minus_before": bootstrap(h.first[idx], after)}
    if model.startswith("logit"):
        r["coef"] = dict(zip(h.names, np.round(fitted, 5).tolist()))
    t0 = perf()
    for i in test[:300].tolist():
        score(h.x[i][:k])
    r["score_ms_per_query"] = round((perf() - t0) * 1e3 / 300, 4)  # the model alone, not the features
    log(f"[{h.name}] {model} chosen k {k} {p}: tune {r['tune']['after']} test {r['test']}")
    return r


# --- the product's features (retrieval/head_rescorer.py) ----------------------------------------------------------

def pool_inputs(c: Corpus, s: RetrievalSettings, i: int) -> tuple[np.ndarray, dict[int, np.ndarray], tuple]:
    """(fused scores of the pool, every space's scores, the rest of head_rescorer.features' arguments)."""
    bn = c.bench
    sel, scores, _ = first_pass(bn, s, i)
    fused = fuse(scores, s.weights_for(bn.texts[i]), s.rrf_k, s.score_weights)
    docs = (bn.pools[i].seqs[sel] - c.first_seq).tolist()
    q = np.asarray(c.e6_queries[i].indices, dtype=np.int64)
    return fused, scores, (q, c.idf[q], [c.e6_docs[d] for d in docs], {sp: c.dense[sp][docs] for sp in hr.DENSE})


def product_heads(c: Corpus, h: Heads, s: RetrievalSettings) -> dict[int, Heads]:
    """The product's features of each query's head of each K (its gaps are over the head it re-scores)."""
    xs: dict[int, list[np.ndarray]] = {k: [] for k in HEADS}
    for i in range(len(c.bench.pools)):
        fused, scores, (q, idf, doc_terms, dense) = pool_inputs(c, s, i)
        order = np.argsort(-fused, kind="stable")
        for k in HEADS:
            xs[k].append(hr.features(fused, scores, order[:k], q, idf, doc_terms, dense))
    return {k: dataclasses.replace(h, x=x, names=list(hr.FEATURES)) for k, x in xs.items()}


def product_ranks(c: Corpus, s: RetrievalSettings, idx: np.ndarray, model: hr.HeadModel) -> np.ndarray:
    """Stages 3-5 as Retriever.rank with the head re-scorer applied to the fused scores."""
    bn = c.bench
    out = np.zeros(len(idx), dtype=np.int64)
    for row, i in enumerate(idx.tolist()):
        sel, scores, _ = first_pass(bn, s, i)
        fused, _, (q, idf, doc_terms, dense) = pool_inputs(c, s, i)
        fused = hr.apply(fused, scores, q, idf, doc_terms, dense, model)
        order, _ = rerank(fused, scores[LATE], max(s.rerank_head, TOP_K), s.rerank_weight)
        out[row] = rank_in(bn.pools[i].seqs[sel[order[:TOP_K]]].tolist(), int(bn.relevant[i]))
    return out


def evaluate_product(c: Corpus, h: Heads, s: RetrievalSettings, log: Any) -> tuple[dict[str, Any], hr.HeadModel]:
    by_k = product_heads(c, h, s)
    halves = c.bench.halves
    tune, test = halves["tune"], halves["test"]
    trials = []
    pos = {q: r for r, q in enumerate(tune.tolist())}
    for k, p in grid("logit"):
        found = np.zeros(len(tune), dtype=np.int64)
        for train, held in folds(tune):
            score, _ = fit_logit(by_k[k], train, k, p)
            found[[pos[q] for q in held.tolist()]] = rescored_ranks(by_k[k], held, k, score)
        trials.append({"k": k, "params": p, "cv_objective": round(objective(found), 4), "cv": metrics(found)})
        log(f"   [{h.name}] product k {k} C {p}: CV {trials[-1]['cv_objective']:.4f}")
    best = max(trials, key=lambda t: t["cv_objective"])
    k, p = best["k"], best["params"]
    _, coef = fit_logit(by_k[k], tune, k, p)
    model = hr.HeadModel(k, coef)
    r: dict[str, Any] = {"trials": trials, "chosen": {"k": k, "params": p}}
    for half, idx in (("tune", tune), ("test", test)):
        after = product_ranks(c, s, idx, model)
        if half == "test":
            assert (after == rescored_ranks(by_k[k], idx, k, model.score)).all(), "apply() is not the model"
        r[half] = {"before": metrics(h.first[idx]), "after": metrics(after),
                   "after_minus_before": bootstrap(h.first[idx], after)}
    r["coef"] = dict(zip(hr.FEATURES, np.round(coef, 5).tolist()))
    r["apply_ms_per_query"] = round(_apply_ms(c, s, test[:300], model), 4)
    log(f"[{h.name}] product chosen k {k} C {p}: test {r['test']}, apply {r['apply_ms_per_query']} ms/query")
    return r, model


def _apply_ms(c: Corpus, s: RetrievalSettings, idx: np.ndarray, model: hr.HeadModel) -> float:
    """Milliseconds per query of head_rescorer.apply alone (features and model), its inputs made beforehand."""
    inputs = [pool_inputs(c, s, i) for i in idx.tolist()]
    t0 = perf()
    for fused, scores, (q, idf, doc_terms, dense) in inputs:
        hr.apply(fused, scores, q, idf, doc_terms, dense, model)
    return (perf() - t0) * 1e3 / max(len(inputs), 1)


def write_models(models: dict[str, hr.HeadModel], trail: dict[str, Any]) -> Path:
    import json

    path = Path(hr.__file__).with_name("head_rescorer.json")
    kinds = {"prose": "text", "code": "code"}
    data = {"fitted_by": "benchmarks/bench_head_rescorer.py --models product --write (tune halves only)",
            "features": list(hr.FEATURES),
            "models": {kinds[n]: {"head": m.head, "C": trail[n]["chosen"]["params"],
                                  "coef": [round(float(x), 6) for x in m.coef]} for n, m in models.items()}}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="head_rescorer")
    ap.add_argument("--models", default="logit,logit_nohub,gbdt,product")
    ap.add_argument("--write", action="store_true", help="store the product model in retrieval/head_rescorer.json")
    args = ap.parse_args(argv)

    def log(m: str) -> None:
        print(m, flush=True)

    started = perf()
    corpora, base = load(("code", "prose"), log)
    hs, halves = {}, {}
    for c in corpora:
        bn = c.bench
        t0 = perf()
        hs[bn.name], halves[bn.name] = heads(bn, Texts(bn.name), base, c.dense), bn.halves
        check = bn.replay(base, bn.halves["test"])
        assert (check == hs[bn.name].first[bn.halves["test"]]).all(), "the head's first pass is not the replay's"
        log(f"[{bn.name}] heads and features in {perf() - t0:.0f} s; first pass test {metrics(check)}")
    results: dict[str, Any] = {"features": hs["prose"].names, "models": {}}
    for model in args.models.split(","):
        if model == "product":
            res, fitted = {}, {}
            for c in corpora:
                res[c.bench.name], fitted[c.bench.name] = evaluate_product(c, hs[c.bench.name], base, log)
            if args.write:
                log(f"models written to {write_models(fitted, res)}")
        else:
            res = {name: evaluate(model, h, halves[name], log) for name, h in hs.items()}
        res["kept"] = bool(res["prose"]["test"]["after_minus_before"]["ndcg@10"][0] > 0
                           and res["code"]["test"]["after_minus_before"]["ndcg@10"][2] >= -0.003)
        results["models"][model] = res
    results["wall_s"] = round(perf() - started, 1)
    write_result(args.name, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
