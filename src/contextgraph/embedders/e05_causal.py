"""E5 causal (asymmetric): a memory's cause and effect, each pooled from the shared forward's token states.

Causal cue phrases split a sentence into its two sides. Whether the left side is the cause or the effect depends
on the cue: "A leads to B" (cause first) versus "A because B" (effect first); a cue that opens a sentence takes
its sides from the clause after it ("Because B, A") or, for a consequence cue, from the sentence before ("A.
Therefore B"). A side is the mean of the states of the tokens inside its character spans; a side with no cue, or
no tokens, is the whole text's sentence vector, so a text without a cue has equal halves.

    vector = [cause / ‖cause‖ ; effect / ‖effect‖] / √2      (768-d for a 384-d model)

Similarity against a query, by the direction of the question (`query_direction`), crosses the halves (docs/spaces.md:
effect↔cause), so it is asymmetric: sim(A, B) ≠ sim(B, A) whenever A and B state different causes and effects.
    backward ("why did B happen?"): the query's cause half against each doc's effect half — a doc whose effect is
        what the query is about (or is the query's cause: one step further back) explains it;
    forward ("what happens if A?"): the query's effect half against each doc's cause half — a doc whose cause is
        what the query is about (or the query's effect: one step further on) follows from it;
    both (no direction asked): the like halves, max(cause·cause, effect·effect): a restatement of the same cause
        or effect; symmetric, and 1 for a memory against itself (novelty, binding and clusters compare so).
A query without a cue has both halves equal to its whole text, so in effect the whole question is compared with
the doc's effect (backward) or cause (forward) half. `restatement` gives the two like-half similarities apart.

Negation and hedges: a cue whose scope — its own two sides within the sentence, and the few words
just before it — holds a negation ("not", "n't", "never", "no longer", "neither", "nor", "without") or a hedge
("unless", "might", "may", "maybe", "perhaps", "possibly", "whether", "unlikely") yields no spans: "the deploy
did not fail because of the lock", "the table is never locked, so …" and "unless the cache is cleared …" claim
no cause. The embedding cannot tell "locked" from "never locked", so such a side would match the opposite event
and become a Causal edge to it; a claim about an absence ("because the cache was not cleared") is given up with
them, the safe side for an automatic edge. Skipped cues are listed in `CausalSpans.negated`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contextgraph.embedders.base import Backbone, Encoded, MemoryInput
from contextgraph.embedders.e01_semantic import sentence_vector
from contextgraph.fingerprint import SPACES, Kind
from contextgraph.vectors import as_matrix, l2_normalize, span_token_mask

Span = tuple[int, int]

# Longer phrases first: at one position the first alternative that matches wins ("caused by" before "caused").
_EFFECT_FIRST = (  # "EFFECT cue CAUSE"
    r"\bbecause\s+of\b", r"\bbecause\b", r"\bdue\s+to\b", r"\bowing\s+to\b", r"\bthanks\s+to\b",
    r"\bcaused\s+by\b", r"\btriggered\s+by\b", r"\bdriven\s+by\b",
    r"\bas\s+a\s+(?:result|consequence)\s+of\b", r"\b(?:results?|resulted|resulting)\s+from\b",
    r"\b(?:stems?|stemmed|stemming)\s+from\b", r"\bsince\b(?!\s+\d)", r"<-", r"←",
)
_CAUSE_FIRST = (  # "CAUSE cue EFFECT"
    r"\b(?:leads?|led|leading)\s+to\b", r"\b(?:results?|resulted|resulting)\s+in\b",
    r"\b(?:causes|caused|causing)\b", r"\b(?:triggers|triggered|triggering)\b",
    # the bare verb ("Floods cause mould"), not the noun ("the cause of", "a root cause", "cause for concern")
    r"(?<!\bthe\s)(?<!\ba\s)(?<!\bone\s)(?<!\broot\s)(?<!\bmain\s)(?<!\bcommon\s)(?<!\blikely\s)"
    r"\bcause\b(?!\s+(?:of|for|and|is|was|remains)\b)",
    r"\bso\s+that\b", r"\bin\s+order\s+to\b", r"\b(?:that|this|which)\s+is\s+why\b", r"\b(?:that's|that’s)\s+why\b",
    r"\bas\s+a\s+(?:result|consequence)\b", r"\btherefore\b", r"\bhence\b", r"\bthus\b", r"\bconsequently\b",
    r",\s*so\b", r"->", r"=>", r"→",
)
_CUES = re.compile(
    "|".join(
        [f"(?P<e{i}>{p})" for i, p in enumerate(_EFFECT_FIRST)]
        + [f"(?P<c{i}>{p})" for i, p in enumerate(_CAUSE_FIRST)]
    ),
    re.IGNORECASE,
)
# Where a cue can begin: a zero-width lookahead for the first letters of every alternative above (without their
# \b and lookbehinds, so it finds a superset of _CUES' start positions). _CUES is then tried only there: scanning
# all 32 alternatives, lookbehinds included, at every character cost ~2 µs a character (1.3 ms for a 700-character
# memory, E5's whole time); this scan is ~10x cheaper and _cue_matches returns exactly _CUES.finditer's matches.
# A new cue alternative must add its first letters here (tests/unit/embedders/test_e05_cue_scan.py checks).
_CUE_START = re.compile(
    r"(?=because|due|owing|thanks|caus|trigger|driven|as\s|result|stem|since|<-|←|lead|led|so|in\s|that|this"
    r"|which|therefore|hence|thus|consequently|,|->|=>|→)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n+")
_NEGATION = re.compile(
    r"\bnot\b|n['’]t\b|\bnever\b|\bno\s+longer\b|\bneither\b|\bnor\b|\bwithout\b|\bcannot\b"
    r"|\bunless\b|\bmight\b|\bmay\b|\bmaybe\b|\bperhaps\b|\bpossibly\b|\bwhether\b|\bunlikely\b",
    re.IGNORECASE,
)
_TRIM = " \t\r\n,;:—–-\"'()"

_BACKWARD_QUERY = re.compile(
    r"\bwhy\b|\bhow\s+come\b|\bwhat\s+(?:causes|caused|made|makes)\b|\breasons?\b|\b(?:root\s+)?cause\s+of\b"
    r"|\bdue\s+to\s+what\b",
    re.IGNORECASE,
)
_FORWARD_QUERY = re.compile(
    r"\bwhat\s+(?:happens|happened|will\s+happen|would\s+happen)\b|\bwhat\s+if\b|\beffects?\s+of\b"
    r"|\b(?:leads?|led)\s+to\b|\bconsequences?\b|\bimpact\s+of\b|\bresult\s+of\b|\boutcomes?\s+of\b",
    re.IGNORECASE,
)


def query_direction(text: str) -> str:
    """"backward" for questions after a cause ("why", "what causes", "reason"), "forward" for questions after an
    effect ("what happens", "effect of", "leads to", "consequence"), "both" when neither or both appear."""
    backward, forward = bool(_BACKWARD_QUERY.search(text)), bool(_FORWARD_QUERY.search(text))
    if backward == forward:
        return "both"
    return "backward" if backward else "forward"


@dataclass(frozen=True, slots=True)
class CausalSpans:
    cause: tuple[Span, ...]  # character spans; empty when no cue named this side
    effect: tuple[Span, ...]
    cues: tuple[str, ...]  # the cue phrases that found spans, in text order
    negated: tuple[str, ...] = ()  # cue phrases skipped: negated or hedged in their scope


def causal_spans(text: str) -> CausalSpans:
    """The cause and effect spans the cue patterns find in `text` (see the module docstring)."""
    sentences = _sentences(text)
    cause: list[Span] = []
    effect: list[Span] = []
    cues: list[str] = []
    negated: list[str] = []
    for index, (s_start, s_end) in enumerate(sentences):
        matches = _cue_matches(text, s_start, s_end)
        for j, m in enumerate(matches):
            effect_first = (m.lastgroup or "").startswith("e")  # every alternative of _CUES is a named group
            lo = matches[j - 1].end() if j else s_start
            hi = matches[j + 1].start() if j + 1 < len(matches) else s_end
            if _NEGATION.search(text, lo, hi):
                negated.append(m.group(0).strip(" ,"))
                continue
            left, right = _trim(text, lo, m.start()), _trim(text, m.end(), hi)
            cues.append(m.group(0).strip(" ,"))
            if left is None and effect_first:
                # "Because B, A": the cause runs to the first comma, the effect is the rest of the sentence.
                comma = text.find(",", m.end(), hi)
                if comma >= 0:
                    right, left = _trim(text, m.end(), comma), _trim(text, comma + 1, hi)
            elif left is None and index > 0:
                # "A. Therefore B": the cause is the sentence before (unless that one is negated or hedged).
                previous = sentences[index - 1]
                if _NEGATION.search(text, *previous):
                    cues.pop()
                    negated.append(m.group(0).strip(" ,"))
                    continue
                left = _trim(text, *previous)
            first, second = (effect, cause) if effect_first else (cause, effect)
            if left is not None:
                first.append(left)
            if right is not None:
                second.append(right)
    return CausalSpans(tuple(cause), tuple(effect), tuple(cues), tuple(negated))


def negated(text: str, lo: int = 0, hi: int | None = None) -> bool:
    """Whether text[lo:hi] holds a negation or a hedge, as a cue's scope is judged above."""
    return _NEGATION.search(text, lo, len(text) if hi is None else hi) is not None


