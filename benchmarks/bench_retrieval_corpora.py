"""Retrieval quality on two corpora (code and prose, benchmarks/_corpora.py), the full pipeline against the plain
baselines, with the fusion settings tuned on a tune half of the queries and reported on the other half.

Systems (each asked for its top 10; one relevant document per query):
  bm25      E6 alone: BM25 over the project's analyzer (identifiers split and kept whole, light stemming), exact
            over all documents through the E6 inverted index, with the constitution's k1/b
  bm25s     reference: the bm25s library with its own tokenizer (English stopwords, PyStemmer), k1 1.5, b 0.75
  e1        E1 (MiniLM) cosine, exact over all documents
  rrf       BM25 + E1 Reciprocal Rank Fusion (k 60) of each one's top 100: the plain hybrid
  full      the 5-stage Retriever (services/memory/search.py) with the given settings, called as search_graph calls it
Metrics: nDCG@10 (one relevant document: 1/log2(1 + rank)), recall@10, MRR@10; paired-bootstrap 95% intervals of
the differences on the test half.

Tuning: first E6's and E13's BM25 k1/b (each space alone, tune halves of both corpora together), then the fusion
(space weights, rrf_k, score-level weights of E6 and E1, rerank weight, per-query-kind multipliers) by coordinate
ascent on the tune halves of both corpora (objective: mean of nDCG@10 + recall@10 over the two corpora), replaying
stages 3-5 over cached candidate pools with the Retriever's own kernels (retrieval/fusion.py); the replay is checked
against Retriever.run. One setting for both corpora: the constitution holds one.

Documents are stored in an LMDB store of their own (no app), with fingerprints from the cache (_corpora.py).

Run:  .venv/bin/python benchmarks/bench_retrieval_corpora.py [--corpora code,prose] [--tune]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from _corpora import CorpusData, corpus, embed_corpus, halves, refresh_lexical, with_fp32_documents
from _stats import summarize, write_result
from _workload import bench_settings

from contextgraph.retrieval.fusion import fuse, ranks, rerank
from contextgraph.services.memory.search import LATE, SEMANTIC, SPARSE, SPLADE, RetrievalSettings, Retriever

TOP_K = 10
MAX_SPARSE, MAX_DENSE = 100, 100
perf = time.perf_counter


# --- metrics -------------------------------------------------------------------------------------------------------

def rank_in(found: Sequence[int], relevant: int) -> int:
    for i, doc in enumerate(list(found)[:TOP_K], 1):
        if doc == relevant:
            return i
    return 0


def per_query(r: np.ndarray) -> dict[str, np.ndarray]:
    r = np.asarray(r)
    hit = r > 0
    return {"ndcg@10": np.where(hit, 1.0 / np.log2(1 + np.maximum(r, 1)), 0.0), "recall@10": hit.astype(float),
            "mrr@10": np.where(hit, 1.0 / np.maximum(r, 1), 0.0)}


def metrics(r: np.ndarray) -> dict[str, float]:
    return {k: round(float(v.mean()), 4) if len(v) else math.nan for k, v in per_query(r).items()}


def bootstrap(a: np.ndarray, b: np.ndarray, seed: int = 0, n: int = 2000) -> dict[str, list[float]]:
    """Paired bootstrap 95% interval of mean(b) − mean(a) per metric."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n, len(a)))
    pa, pb = per_query(a), per_query(b)
    out = {}
    for k in ("ndcg@10", "recall@10", "mrr@10"):
        d = pb[k] - pa[k]
        out[k] = [round(float(x), 4) for x in np.percentile(d[idx].mean(axis=1), [2.5, 97.5])] + [
            round(float(d.mean()), 4)]
    return out


def objective(r: np.ndarray) -> float:
    m = metrics(r)
    return m["ndcg@10"] + m["recall@10"]


# --- one corpus in a store -------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Pool:
    seqs: np.ndarray
    source_rank: dict[int, np.ndarray]  # generator space → rank of each candidate in its list (big when absent)
    scores: dict[int, np.ndarray]


