"""The one injectable clock for time windows (the 30-day recovery window): tests move it instead of waiting."""

from __future__ import annotations

import time
from collections.abc import Callable


class Clock:
    def __init__(self, fn: Callable[[], float] = time.time) -> None:
        self.fn = fn

    def now(self) -> float:
        return self.fn()
