"""The collector during start-up (docs/budgets.md#cpu-budgets): no collections while the server imports and builds
what it needs, and what that made set aside in the permanent generation afterwards. The imports (the MCP SDK's
models, numpy, the services) allocate objects that live as long as the process; the collector ran ~290 times over
them, ~130 ms of a ~1 s start on two loaded cores, freeing nothing. Perception's heap settling collects
everything, these included, once the model has loaded."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def start_up_heap() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
