"""Threads whose work nobody waits for run at a lower CPU priority (docs/engine.md#after-the-answer).

The work after an answer (the UTL, the engine's record, listeners), the store model's refits and the other
background rewrites used to run at the priority of the requests. On two cores they took CPU from the next
call's forward pass: back-to-back stores waited for the refits of the stores before them. Linux schedules each
thread by its own nice value, so a background thread lowers its own (`lower_this_thread`, first thing it does)
and the scheduler prefers the threads that answer; the background work runs in the gaps, and its queue's bound
(services.runtime.after_answer) makes callers wait for it when it falls too far behind.

A thread cannot raise its priority again (that needs privileges), and threads it starts inherit it: so pools
that serve requests must never be grown from a lowered thread (storage.parallel_reads reads in the caller
instead, `in_background()`). Elsewhere than Linux the priority is left as it is (a process-wide call there
would lower the requests too).
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
    0 leaves it as it is)."""
    if getattr(_local, "background", False):
        return
    _local.background = True
    steps = int(constitution().get("concurrency.background_nice"))
    if steps <= 0 or not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + steps))
    except OSError:  # a sandbox without setpriority: the work still runs, at the requests' priority
        pass


def in_background() -> bool:
    """Whether the calling thread has lowered itself."""
    return bool(getattr(_local, "background", False))


def start_thread(target: Callable[..., Any], *args: Any, name: str) -> threading.Thread:
    """A started daemon thread that lowers itself, then runs target(*args)."""

    def run() -> None:
        lower_this_thread()
        target(*args)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