class Bench:
    def __init__(self, name: str, pipeline: Any, settings: RetrievalSettings, log: Callable[[str], None],
                 stored_fp32: bool = False) -> None:
        from contextgraph.storage.base import MemoryRecord
        from contextgraph.storage.indexes import IndexSet
        from contextgraph.storage.lmdb_store import LmdbStore

        self.name = name
        self.data: CorpusData = corpus(name)
        self.pipeline = pipeline
        t0 = perf()
        self.emb = embed_corpus(self.data, pipeline, log=log)
        if stored_fp32:
            self.emb = with_fp32_documents(self.data, self.emb)
        refresh_lexical(self.data, self.emb, pipeline)
        self.home = Path(tempfile.mkdtemp(prefix=f"cg-corpora-{name}-"))
        self.store = LmdbStore(self.home / "store", sync=False)
        self.indexes = IndexSet(self.store)
        n = len(self.data.items)
        first = self.store.last_seq() + 1
        for i, (it, fp) in enumerate(zip(self.data.items, self.emb.docs)):
            ts = self.emb.t0 - n + i
            self.store.put(MemoryRecord(id=uuid.uuid4().hex, content=it.document, rationale="retrieval benchmark",
                                        modality=self.data.modality, session="bench", created_at=ts, updated_at=ts),
                           fp)
        self.indexes.catch_up(self.store)
        self.seqs = np.arange(first, first + n, dtype=np.int64)
        self.relevant = self.seqs  # query i ↔ document i
        self.queries = self.emb.queries
        self.texts = [it.query for it in self.data.items]
        from contextgraph.embedders.e05_causal import query_direction

        self.directions = [query_direction(t) for t in self.texts]
        self.halves = halves(n)
        self.e1 = np.stack([fp[SEMANTIC] for fp in self.emb.docs]).astype(np.float32)
        self.settings = settings
        self.pools: list[Pool] | None = None
        self._replay_cache: dict[tuple[int, int], dict] = {}
        log(f"[{name}] {n} documents stored and indexed in {perf() - t0:.0f} s")

    def close(self) -> None:
        import shutil

        self.store.close()
        shutil.rmtree(self.home, ignore_errors=True)

    def retriever(self, settings: RetrievalSettings | None = None, purpose: Any = None) -> Retriever:
        return Retriever(self.store, self.indexes, self.pipeline.embedders, settings or self.settings, (), purpose)

    def north_star(self, constitution: dict, log: Callable[[str], None]) -> Any:
        """The star auto_bootstrap_north_star would derive from this store (the same kernels and settings as
        services.autonomous: k-means over E1 with k by silhouette, the largest cluster's centroid over its ≤ 256
        members nearest the centre, alignment relative to its typical member), without an app."""
        from contextgraph.services.purpose.teleology import StarView
        from contextgraph.teleology.clustering import cluster, dominant, unit
        from contextgraph.teleology.goals import Goal, GoalSet
        from contextgraph.teleology.purpose import member_reference, purpose_vectors, weight_vector
        from contextgraph.teleology.star import centroid

        a, t = constitution["autonomous"], constitution["teleology"]
        t0 = perf()
        c = cluster(self.e1, 2, 11, seed=int(a["cluster_seed"]), sample=int(a["silhouette_sample"]),
                    minibatch_above=int(a["minibatch_above"]))
        d = dominant(c.labels)
        rows = np.flatnonzero(c.labels == d)
        nearest = rows[np.argsort(-(unit(self.e1[rows]) @ c.centroids[d]), kind="stable")][: int(t["star_members_max"])]
        star = centroid([self.emb.docs[i] for i in nearest])
        weights = weight_vector({int(k): float(v) for k, v in t["alignment_weights"].items()})
        by_space = {e.space: e for e in self.pipeline.embedders}
        sample = rows[:: max(1, len(rows) // 500)]
        reference = member_reference(purpose_vectors(by_space, star, [self.emb.docs[i] for i in sample]))
        # the goals stage 4 re-ranks by: every cluster of the same clustering (services.autonomous_scan.goals_of)
        x = unit(self.e1)
        goals = GoalSet(tuple(Goal(f"goal-{g}", f"cluster {g}", c.centroids[g],
                                   float(np.median(x[c.labels == g] @ c.centroids[g])), int((c.labels == g).sum()))
                              for g in range(c.k) if (c.labels == g).sum() >= 2))
        view = StarView("bench", star, weights, float(constitution["retrieval"]["alignment_floor"]), reference,
                        goals=goals)
        self.doc_alignment = np.concatenate([view.alignments(by_space, self.emb.docs[lo: lo + 512])
                                             for lo in range(0, len(self.emb.docs), 512)])
        self.star_info = {"k": c.k, "silhouette": round(c.silhouette, 4), "star_cluster_size": len(rows),
                          "docs_aligned_above_threshold": int((self.doc_alignment >= view.threshold).sum()),
                          "seconds": round(perf() - t0, 1)}
        log(f"[{self.name}] north star: {self.star_info}")
        return view

    def ranks_of(self, lists: Sequence[Sequence[int]], idx: np.ndarray | None = None) -> np.ndarray:
        """Rank of each query's relevant document in its list: the lists of every query, or of queries `idx`."""
        queries = range(len(lists)) if idx is None else idx.tolist()
        return np.array([rank_in(found, int(self.relevant[i])) for i, found in zip(queries, lists)])

    # -- baselines --
    def lexical(self, space: int, k1: float, b: float, k: int = TOP_K, idx: np.ndarray | None = None) -> list:
        idx = np.arange(len(self.queries)) if idx is None else idx
        return [[s for s, _ in self.indexes.search(space, self.queries[i][space], k, 1.0, k1=k1, b=b)] for i in idx]

    def e1_top(self, k: int = TOP_K) -> list[list[int]]:
        q = np.stack([fp[SEMANTIC] for fp in self.queries]).astype(np.float32)
        out = []
        for lo in range(0, len(q), 512):
            sims = q[lo : lo + 512] @ self.e1.T
            part = np.argpartition(-sims, k, axis=1)[:, :k]
            for row, cand in zip(sims, part):
                out.append(self.seqs[cand[np.argsort(-row[cand], kind="stable")]].tolist())
        return out

    def bm25s_top(self) -> list[list[int]]:
        import bm25s
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        retr = bm25s.BM25()
        retr.index(bm25s.tokenize([it.document for it in self.data.items], stopwords="en", stemmer=stemmer,
                                  show_progress=False), show_progress=False)
        qt = bm25s.tokenize(self.texts, stopwords="en", stemmer=stemmer, show_progress=False)
        docs, _ = retr.retrieve(qt, k=TOP_K, show_progress=False, n_threads=1)
        return [self.seqs[row].tolist() for row in docs]

    # -- the full pipeline, for real --
    def full(self, settings: RetrievalSettings, idx: np.ndarray | None = None,
             purpose: Any = None, stage4: bool | str = True) -> tuple[list[list[int]], list[float]]:
        retriever = self.retriever(settings, purpose)
        idx = np.arange(len(self.queries)) if idx is None else idx
        out, times = [], []
        for i in idx.tolist():
            t0 = perf()
            found = retriever.run(self.queries[i], TOP_K, causal_direction=self.directions[i],
                                  query_text=self.texts[i], stage4=stage4).found
            times.append((perf() - t0) * 1e3)
            out.append([f.record.seq for f in found])
        return out, times

    # -- cached pools for the replay --
    def build_pools(self, idx: np.ndarray) -> None:
        """Candidate pools (at the largest candidate counts) of queries `idx`; the others stay None."""
        s = self.settings
        retriever = self.retriever()
        pools: list[Pool | None] = [None] * len(self.queries)
        self._replay_cache = {}
        t0 = perf()
        for i in idx.tolist():
            q, d = self.queries[i], self.directions[i]
            lists = {
                SPLADE: [x for x, _ in self.indexes.search(SPLADE, q[SPLADE], MAX_SPARSE, s.sparse_max_df,
                                                           **s.bm25.get(SPLADE, {}))],
                SPARSE: [x for x, _ in self.indexes.search(SPARSE, q[SPARSE], MAX_SPARSE, s.sparse_max_df,
                                                           **s.bm25.get(SPARSE, {}))],
                SEMANTIC: [x for x, _ in self.indexes.search(SEMANTIC, q[SEMANTIC], MAX_DENSE)],
            }
            cands: dict[int, None] = {}
            for space in (SPLADE, SPARSE, SEMANTIC):  # the Retriever's order
                for x in lists[space]:
                    cands.setdefault(x)
            seqs = list(cands)
            fps = self.store.fingerprints(seqs)
            scores = retriever.space_scores(q, fps, d)
            big = 10**6
            source_rank = {}
            for space, hits in lists.items():
                pos = {x: i for i, x in enumerate(hits)}
                source_rank[space] = np.array([pos.get(x, big) for x in seqs])
            pools[i] = Pool(np.array(seqs, dtype=np.int64), source_rank,
                            {k: np.asarray(v, dtype=np.float64) for k, v in scores.items()})
        self.pools = pools
        self.pool_s = perf() - t0

    def replay(self, s: RetrievalSettings, idx: np.ndarray) -> np.ndarray:
        """Found ranks of the relevant documents under `s`, for queries `idx` (stages 3-5 as Retriever.rank)."""
        out = np.zeros(len(idx), dtype=np.int64)
        cache = self._replay_cache.setdefault((s.sparse_candidates, s.dense_candidates), {})
        for row, i in enumerate(idx.tolist()):
            p = self.pools[i]
            if i not in cache:
                keep = ((p.source_rank[SPLADE] < s.sparse_candidates) | (p.source_rank[SPARSE] < s.sparse_candidates)
                        | (p.source_rank[SEMANTIC] < s.dense_candidates))
                sel = np.flatnonzero(keep)
                scores = {k: v[sel] for k, v in p.scores.items()}
                cache[i] = (sel, scores, {k: ranks(v) for k, v in scores.items()})
            sel, scores, space_ranks = cache[i]
            if not len(sel):
                continue
            fused = fuse(scores, s.weights_for(self.texts[i]), s.rrf_k, s.score_weights, space_ranks)
            order, _ = rerank(fused, scores[LATE], max(s.rerank_head, TOP_K), s.rerank_weight)
            top = p.seqs[sel[order[:TOP_K]]].tolist()
            out[row] = rank_in(top, int(self.relevant[i]))
        return out

    def pool_recall(self, s: RetrievalSettings) -> float:
        hits = total = 0
        for i, p in enumerate(self.pools):
            if p is None:
                continue
            total += 1
            keep = ((p.source_rank[SPLADE] < s.sparse_candidates) | (p.source_rank[SPARSE] < s.sparse_candidates)
                    | (p.source_rank[SEMANTIC] < s.dense_candidates))
            hits += int(int(self.relevant[i]) in set(p.seqs[keep].tolist()))
        return hits / max(total, 1)


def rrf_lists(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]], k: float = 60.0) -> list[list[int]]:
    out = []
    for la, lb in zip(a, b):
        score: dict[int, float] = {}
        for lst in (la, lb):
            for r, x in enumerate(lst, 1):
                score[x] = score.get(x, 0.0) + 1.0 / (k + r)
        out.append([x for x, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))][:TOP_K])
    return out


