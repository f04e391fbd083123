"""RefitCache under concurrent callers (searches run in parallel, services.perception): callers that find no model
while another thread fits the first one wait for that model instead of fitting it again."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from contextgraph.services.engine.store_model import RefitCache


def test_concurrent_first_fits_run_once():
    cache = RefitCache("test")
    fits: list[int] = []
    started, release = threading.Event(), threading.Event()

    def first() -> dict[str, int]:
        fits.append(1)
        started.set()
        release.wait(30)  # hold the first fit until the other callers are asking too
        return {"model": len(fits)}

    def ask() -> dict[str, int]:
        return cache.get("model", 1, lambda stamp: stamp != 1, fit=lambda: {"model": -1}, background=False,
                         first=first, first_stamp=lambda m: 1)

    with ThreadPoolExecutor(6) as pool:
        leader = pool.submit(ask)
        assert started.wait(30)
        others = [pool.submit(ask) for _ in range(5)]
        release.set()
        models = [leader.result(30)] + [f.result(30) for f in others]
    assert fits == [1]
    assert all(m is models[0] for m in models)


def test_a_failed_first_fit_lets_the_next_caller_fit():
    cache = RefitCache("test")
    calls: list[str] = []

    def failing() -> dict[str, int]:
        calls.append("failed")
        raise RuntimeError("store closed")

    def working() -> dict[str, int]:
        calls.append("ok")
        return {"model": 1}

    assert cache.get("model", 1, lambda stamp: False, fit=failing, background=False) is None
    assert cache.get("model", 1, lambda stamp: False, fit=working, background=False) == {"model": 1}
    assert calls == ["failed", "ok"]