def _cue_matches(text: str, lo: int, hi: int) -> list[re.Match[str]]:
    """`list(_CUES.finditer(text, lo, hi))`, trying _CUES only where _CUE_START says a cue can begin: the leftmost
    match at or after the previous one's end, as finditer takes them (a lookbehind sees before `pos` in both)."""
    found: list[re.Match[str]] = []
    end = lo
    for candidate in _CUE_START.finditer(text, lo, hi):
        pos = candidate.start()
        if pos >= end and (m := _CUES.match(text, pos, hi)) is not None:
            found.append(m)
            end = m.end()
    return found


def _sentences(text: str) -> list[Span]:
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        if m.end() > start:
            spans.append((start, m.end()))
        start = m.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def _trim(text: str, lo: int, hi: int) -> Span | None:
    while lo < hi and text[lo] in _TRIM:
        lo += 1
    while hi > lo and text[hi - 1] in _TRIM + ".!?":
        hi -= 1
    return (lo, hi) if hi > lo else None


class CausalEmbedder:
    space = 5
    name = SPACES[4].name
    kind: Kind = "dense"

    def __init__(self, backbone: Backbone) -> None:
        self.hidden = backbone.hidden_size
        self.dim = 2 * self.hidden
        self.pooling = getattr(backbone, "pooling", "mean")
        self.method = (
            f"[cause ; effect] spans found by {len(_EFFECT_FIRST) + len(_CAUSE_FIRST)} causal cue patterns, "
            f"each mean-pooled from {backbone.model_name} token states (whole text when no cue)"
        )

    def embed(self, item: MemoryInput) -> np.ndarray:
        encoded = item.encoded
        spans = causal_spans(encoded.text)
        whole = sentence_vector(encoded, self.pooling)
        cause = self._side(encoded, spans.cause, whole)
        effect = self._side(encoded, spans.effect, whole)
        return (np.concatenate([cause, effect]) / np.sqrt(2.0)).astype(np.float32)

    @staticmethod
    def _side(encoded: Encoded, spans: tuple[Span, ...], whole: np.ndarray) -> np.ndarray:
        mask = span_token_mask(encoded.offsets, encoded.special, spans)
        if not mask.any():
            return whole
        return l2_normalize(encoded.states[mask].mean(axis=0))

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return [self.embed(item) for item in items]

    def halves(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cause, effect), each of unit norm (zero stays zero)."""
        v = np.asarray(v, dtype=np.float32)
        return l2_normalize(v[..., : self.hidden]), l2_normalize(v[..., self.hidden :])

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray], direction: str = "both") -> np.ndarray:
        if direction not in ("forward", "backward", "both"):
            raise ValueError(f"direction must be 'forward', 'backward' or 'both', got {direction!r}")
        if len(docs) == 0:
            return np.zeros(0, dtype=np.float32)
        q_cause, q_effect = self.halves(query)
        d_cause, d_effect = self.halves(as_matrix(docs))
        if direction == "forward":  # the query leads to the doc: its effect is the doc's cause
            return (d_cause @ q_effect).astype(np.float32)
        if direction == "backward":  # the doc leads to the query: its effect is the query's cause
            return (d_effect @ q_cause).astype(np.float32)
        return np.maximum(d_cause @ q_cause, d_effect @ q_effect).astype(np.float32)

    def restatement(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(cause·cause, effect·effect) of `query` against each doc: how far each restates the query's cause and
        its effect (the symmetric comparison novelty needs: a duplicate scores 1 in both)."""
        if len(docs) == 0:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)
        q_cause, q_effect = self.halves(query)
        d_cause, d_effect = self.halves(as_matrix(docs))
        return (d_cause @ q_cause).astype(np.float32), (d_effect @ q_effect).astype(np.float32)