# --- tuning --------------------------------------------------------------------------------------------------------

def tune_bm25(benches: list[Bench], space: int, log: Callable[[str], None]) -> dict[str, float]:
    best, best_obj = None, -1.0
    for k1 in (0.6, 0.9, 1.2, 1.5, 2.0):
        for b in (0.3, 0.5, 0.75, 0.9):
            obj = float(np.mean([objective(bn.ranks_of_idx(bn.lexical(space, k1, b, idx=bn.halves["tune"]),
                                                           bn.halves["tune"])) for bn in benches]))
            if obj > best_obj + 1e-9:
                best, best_obj = {"k1": k1, "b": b}, obj
    log(f"   E{space} BM25 tuned: {best} (tune objective {best_obj:.4f})")
    return best


def _ranks_of_idx(self: Bench, lists: Sequence[Sequence[int]], idx: np.ndarray) -> np.ndarray:
    return np.array([rank_in(found, int(self.relevant[i])) for i, found in zip(idx.tolist(), lists)])


Bench.ranks_of_idx = _ranks_of_idx  # type: ignore[attr-defined]


def knobs(s: RetrievalSettings) -> list[tuple[str, list[Any], Callable[[RetrievalSettings, Any], RetrievalSettings]]]:
    def weight(space: int) -> Callable[[RetrievalSettings, Any], RetrievalSettings]:
        return lambda st, v: dataclasses.replace(st, space_weights={**st.space_weights, space: v})

    def score_w(space: int) -> Callable[[RetrievalSettings, Any], RetrievalSettings]:
        return lambda st, v: dataclasses.replace(st, score_weights={**st.score_weights, space: v})

    def kind(label: str, space: int) -> Callable[[RetrievalSettings, Any], RetrievalSettings]:
        def apply(st: RetrievalSettings, v: Any) -> RetrievalSettings:
            kinds = {k: dict(m) for k, m in st.query_kinds.items()}
            kinds.setdefault(label, {})[space] = v
            return dataclasses.replace(st, query_kinds=kinds)
        return apply

    out: list = [
        ("rrf_k", [2.0, 5.0, 10.0, 20.0, 40.0, 60.0], lambda st, v: dataclasses.replace(st, rrf_k=v)),
        ("rerank_weight", [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], lambda st, v: dataclasses.replace(st, rerank_weight=v)),
        ("score E6", [0.0, 0.1, 0.2, 0.4, 0.7, 1.0], score_w(SPARSE)),
        ("score E1", [0.0, 0.1, 0.2, 0.4, 0.7, 1.0], score_w(SEMANTIC)),
    ]
    for space in (1, 5, 6, 7, 8, 9, 10, 11, 12, 13):
        out.append((f"w E{space}", [0.0, 0.25, 0.5, 1.0, 2.0], weight(space)))
    for label in ("code", "question", "keyword"):
        for space in (1, 6):
            out.append((f"{label}×E{space}", [0.5, 1.0, 2.0], kind(label, space)))
    return out


