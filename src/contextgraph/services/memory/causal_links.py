"""Causal edges from a new memory's explicit link to a stored memory that states the link's other side whole
(docs/storage.md#explicit-causal-links).

The E5 half rule (AutoEdgeRules.causal) pairs two memories that both carry a cue: one's effect half against the
other's cause half. A note without a cue ("The migration timed out after 30 s.") has no halves of its own, so a
later note that names it as a cause ("The deploy failed because the migration timed out.") got no edge. Here the
new memory's cue clause is compared with such a memory's whole text: its E5 halves are then its sentence vector
(E1), pooled from the same transformer as the clause, so the cosine is the clause's own. The best match on each
side above `min_cosine`, with a `min_margin` over the memory's match with the opposite side, becomes the edge
(cause → effect); only a side that a cue named is matched, and a negated or hedged cue names none
(embedders/e05_causal.py).

A memory whose first sentence opens with a consequence cue and no cause of its own ("So the on-call raised the
timeout.") continues its session's previous memory: that memory is its cause."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from contextgraph.embedders.e05_causal import CausalSpans, negated
from contextgraph.storage.base import MemoryStore


@dataclass(frozen=True, slots=True)
class CausalMatch:
    direction: Literal["in", "out"]  # in: the other's effect is this memory's cause (other → new); out: reverse
    other: str
    similarity: float
    margin: float  # similarity − the reverse direction's
    cue: str = ""  # the explicit link's cue phrase, for an edge made by this module's rules (its evidence)


# "So …", "Therefore …", "As a result …" opening a memory: its cause is what came before it. Not "so far", "so
# much", "so-called", "so that" (a purpose), which open sentences without pointing back.
_OPENING = re.compile(
    r"\s*(?:and\s+)?(?P<cue>so(?![\s-]+(?:far|much|many|long|what|that|called)\b)(?!-)|therefore|hence|thus"
    r"|consequently|as\s+a\s+(?:result|consequence)|(?:that|this)\s+is\s+why|that['’]s\s+why)\b",
    re.IGNORECASE,
)
_FIRST_SENTENCE = re.compile(r"[.!?]+(?=\s|$)|\n")


def continuation_cue(text: str) -> str | None:
    """The consequence cue that opens `text`'s first sentence, unless that sentence is negated or hedged."""
    m = _OPENING.match(text)
    if m is None:
        return None
    end = _FIRST_SENTENCE.search(text, m.end())
    if negated(text, 0, end.start() if end is not None else len(text)):
        return None
    return " ".join(m.group("cue").lower().split())


@dataclass(frozen=True, slots=True)
class LinkRule:
    min_cosine: float
    min_margin: float
    continuation_window: float  # seconds: how far back a "So …" memory's session predecessor may lie
    continuation_weight: float

    @classmethod
    def of(cls, graph: Mapping[str, Any]) -> LinkRule:
        link = graph["causal_link"]
        return cls(float(link["min_cosine"]), float(link["min_margin"]), float(link["continuation_window_seconds"]),
                   float(link["continuation_weight"]))

    def clause_matches(self, spans: CausalSpans, cause: np.ndarray, effect: np.ndarray,
                       uncued: Iterable[tuple[str, np.ndarray]]) -> list[CausalMatch]:
        """The best cue-less memory (id, sentence vector) for each side of the new memory that a cue named: its
        cause clause against their whole text (they → new), its effect clause likewise (new → they)."""
        cue = ", ".join(spans.cues)
        best: dict[str, CausalMatch] = {}
        for other, whole in uncued:
            into, out = float(cause @ whole), float(effect @ whole)
            if into >= out and spans.cause:
                match = CausalMatch("in", other, into, into - out, cue)
            elif out > into and spans.effect:
                match = CausalMatch("out", other, out, out - into, cue)
            else:
                continue
            if match.similarity < self.min_cosine or match.margin < self.min_margin:
                continue
            held = best.get(match.direction)
            if held is None or match.similarity > held.similarity:
                best[match.direction] = match
        return list(best.values())

    def continuation(self, store: MemoryStore, content: str, session: str, now: float) -> list[CausalMatch]:
        """The Causal match from the session's previous memory (within the window) when `content` opens with a
        consequence cue; read only then (one walk of the recent memories, bounded by the window)."""
        cue = continuation_cue(content)
        if cue is None or not store.session_count(session):
            return []
        since = now - self.continuation_window
        previous = store.graph_read(lambda g: g.recent(1, since, session))
        if not previous:
            return []
        weight = self.continuation_weight
        return [CausalMatch("in", previous[0].id, weight, weight, cue)]
