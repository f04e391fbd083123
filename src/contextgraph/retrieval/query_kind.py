"""What a query is, from its text alone (docs/retrieval.md#query-kinds): code-like or prose, a question or a
short keyword query, and whether it asks about time. Regexes only; pure.

    code      an identifier-shaped word (snake_case, camelCase, dotted name, name followed by "(") or a code symbol
    question  starts with an interrogative / auxiliary or ends with "?"
    keyword   at most three words and not a question
    temporal  names a time: yesterday, last week, 3 days ago, a weekday or month, an ISO date, "recently"…

The temporal spaces (E2-E4) rank memories by when they were stored, which is noise for a topical query; they
vote only when the query is temporal."""

from __future__ import annotations

import re
from dataclasses import dataclass

_CODE = re.compile(
    r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b"  # os.path.join
    r"|\b_*[A-Za-z][A-Za-z0-9]*_\w*\b"  # snake_case
    r"|\b[a-z]+[0-9]*[A-Z]\w*\b"  # camelCase
    r"|\b[A-Za-z_]\w*\("  # call(
    r"|[{};]|==|!=|->|=>|::"
)
_QUESTION = re.compile(
    r"^\s*(?:how|what|why|when|where|which|who|whom|whose|is|are|was|were|do|does|did|can|could|should|would|will"
    r"|has|have)\b|\?\s*$", re.IGNORECASE)
_TEMPORAL = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|recent(?:ly)?|earlier|latest|lately|ago"
    r"|(?:last|this|next|past|previous)\s+(?:night|morning|evening|week|weekend|month|year|time|session|hour|day|"
    r"few\s+(?:days|weeks|months)|\d+\s+(?:days|weeks|months))"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|january|february|march|april|june|july|august|september|october|november|december"
    r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4})\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class QueryKind:
    code: bool = False
    question: bool = False
    keyword: bool = False
    temporal: bool = False

    def labels(self) -> tuple[str, ...]:
        return tuple(name for name in ("code", "question", "keyword", "temporal") if getattr(self, name))


def classify(text: str | None) -> QueryKind:
    if not text:
        return QueryKind()
    words = text.split()
    question = bool(_QUESTION.search(text))
    return QueryKind(code=bool(_CODE.search(text)), question=question, keyword=len(words) <= 3 and not question,
                     temporal=bool(_TEMPORAL.search(text)))


TEMPORAL_SPACES = (2, 3, 4)


def query_weights(base: dict[int, float], kind: QueryKind, multipliers: dict[str, dict[int, float]],
                  temporal_only_when_asked: bool = True) -> dict[int, float]:
    """The space weights for this query: `base` times each of its kinds' multipliers; the temporal spaces at 0
    unless the query is temporal (when `temporal_only_when_asked`)."""
    w = dict(base)
    for label in kind.labels():
        for space, factor in multipliers.get(label, {}).items():
            w[space] = w.get(space, 0.0) * float(factor)
    if temporal_only_when_asked and not kind.temporal:
        for space in TEMPORAL_SPACES:
            w[space] = 0.0
    return w
