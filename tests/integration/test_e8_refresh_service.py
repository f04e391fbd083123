"""E8 follows the edges through the services (issue 11.7): store_memory's automatic and link_to edges, and a
merge, queue the memories at both ends; the background refresh rewrites their E8 from the current neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from contextgraph import log
from contextgraph.app import build_services
from contextgraph.constitution import constitution
from contextgraph.embedders.e08_graph import mix
from contextgraph.services.memory.memory_payloads import NewMemory

pytestmark = pytest.mark.anyio


async def _settled(handle) -> None:
    """Until the refresh queue is empty: each drain puts the next batch behind what is queued on the writer."""
    for _ in range(50):
        await handle.writer.submit(lambda: None)
        if not handle.e8.pending:
            return
    raise AssertionError("the E8 refresh queue did not drain")


def _e8_e1(handle, seq: int) -> tuple[np.ndarray, np.ndarray]:
    (fp,) = handle.store.fingerprints([seq], spaces=[1, 8])
    return np.asarray(fp[8]), np.asarray(fp[1])


async def test_link_to_refreshes_the_linked_memory_and_raises_their_e8_similarity(settings):
    services = build_services(settings, constitution(), log.LogRing(100))
    services.storage.open()
    try:
        handle = services.storage
        a = (await services.memory.store(NewMemory("The staging database runs PostgreSQL 16 on two replicas.",
                                                   "a fact about infrastructure"))).record
        await _settled(handle)
        a_before, a_e1 = _e8_e1(handle, a.seq)
        np.testing.assert_allclose(a_before, mix(a_e1, []), atol=1e-6)  # no neighbour yet: E8 is its E1
        b = (await services.memory.store(NewMemory("Our team's Friday lunch is usually ramen near the office.",
                                                   "an unrelated fact", link_to=(a.id,)))).record
        await _settled(handle)
        a_after, _ = _e8_e1(handle, a.seq)
        b_e8, b_e1 = _e8_e1(handle, b.seq)
        assert not np.allclose(a_after, a_before)  # the link changed a's neighbourhood: its E8 followed
        assert float(a_after @ b_e8) > float(a_before @ mix(b_e1, [])) + 0.2
        assert handle.e8.refreshed >= 1
        # merging b into a third memory moves the edge to the merged one: a is refreshed again
        c = (await services.memory.store(NewMemory("Friday lunch is usually ramen close to the office.",
                                                   "a near duplicate"))).record
        merged = await services.curation.merge([b.id, c.id], target_name="lunch", strategy="keep_highest",
                                               rationale="duplicates", force=False)
        await _settled(handle)
        merged_record = handle.store.get(merged["merged_id"])
        assert merged_record is not None
        m_e8, m_e1 = _e8_e1(handle, merged_record.seq)
        assert not np.allclose(m_e8, mix(m_e1, []))  # the merged memory inherited a's edge: its E8 mixes a in
    finally:
        services.close()