def coordinate_ascent(benches: list[Bench], start: RetrievalSettings, log: Callable[[str], None],
                      passes: int = 2) -> tuple[RetrievalSettings, float, list[dict]]:
    def score(s: RetrievalSettings) -> float:
        return float(np.mean([objective(bn.replay(s, bn.halves["tune"])) for bn in benches]))

    current, best = start, score(start)
    trail = [{"step": "start", "objective": round(best, 4)}]
    log(f"   tune start objective {best:.4f}")
    for p in range(passes):
        improved = False
        for name, values, apply in knobs(current):
            results = [(v, score(apply(current, v))) for v in values]
            v, obj = max(results, key=lambda t: t[1])
            if obj > best + 0.001:  # an improvement worth a knob's change
                current, best, improved = apply(current, v), obj, True
                trail.append({"step": f"pass {p + 1}: {name} = {v}", "objective": round(obj, 4)})
                log(f"   {name} = {v}: {obj:.4f}")
        if not improved:
            break
    return current, best, trail


def settings_dict(s: RetrievalSettings) -> dict:
    d = dataclasses.asdict(s)
    return json_safe(d)


def settings_from_dict(d: dict) -> RetrievalSettings:
    def by_space(m: dict) -> dict:
        return {int(k): v for k, v in m.items()}

    return RetrievalSettings(**{**d, "space_weights": by_space(d["space_weights"]), "bm25": by_space(d["bm25"]),
                                "score_weights": by_space(d["score_weights"]),
                                "query_kinds": {k: by_space(v) for k, v in d["query_kinds"].items()},
                                "while_stale": {int(sp): {part: by_space(w) for part, w in profile.items()}
                                                for sp, profile in d.get("while_stale", {}).items()}})


