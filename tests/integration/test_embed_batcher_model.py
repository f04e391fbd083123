"""The embedding batcher on the real pipeline: fingerprints embedded in a batch with other calls' texts equal
those embedded alone (tests/unit/test_embed_batcher.py has the batcher's own behaviour on a fake pipeline)."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

from contextgraph.embedders.backbone import OnnxBackbone, default_model_dir
from contextgraph.embedders.pipeline import Draft, FingerprintPipeline
from contextgraph.fingerprint import SPACES, Sparse
from contextgraph.services.runtime.embed_batcher import EmbedBatcher

pytestmark = pytest.mark.anyio


async def wait_until(condition) -> None:
    with anyio.fail_after(30):
        while not condition():
            await anyio.sleep(0.005)


@pytest.fixture(scope="module")
def real_pipeline(model_cache) -> FingerprintPipeline:
    return FingerprintPipeline(OnnxBackbone(default_model_dir(), model_cache))


TEXTS = [
    "why did the deploy fail",
    "recursive function in python",
    "def load_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)",
    "The deploy failed because the database migration timed out after 30 seconds, so we rolled back the release "
    "and paged the on-call engineer, who raised the timeout to 120 seconds.",
    "ok",
    "Kuramoto oscillators synchronise once the coupling exceeds a critical value.",
]
# What batching may change, measured: token states of a padded forward row differ from an unpadded one by float
# rounding only, which reaches E12's per-token vectors (max |Δ| 1.8e-7 seen); everything pooled, hashed or
# thresholded came out identical. The tolerance leaves room for other BLAS kernels, not for a real difference.
DENSE_ATOL = 1e-5


async def test_batched_fingerprints_equal_embedding_alone(real_pipeline):
    def drafts(i: int):
        return lambda: [Draft(TEXTS[i], modality="code" if "def " in TEXTS[i] else "text", timestamp=1.76e9 + i,
                              session_position=i, global_position=100 + i)]

    alone = [real_pipeline.embed_with_triples(drafts(i)()) for i in range(len(TEXTS))]
    batcher = EmbedBatcher(anyio.CapacityLimiter(1))
    gate = anyio.CapacityLimiter(1)
    await gate.acquire()  # hold the forwards until every caller has queued: one batch for the first, one for the rest
    batcher._limiter = gate
    batched: dict[int, object] = {}

    async def caller(i: int) -> None:
        batched[i] = await batcher.embed(real_pipeline, drafts(i), with_triples=True)

    async with anyio.create_task_group() as tg:
        for i in range(len(TEXTS)):
            tg.start_soon(caller, i)
        await wait_until(lambda: batcher.waiting == len(TEXTS) - 1)
        gate.release()
    assert batcher.stats.batches == 2 and batcher.stats.largest == len(TEXTS) - 1
    for i, (solo_fps, solo_triples) in enumerate(alone):
        fps, triples = batched[i]  # type: ignore[misc]
        solo, got = solo_fps[0], fps[0]
        assert set(got) == {s.id for s in SPACES}
        for space in got:
            a, b = solo[space], got[space]
            if isinstance(a, Sparse):
                assert np.array_equal(a.indices, b.indices), (i, space)
                np.testing.assert_allclose(a.values, b.values, atol=DENSE_ATOL, err_msg=f"text {i} E{space}")
            elif np.asarray(a).dtype.kind in "bu":  # E9's bits: equal or not
                assert np.array_equal(a, b), (i, space)
            else:
                np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                                           atol=DENSE_ATOL, err_msg=f"text {i} E{space}")
        assert [(t.head, t.relation, t.tail) for t in triples[0]] == \
            [(t.head, t.relation, t.tail) for t in solo_triples[0]], i
        for t, u in zip(triples[0], solo_triples[0]):
            np.testing.assert_allclose(t.head_vector, u.head_vector, atol=DENSE_ATOL)
            np.testing.assert_allclose(t.tail_vector, u.tail_vector, atol=DENSE_ATOL)
