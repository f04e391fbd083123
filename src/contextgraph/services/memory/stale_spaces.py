"""The fusion while a space is re-embedded across the store (services.runtime.space_refresh): its stored vectors and
the query's may come from different models, so it cannot vote (docs/retrieval.md#while-a-space-is-re-embedded).

Dropping its weights and keeping the rest as they were learned, as searches once did, left code search below E1
alone for the length of a re-embed once E7 became the space the fusion weighs most (40 minutes at 100K memories on
two cores; benchmarks/HISTORY.md, "While E7 is re-embedded"). A space may have weights of its own for that
time (`retrieval.while_stale`, fitted without it by benchmarks/learn_fusion.py on the same tune halves); any other
stale space is dropped as before. The head re-scorer is off meanwhile: its model reads every space's scores, the
stale one's among them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, TypeVar


class _Fusion(Protocol):
    """What this reads of search.RetrievalSettings (a frozen dataclass; search.py imports this module)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # a dataclass: dataclasses.replace makes the copy

    @property
    def space_weights(self) -> Mapping[int, float]: ...
    @property
    def score_weights(self) -> Mapping[int, float]: ...
    @property
    def while_stale(self) -> Mapping[int, Mapping[str, Mapping[int, float]]]: ...


Settings = TypeVar("Settings", bound=_Fusion)


def while_stale(settings: Settings, stale: frozenset[int]) -> Settings:
    """`settings` for a search while the spaces in `stale` are being re-embedded (itself when none is)."""
    if not stale:
        return settings
    space_weights, score_weights = settings.space_weights, settings.score_weights
    if len(stale) == 1 and (profile := settings.while_stale.get(next(iter(stale)))):
        space_weights = {**space_weights, **profile.get("space_weights", {})}
        score_weights = profile.get("score_weights", {})
    changes: dict[str, Any] = {
        "head_rescorer": False,
        "space_weights": {space: w for space, w in space_weights.items() if space not in stale},
        "score_weights": {space: w for space, w in score_weights.items() if space not in stale}}
    return dataclasses.replace(settings, **changes)
