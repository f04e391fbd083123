"""temporary_scratchpad's store: per-session key/value notes kept in memory only, never persisted, bounded
in keys, key and value length, total characters per session, and number of sessions (least recently used
session pads are dropped first)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from contextgraph.errors import InvalidParams


@dataclass(frozen=True, slots=True)
class ScratchpadLimits:
    max_keys: int
    max_key_chars: int
    max_value_chars: int
    max_total_chars: int
    max_sessions: int

    @classmethod
    def from_constitution(cls, c) -> ScratchpadLimits:
        return cls(**{k: int(v) for k, v in c["scratchpad"].items()})


class Scratchpads:
    def __init__(self, limits: ScratchpadLimits) -> None:
        self.limits = limits
        self._pads: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def _pad(self, session: str) -> dict[str, str]:
        pad = self._pads.get(session)
        if pad is None:
            pad = self._pads[session] = {}
            while len(self._pads) > self.limits.max_sessions:
                self._pads.popitem(last=False)
        self._pads.move_to_end(session)
        return pad

    def write(self, session: str, key: str, value: str) -> dict[str, int]:
        lim = self.limits
        if len(key) > lim.max_key_chars:
            raise InvalidParams(f"key is {len(key)} characters; at most {lim.max_key_chars}", field="key",
                                max=lim.max_key_chars)
        if len(value) > lim.max_value_chars:
            raise InvalidParams(f"value is {len(value)} characters; at most {lim.max_value_chars}", field="value",
                                max=lim.max_value_chars)
        with self._lock:
            pad = self._pad(session)
            if key not in pad and len(pad) >= lim.max_keys:
                raise InvalidParams(
                    f"the scratchpad holds its maximum of {lim.max_keys} keys; clear it or overwrite a key",
                    field="key", max=lim.max_keys,
                )
            total = _chars(pad) - _entry_chars(key, pad.get(key)) + len(key) + len(value)
            if total > lim.max_total_chars:
                raise InvalidParams(
                    f"writing this would make the scratchpad {total} characters; at most {lim.max_total_chars}. "
                    "Clear keys you no longer need.",
                    field="value", max=lim.max_total_chars,
                )
            pad[key] = value
            return {"keys": len(pad), "chars": total}

    def read(self, session: str, key: str | None) -> dict[str, str]:
        """One key ({} when absent) or the whole pad."""
        with self._lock:
            pad = self._pad(session)
            if key is None:
                return dict(pad)
            return {key: pad[key]} if key in pad else {}

    def clear(self, session: str, key: str | None) -> int:
        """Remove one key or all keys; returns how many were removed."""
        with self._lock:
            pad = self._pad(session)
            if key is None:
                removed = len(pad)
                pad.clear()
                return removed
            return 1 if pad.pop(key, None) is not None else 0


def _entry_chars(key: str, value: str | None) -> int:
    return 0 if value is None else len(key) + len(value)


def _chars(pad: dict[str, str]) -> int:
    return sum(len(k) + len(v) for k, v in pad.items())
