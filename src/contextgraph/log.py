"""Logging: structlog, JSON lines on stderr (stdout is the stdio wire), and an in-memory ring buffer that
get_system_logs reads. Every event reaches the ring at every level; stderr gets the configured level and up.
The ring keeps an exception's type and message; the traceback goes to stderr only, so no tool can hand it out."""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Iterable
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict

LEVELS: dict[str, int] = {"debug": 10, "info": 20, "warn": 30, "warning": 30, "error": 40, "critical": 50}


def level_name(name: str) -> str:
    """structlog says 'warning'; the tools' schemas say 'warn'."""
    return "warn" if name == "warning" else name


class LogRing:
    """The last N log entries, newest last. Appends come from any thread."""

    def __init__(self, size: int) -> None:
        self._entries: deque[dict[str, Any]] = deque(maxlen=size)
        self._lock = threading.Lock()

    def append(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._entries.append(entry)

    def query(self, level: str = "info", limit: int = 100, component: str = "all") -> list[dict[str, Any]]:
        """The newest `limit` entries at `level` or above (from `component` unless 'all'), oldest first."""
        floor = LEVELS[level]
        with self._lock:
            entries = list(self._entries)
        picked = [
            e
            for e in entries
            if LEVELS.get(e["level"], 0) >= floor and (component == "all" or e.get("component") == component)
        ]
        return picked[-limit:]

    def __len__(self) -> int:
        return len(self._entries)


class _RingWriter:
    def __init__(self, ring: LogRing) -> None:
        self.ring = ring

    def __call__(self, _logger: Any, method: str, event: EventDict) -> EventDict:
        entry = {k: v for k, v in event.items() if k not in ("exc_info", "stack_info")}
        entry["level"] = level_name(entry.get("level", method))
        exc = event.get("exc_info")
        if exc:
            if exc is True:
                exc = sys.exc_info()
            if isinstance(exc, BaseException):
                exc = (type(exc), exc, exc.__traceback__)
            if isinstance(exc, tuple) and exc[0] is not None:
                entry["error"] = f"{exc[0].__name__}: {exc[1]}"
        self.ring.append(entry)
        return event


class _DropBelow:
    def __init__(self, level: str) -> None:
        self.floor = LEVELS[level]

    def __call__(self, _logger: Any, method: str, event: EventDict) -> EventDict:
        if LEVELS.get(method, 20) < self.floor:
            raise structlog.DropEvent
        return event


def configure(level: str, ring: LogRing, stream: TextIO | None = None) -> None:
    """Configure structlog once for the process. `stream` defaults to the stderr current at each write."""
    processors: Iterable[Any] = (
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _RingWriter(ring),
        _DropBelow(level),
        structlog.processors.format_exc_info,
        structlog.processors.JSONRenderer(),
    )
    structlog.configure(
        processors=list(processors),
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS["debug"]),
        logger_factory=_StderrLoggerFactory(stream),
        cache_logger_on_first_use=False,
    )


class _StderrLoggerFactory:
    """Writes to `stream`, or to whatever sys.stderr is at write time (pytest swaps it). Each line is one write
    of the JSON and its newline (WriteLogger; PrintLogger's print() writes them apart): `serve --workers N`'s
    processes share one stderr, and two of them logging at once interleaved as `{…}{…}` then two newlines,
    which no reader of JSON lines can parse."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def __call__(self, *_args: Any) -> structlog.WriteLogger:
        return structlog.WriteLogger(self.stream or sys.stderr)


def get_logger(component: str) -> Any:
    """A lazy logger: safe at module level, it picks up configure() made later."""
    return structlog.get_logger(component=component)
