"""What the caller of store_memory and search_graph waits for, and the cognitive work's share of it (D24,
docs/engine.md#after-the-answer): in process through `app.dispatcher.call`, on a copy of a filled store.

  --fill N --template DIR   fill DIR with N realistic memories (benchmarks/_workload.fill_store) and stop
  --template DIR            copy DIR to a temporary directory, then time --ops store_memory calls (new realistic
                            texts, with a rationale) and --ops search_graph calls (stdlib first sentences), each
                            from the dispatcher's call to its answer; then the time to settle what runs after
                            the answers (zero where nothing does). Twice: back to back, and spaced (the work of
                            the call before has run, untimed: an agent that thinks between calls). The cognitive
                            work's share: the UTL (store), the pulse score and the competition (search), timed
                            by wrapping them in place: what ran before the answer (cognitive_p50) and after it.

Alternate code versions run by run (PYTHONPATH) on the same template to compare them on a loaded machine.

Run:  .venv/bin/python benchmarks/bench_after_answer.py --fill 1000 --template /tmp/cg-1k
      PYTHONPATH=src .venv/bin/python benchmarks/bench_after_answer.py --template /tmp/cg-1k --ops 60
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workload import bench_settings, fill_store, function_pairs, open_services, percentile, realistic_texts


def fill(template: Path, n: int) -> None:
    services, pipeline = open_services(template)
    items = list(itertools.islice(realistic_texts(3), n))
    fill_store(services.storage, pipeline, items, start_time=time.time() - 60.0 * n)
    print(f"filled {template} with {services.storage.store.count()} memories")
    services.close()


_nesting = threading.local()  # how many timed calls the current thread is inside


def _timed(owner: Any, name: str, into: list[float], after: list[float]) -> None:
    """Wrap owner.name (sync) to add its seconds to `into`, or to `after` when it runs on the worker that follows
    the answers (services.runtime.after_answer's thread): the caller does not wait for that. A timed call made
    inside another (operation_pulse.score calls delta_sc.compute) is counted once, by the outer one."""
    inner = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        depth = getattr(_nesting, "depth", 0)
        _nesting.depth = depth + 1
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            _nesting.depth = depth
            if depth == 0:
                later = threading.current_thread().name.startswith("after-answer")
                (after if later else into).append(time.perf_counter() - started)

    setattr(owner, name, wrapper)


async def measure(template: Path, ops: int) -> dict[str, Any]:
    from contextgraph.app import build_app
    from contextgraph.services.runtime import operation_pulse

    home = Path(tempfile.mkdtemp(prefix="cg-after-answer-"))
    shutil.copytree(template, home, dirs_exist_ok=True)
    app = build_app(bench_settings(home))
    try:
        app.services.storage.open()
        await app.services.perception.pipeline()
        ctx = app.tool_context()
        cognitive: list[float] = []
        after: list[float] = []
        _timed(app.services.storage.delta_sc, "compute", cognitive, after)
        _timed(operation_pulse, "score", cognitive, after)
        _timed(app.services.workspace, "observe", cognitive, after)
        texts = itertools.islice(realistic_texts(11), 50_000, None)
        queries = [p.query for p in function_pairs()][:ops + 5]
        out: dict[str, Any] = {}
        calls = (("store_memory", lambda i: {"content": next(texts)[0], "rationale": "why it matters"}),
                 ("search_graph", lambda i: {"query": queries[i % len(queries)], "top_k": 10}))
        for tool, args in calls:
            for i in range(3):  # warm-up
                await app.dispatcher.call(tool, args(i), ctx)
            for spaced in (False, True):
                await _settle(app)
                waited, share = [], []
                after.clear()
                for i in range(ops):
                    if spaced:  # an agent that thinks between calls: the last call's work is done (not timed)
                        await _settle(app)
                    cognitive.clear()
                    started = time.perf_counter()
                    await app.dispatcher.call(tool, args(i), ctx)
                    waited.append((time.perf_counter() - started) * 1000)
                    share.append(sum(cognitive) * 1000)  # what ran before the answer (after it, it is not awaited)
                started = time.perf_counter()
                await _settle(app)
                out[f"{tool}{' spaced' if spaced else ''}"] = {
                    "p50": round(percentile(waited, 50), 1), "p95": round(percentile(waited, 95), 1),
                    "cognitive_p50": round(percentile(share, 50), 1),
                    "after_answer_ms_per_op": round(sum(after) * 1000 / ops, 1),
                    "settle_ms": round((time.perf_counter() - started) * 1000, 1)}
        return out
    finally:
        app.close()
        shutil.rmtree(home, ignore_errors=True)


async def _settle(app: Any) -> None:
    settled = getattr(app.services.memory, "settled", None)
    if settled is not None:
        await settled()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--template", required=True)
    parser.add_argument("--fill", type=int, default=0)
    parser.add_argument("--ops", type=int, default=60)
    args = parser.parse_args()
    template = Path(args.template)
    if args.fill:
        fill(template, args.fill)
        return
    print(json.dumps(anyio.run(measure, template, args.ops)))


if __name__ == "__main__":
    main()
