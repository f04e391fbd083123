"""A second model's forward run beside the shared one (E7's code encoder, docs/spaces.md#e7-code).

A memory with the code model needs two forwards of its text. On CPU both run in ONNX Runtime, and one small
forward barely gains from a second intra-op thread (a ~50-token text: 6.5 ms on two threads, 7.0 on one): two
one-thread forwards at the same time take ~60 % of the two two-thread forwards one after the other (12.0 -> 7.6
ms for a ~50-token memory, a batch of 60 823 -> 635 ms; int8 graphs, 2026-11-27). So the pipeline hands the code
forward to this thread and runs the shared forward on its own meanwhile.

One worker thread, made on first use and again in a process forked after it (a forked child inherits the
executor's object but not its thread). Calls from several threads queue on the one worker, as they would on
the cores anyway. A thread that lowered its priority (contextgraph.background) runs the forward itself: the
worker it started would inherit its priority and slow every request's forward after it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from contextgraph.background import in_background

T = TypeVar("T")


class SideForward:
    def __init__(self, name: str = "side-forward") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pid = 0

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        if in_background():
            done: Future[T] = Future()
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to whoever asks for the result, as the worker would
                done.set_exception(exc)
            return done
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                self._executor = ThreadPoolExecutor(1, thread_name_prefix=self._name)
                self._pid = os.getpid()
            return self._executor.submit(fn)
