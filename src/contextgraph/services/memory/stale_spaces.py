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
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # search.py imports this module: the settings class only as a type here
    from contextgraph.services.memory.search import RetrievalSettings


def while_stale(settings: RetrievalSettings, stale: frozenset[int]) -> RetrievalSettings:
    """`settings` for a search while the spaces in `stale` are being re-embedded (itself when none is)."""
    if not stale:
        return settings
    space_weights, score_weights = settings.space_weights, settings.score_weights
    if len(stale) == 1 and (profile := settings.while_stale.get(next(iter(stale)))):
        space_weights = {**space_weights, **profile.get("space_weights", {})}
        score_weights = profile.get("score_weights", {})
    return dataclasses.replace(
        settings, head_rescorer=False,
        space_weights={space: w for space, w in space_weights.items() if space not in stale},
        score_weights={space: w for space, w in score_weights.items() if space not in stale})
