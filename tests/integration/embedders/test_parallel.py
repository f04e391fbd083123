"""The pool of pipelines in worker processes: the same fingerprints and triples as one pipeline, in order, and a
bad draft refused before any worker sees the batch."""

from __future__ import annotations

import numpy as np
import pytest

from contextgraph.embedders.parallel import MIN_SHARD, PipelinePool, PipelineSpec
from contextgraph.embedders.pipeline import Draft
from contextgraph.errors import InvalidParams
from contextgraph.fingerprint import Sparse


def same_vector(a, b) -> bool:
    if isinstance(a, Sparse):
        return np.array_equal(a.indices, b.indices) and np.allclose(a.values, b.values, atol=1e-6)
    return a.shape == b.shape and np.allclose(a, b, atol=1e-6)


@pytest.fixture(scope="module")
def pool(model_cache):
    with PipelinePool(PipelineSpec(cache_dir=str(model_cache), runtime="onnx"), 2, shard_size=MIN_SHARD) as pool:
        yield pool.start()


def test_pool_fingerprints_equal_one_pipelines(pool, pipeline, sample_texts):
    texts = [f"{text} (copy {i})" for i in range(4) for text in sample_texts]  # several shards
    drafts = [Draft(t, timestamp=1.76e9 + 60 * i, session_position=i, global_position=i) for i, t in enumerate(texts)]
    assert len(pool.shards(len(drafts))) > 2  # more shards than workers: a worker takes two
    expected, expected_triples = pipeline.embed_with_triples(drafts)
    got, triples = pool.embed_with_triples(drafts)
    assert len(got) == len(expected)
    for ours, theirs in zip(got, expected, strict=True):
        assert ours.keys() == theirs.keys()
        assert all(same_vector(ours[s], theirs[s]) for s in theirs)
    assert [len(t) for t in triples] == [len(t) for t in expected_triples]
    timings = pool.last_timings
    assert timings is not None and timings.items == len(drafts) and set(timings.embedder_ms) == set(range(1, 14))
    assert pool.last_wall_ms is not None and pool.last_wall_ms > 0


def test_pool_refuses_a_bad_draft_before_dispatch(pool):
    with pytest.raises(InvalidParams) as raised:
        pool.embed([Draft("fine"), Draft("bad modality", modality="smell")])
    assert raised.value.data["field"] == "modality"


def test_shards_cover_the_batch_in_order():
    pool = PipelinePool.__new__(PipelinePool)  # shards() reads only these two fields
    pool.workers, pool.shard_size = 4, None
    for count in (0, 1, 15, 16, 17, 100, 1000, 4096):
        shards = pool.shards(count)
        assert [i for r in shards for i in r] == list(range(count))
        assert all(len(r) >= MIN_SHARD for r in shards[:-1])
        assert len(shards) <= max(1, 2 * pool.workers)


def test_a_worker_that_cannot_load_its_model_fails_the_start(tmp_path, model_cache):
    from concurrent.futures.process import BrokenProcessPool

    spec = PipelineSpec(cache_dir=str(model_cache), model_dir=str(tmp_path), runtime="onnx")  # no model there
    with PipelinePool(spec, 1) as pool, pytest.raises(BrokenProcessPool):
        pool.start()


def test_a_start_that_outlasts_its_deadline_fails_rather_than_waits_forever(model_cache, monkeypatch):
    from concurrent.futures.process import BrokenProcessPool

    from contextgraph.embedders import parallel

    monkeypatch.setattr(parallel, "START_TIMEOUT_S", -1)  # already past: no worker can have answered
    with PipelinePool(PipelineSpec(cache_dir=str(model_cache), runtime="onnx"), 2) as pool, \
            pytest.raises(BrokenProcessPool, match="2 of 2 workers did not start"):
        pool.start()
