"""A store whose E7 was made by another encoder is re-embedded in the background once the model loads
(services.runtime.space_refresh): every memory's E7 becomes the loaded encoder's, searches leave E7 out until
then, progress is reported and saved, and a rewrite that stopped resumes where it stopped."""

from __future__ import annotations

import numpy as np
import pytest

from contextgraph import log
from contextgraph.app import build_services
from contextgraph.constitution import constitution
from contextgraph.services.memory.memory_payloads import NewMemory
from contextgraph.services.runtime import perception
from contextgraph.services.runtime.space_refresh import DOC, SpaceRefresh

pytestmark = pytest.mark.anyio

NOTES = [
    ("def retry(fn, tries=3):\n    for _ in range(tries):\n        try:\n            return fn()\n"
     "        except OSError:\n            pass", "code"),
    ("The deploy script tags the release before it uploads the wheel.", "text"),
    ("def slug(title):\n    return re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')", "code"),
    ("Staging runs PostgreSQL 16 with two read replicas.", "text"),
    ("class LruCache:\n    def __init__(self, size):\n        self.size = size\n        self.items = {}", "code"),
]


async def _store_all(services) -> list:
    stored = []
    for text, modality in NOTES:
        stored.append((await services.memory.store(NewMemory(text, "a note for the test", modality=modality))).record)
    await services.memory.settled()
    return stored


def _e7(handle, records) -> list[np.ndarray]:
    return [np.asarray(fp[7]) for fp in handle.store.fingerprints([r.seq for r in records], spaces=[7])]


async def test_a_store_made_with_the_shared_e7_is_re_embedded_with_the_code_model(tmp_path, make_settings):
    home = tmp_path / "home"
    old = build_services(make_settings(home, CONTEXTGRAPH_CODE_MODEL="shared"), constitution(), log.LogRing(100))
    old.storage.open()
    try:
        records = await _store_all(old)
        before = _e7(old.storage, records)
        assert old.storage.store.get_document(DOC)["spaces"]["7"] == (await old.perception.pipeline()).method(7)
    finally:
        old.close()

    services = build_services(make_settings(home), constitution(), log.LogRing(100))
    services.storage.open()
    try:
        pipeline = await services.perception.pipeline()  # the load starts the rewrite
        handle = services.storage
        handle.space_refresh.join(120)
        expected = pipeline.embed_space(7, [t for t, _ in NOTES], [m for _, m in NOTES])
        for now, was, want in zip(_e7(handle, records), before, expected):
            np.testing.assert_allclose(now, want, atol=1e-5)
            assert not np.allclose(now, was, atol=1e-3)
        assert handle.store.get_document(DOC)["spaces"]["7"] == pipeline.method(7)
        assert handle.space_refresh.stale == frozenset()
        assert handle.space_refresh.report()["E7"] == {"method": pipeline.method(7), "done": 5, "total": 5,
                                                       "state": "done"}
        found = await services.memory.search("retry a call that fails", top_k=3, min_similarity=0.0,
                                             modality=None, breakdown=False)
        assert found.retrieval.found and found.retrieval.weights.get(7, 0) > 0  # E7 votes again
    finally:
        services.close()


class _StopsAfter:
    """The code pipeline, failing after `n` batches (a crash mid-rewrite), counting the texts it embedded."""

    def __init__(self, pipeline, n: int) -> None:
        self.pipeline, self.n, self.texts = pipeline, n, 0

    def method(self, space: int) -> str:
        return self.pipeline.method(space)

    def embed_space(self, space, texts, modalities):
        if self.n == 0:
            raise RuntimeError("killed")
        self.n -= 1
        self.texts += len(texts)
        return self.pipeline.embed_space(space, texts, modalities)


async def test_searches_leave_a_stale_space_out_and_a_stopped_rewrite_resumes(tmp_path, make_settings):
    services = build_services(make_settings(tmp_path / "home", CONTEXTGRAPH_CODE_MODEL="shared"), constitution(),
                              log.LogRing(100))
    services.storage.open()
    try:
        await services.perception.pipeline()
        records = await _store_all(services)
        handle = services.storage
        code_pipeline = perception.build_pipeline(make_settings(tmp_path / "other"))  # the shipped code model

        first = _StopsAfter(code_pipeline, n=1)
        handle.space_refresh = SpaceRefresh(batch=2, duty=1.0)
        handle.space_refresh.start(handle.store, handle.writer, first)
        handle.space_refresh.join(60)
        assert first.texts == 2 and handle.space_refresh.stale == frozenset({7})
        saved = handle.store.get_document(DOC)["rewriting"]["7"]
        assert saved["done"] == 2 and saved["through_seq"] == records[1].seq

        found = await services.memory.search("retry a call that fails", top_k=3, min_similarity=0.0,
                                             modality=None, breakdown=False)
        assert found.retrieval.found and 7 not in found.retrieval.weights  # stale: E7 does not vote
        # and the rest vote with the weights fitted without E7 (retrieval.while_stale), not E7's set minus E7
        profile = constitution()["retrieval"]["while_stale"][7]["space_weights"]
        assert found.retrieval.weights[1] == pytest.approx(profile[1])

        second = _StopsAfter(code_pipeline, n=10)
        handle.space_refresh = SpaceRefresh(batch=2, duty=1.0)
        handle.space_refresh.start(handle.store, handle.writer, second)
        handle.space_refresh.join(60)
        assert second.texts == 3  # only the memories after the saved point
        assert handle.space_refresh.stale == frozenset()
        expected = code_pipeline.embed_space(7, [t for t, _ in NOTES], [m for _, m in NOTES])
        for now, want in zip(_e7(handle, records), expected):
            np.testing.assert_allclose(now, want, atol=1e-5)
        doc = handle.store.get_document(DOC)
        assert doc["spaces"]["7"] == code_pipeline.method(7) and "7" not in doc.get("rewriting", {})
    finally:
        services.close()


async def test_a_process_told_not_to_rewrite_waits_for_the_one_that_does(tmp_path, make_settings):
    """Pool workers but the first (Settings.space_rewrites false): the changed space is stale for them too, they
    embed nothing, and they stop leaving it out once the rewriting process has recorded it."""
    services = build_services(make_settings(tmp_path / "home", CONTEXTGRAPH_CODE_MODEL="shared"), constitution(),
                              log.LogRing(100))
    services.storage.open()
    try:
        await services.perception.pipeline()
        await _store_all(services)
        handle = services.storage
        code_pipeline = perception.build_pipeline(make_settings(tmp_path / "other"))
        waiting, counted = SpaceRefresh(recheck_s=0.0), _StopsAfter(code_pipeline, n=10)
        waiting.start(handle.store, handle.writer, counted, rewrite=False)
        waiting.join(5)
        assert waiting.stale == frozenset({7}) and counted.texts == 0 and waiting.check(handle.store) == {7}
        assert "rewriting" not in (handle.store.get_document(DOC) or {})

        rewriting = SpaceRefresh(batch=2, duty=1.0)
        rewriting.start(handle.store, handle.writer, code_pipeline)
        rewriting.join(60)
        assert rewriting.stale == frozenset()
        assert waiting.check(handle.store) == frozenset()  # it read the other's record
    finally:
        services.close()
