"""Threads whose work no caller waits for run at a lower CPU priority (docs/engine.md#after-the-answer).

The store model's and TransE's refits (a second of CPU at 1K memories, again at every 10 % of growth), the
re-embedding of a changed space, goal refreshes, the purpose recompute and Meta-UTL's escalation ran at the
priority of the requests. On two busy cores a refit took CPU from the next call's forward pass: back-to-back
stores waited for the refits of the stores before them. Linux schedules each thread by its own nice value, so
such a thread lowers its own (`start_thread`), and the scheduler prefers the threads that answer.

Not lowered: the after-answer worker (every tool but store_memory and search_graph waits for its queue, and a
full queue makes those wait too), the writer, the model loader and the request threads. A lowered thread cannot
raise its priority again (that needs privileges), and threads it starts inherit it; so a lowered thread never
grows a pool that serves requests (storage.parallel_reads reads in the caller instead), never waits on the
indexes' catch-up that requests take turns at (IndexSet), and never reopens a closed store (its writer would
run lowered). ONNX Runtime's intra-op threads were started by the loader: a re-embedding forward runs on them
at the requests' priority. The GIL is not scheduled by nice: a lowered thread running Python still delays the
others by up to its switch interval. Elsewhere than Linux the priority is left as it is (a process-wide call
there would lower the requests too).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from contextgraph.constitution import constitution

_local = threading.local()


def lower_this_thread() -> None:
    """Mark the calling thread as background and lower its priority by `concurrency.background_nice` steps (once;
    0, or a constitution without the key, leaves the priority as it is). Never raises: the work runs either way."""
    if getattr(_local, "background", False):
        return
    _local.background = True
    try:
        steps = int(constitution().get("concurrency.background_nice"))
    except (KeyError, TypeError, ValueError):  # an older constitution copy (CONTEXTGRAPH_CONSTITUTION)
        return
    if steps <= 0 or not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + steps))
    except OSError:  # a sandbox without setpriority: the work still runs, at the requests' priority
        pass


def in_background() -> bool:
    """Whether the calling thread does work no caller waits for (it lowered itself)."""
    return bool(getattr(_local, "background", False))


def start_thread(target: Callable[..., Any], *args: Any, name: str) -> threading.Thread:
    """A started daemon thread that lowers itself, then runs target(*args)."""

    def run() -> None:
        lower_this_thread()
        target(*args)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