def json_safe(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


# --- main ----------------------------------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", default="code,prose")
    ap.add_argument("--tune", action="store_true", help="tune BM25 and the fusion on the tune halves")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--check", type=int, default=200, help="queries on which the replay is checked against run()")
    ap.add_argument("--settings", help="a results JSON whose tuning.chosen settings to evaluate (no tuning)")
    ap.add_argument("--name", default="retrieval_corpora")
    ap.add_argument("--stage4", action="store_true",
                    help="also run the full pipeline with a north star (stage 4 on): recall with and without it, "
                         "on all queries and on those whose relevant document is aligned with the star")
    ap.add_argument("--stage4-only", type=int, metavar="N",
                    help="only the full pipeline with and without stage 4, on N queries of each corpus's test half "
                         "(no baselines, no tuning pools: minutes instead of most of an hour)")
    ap.add_argument("--stored-fp32", action="store_true",
                    help="with CONTEXTGRAPH_INT8=1: the documents' fingerprints from the fp32 graph, the queries' "
                         "from the int8 one (a store filled before the switch)")
    args = ap.parse_args(argv)

    def log(m: str) -> None:
        print(m, flush=True)

    import yaml

    from contextgraph.embedders.pipeline import build_pipeline

    started = perf()
    settings_env = bench_settings(tempfile.mkdtemp(prefix="cg-corpora-"))
    pipeline = build_pipeline(settings_env)
    constitution = yaml.safe_load((Path(__file__).resolve().parents[1] / "constitution.yaml").read_text())
    base = RetrievalSettings.from_constitution(constitution)
    benches = [Bench(name, pipeline, base, log, args.stored_fp32) for name in args.corpora.split(",")]
    results: dict[str, Any] = {"corpora": {}, "constitution_settings": settings_dict(base)}
    if args.stage4_only:
        for bn in benches:
            view = bn.north_star(constitution, log)
            idx = bn.halves["test"][: args.stage4_only]
            plain, plain_ms = bn.full(base, idx)
            with_s4, s4_ms = bn.full(base, idx, purpose=view)
            r_plain = np.array([rank_in(f, int(bn.relevant[i])) for f, i in zip(plain, idx.tolist())])
            r_s4 = np.array([rank_in(f, int(bn.relevant[i])) for f, i in zip(with_s4, idx.tolist())])
            on = bn.doc_alignment[idx] >= view.threshold
            results["corpora"][bn.name] = {
                **bn.star_info, "queries": len(idx), "on_theme_queries": int(on.sum()),
                "without_s4": metrics(r_plain), "with_s4": metrics(r_s4),
                "with_s4_filter": metrics(np.array([rank_in(f, int(bn.relevant[i])) for f, i in zip(
                    bn.full(base, idx, purpose=view, stage4="filter")[0], idx.tolist())])),
                "recall@10_on_theme": {"without_s4": metrics(r_plain[on])["recall@10"] if on.any() else None,
                                       "with_s4": metrics(r_s4[on])["recall@10"] if on.any() else None},
                "retriever_ms": {"without_s4": summarize(plain_ms), "with_s4": summarize(s4_ms)}}
            log(f"[{bn.name}] {results['corpora'][bn.name]}")
            bn.close()
        write_result(args.name, results)
        return 0

    chosen = base
    if args.settings:
        import json

        chosen = settings_from_dict(json.loads(Path(args.settings).read_text())["tuning"]["chosen"])
        results["settings_from"] = args.settings
    if args.tune:
        bm25 = {SPARSE: tune_bm25(benches, SPARSE, log), SPLADE: tune_bm25(benches, SPLADE, log)}
        chosen = dataclasses.replace(base, bm25=bm25)
    for bn in benches:
        bn.settings = chosen
        bn.build_pools(bn.halves["tune"])
        log(f"[{bn.name}] pools for the {len(bn.halves['tune'])} tune queries in {bn.pool_s:.0f} s")
    if args.tune:
        start = dataclasses.replace(chosen, sparse_candidates=MAX_SPARSE // 2, dense_candidates=MAX_DENSE // 2)
        chosen, obj, trail = coordinate_ascent(benches, start, log, passes=args.passes)
        # candidate counts: the cheapest within 0.002 of the best
        best_obj = obj
        for sk, dk in ((25, 25), (30, 30), (40, 40), (50, 50), (75, 75), (100, 100)):
            s = dataclasses.replace(chosen, sparse_candidates=sk, dense_candidates=dk)
            o = float(np.mean([objective(bn.replay(s, bn.halves["tune"])) for bn in benches]))
            trail.append({"step": f"candidates {sk}/{dk}", "objective": round(o, 4)})
            if o >= best_obj - 0.002:
                chosen = s
                break
        results["tuning"] = {"trail": trail, "chosen": settings_dict(chosen)}
        log(f"   chosen: {settings_dict(chosen)}")

    for bn in benches:
        r: dict[str, Any] = {"documents": len(bn.data.items), "queries": len(bn.queries)}
        e6 = chosen.bm25.get(SPARSE, {"k1": 1.2, "b": 0.75})
        lists = {
            "bm25": bn.lexical(SPARSE, e6["k1"], e6["b"]),
            "e1": bn.e1_top(),
        }
        lists["rrf"] = rrf_lists(bn.lexical(SPARSE, e6["k1"], e6["b"], k=100), bn.e1_top(100))
        try:
            lists["bm25s"] = bn.bm25s_top()
        except ImportError:
            pass
        full_lists, times = bn.full(chosen)
        lists["full"] = full_lists
        if args.stage4:
            view = bn.north_star(constitution, log)
            lists["full_s4"], s4_times = bn.full(chosen, purpose=view)
        found = {k: bn.ranks_of(v) for k, v in lists.items()}
        if args.stage4:
            on_theme = np.flatnonzero(bn.doc_alignment >= view.threshold)  # query i's relevant doc is doc i
            r["stage4"] = {**bn.star_info, "retriever_ms_s4": summarize(s4_times),
                           "recall@10_all": {k: metrics(found[k])["recall@10"] for k in ("full", "full_s4")},
                           "on_theme_queries": len(on_theme),
                           "recall@10_on_theme": {k: metrics(found[k][on_theme])["recall@10"] if len(on_theme)
                                                  else None for k in ("full", "full_s4")}}
            log(f"[{bn.name}] stage 4: {r['stage4']}")
        check = bn.halves["tune"][: args.check]
        replay_ranks = bn.replay(chosen, check)
        # the replay is stages 3-5 without the head re-scorer (its features need the stored term buckets): it is
        # checked against run() with the re-scorer off, on the same queries
        fused_only = dataclasses.replace(chosen, head_rescorer=False)
        run_ranks = bn.ranks_of(bn.full(fused_only, check)[0], check) if chosen.head_rescorer else found["full"][check]
        r["replay_agrees_with_run"] = round(float(np.mean(replay_ranks == run_ranks)), 4)
        r["pool_recall_tune"] = round(bn.pool_recall(chosen), 4)
        r["retriever_ms"] = summarize(times)
        r["systems"] = {k: {h: metrics(v[idx]) for h, idx in bn.halves.items()} for k, v in found.items()}
        test = bn.halves["test"]
        r["test_full_minus"] = {k: bootstrap(found[k][test], found["full"][test]) for k in found if k != "full"}
        results["corpora"][bn.name] = r
        bn.close()
    results["wall_s"] = round(perf() - started, 1)
    report(results)
    write_result(args.name, results)
    return 0


def report(results: dict[str, Any]) -> None:
    for name, r in results["corpora"].items():
        print(f"\n[{name}] {r['documents']} docs; pool recall (tune) {r['pool_recall_tune']}; replay agrees "
              f"{r['replay_agrees_with_run']}; Retriever.run median {r['retriever_ms']['median']:.1f} ms "
              f"p95 {r['retriever_ms']['p95']:.1f}")
        print(f"  {'system':<8}" + "".join(f"{h + ' ' + m:>16}" for h in ("tune", "test")
                                           for m in ("nDCG", "R@10", "MRR")))
        for sys_name, m in r["systems"].items():
            print(f"  {sys_name:<8}" + "".join(f"{m[h][k]:>16.4f}" for h in ("tune", "test")
                                              for k in ("ndcg@10", "recall@10", "mrr@10")))
        for base, d in r["test_full_minus"].items():
            print(f"  full − {base:<6} test: nDCG {d['ndcg@10']}  R@10 {d['recall@10']}  MRR {d['mrr@10']}")


if __name__ == "__main__":
    raise SystemExit(main())
