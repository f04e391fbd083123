"""A sentence that says something moved on from one state to another (docs/tools.md#critique): "we moved CI from
Jenkins to GitHub Actions", "the frontend replaced webpack with Vite", "the R7000 was replaced by a Dream
Machine", "Ahmed left Contoso". The old state, the new one (when named) and the rest of the sentence (its
subject), as content words."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from contextgraph.claims.words import phrase_words, split_words

# a phrase ends at punctuation, at the end, or where a trailing qualifier starts ("… to Leeds last spring")
_END = r"(?=\s+(?:for|last|this|in|on|at|since|because|after|when|and|but)\b|[,;.!?]?\s*$|[,;!?]|\.\s)"
_PHRASE = r"[^,;!?]+?"
_PATTERNS = (
    re.compile(rf"\b(?:moved|migrated|switched|changed|went|transitioned|upgraded|downgraded|converted|relocated)\b"
               rf".*?\bfrom\s+(?P<old>{_PHRASE})\s+(?:to|onto|into)\s+(?P<new>{_PHRASE}){_END}", re.I),
    re.compile(rf"\breplaced\s+(?P<old>{_PHRASE})\s+with\s+(?P<new>{_PHRASE}){_END}", re.I),
    re.compile(rf"^(?P<old>{_PHRASE})\s+(?:was|were|has\s+been|have\s+been|is|are|got)\s+replaced\s+by\s+"
               rf"(?P<new>{_PHRASE}){_END}", re.I),
    re.compile(rf"\b(?:left|quit|dropped|abandoned|retired|stopped\s+using)\s+(?P<old>{_PHRASE}){_END}", re.I),
)


@dataclass(frozen=True, slots=True)
class Move:
    old: frozenset[str]  # the state it moved away from
    new: frozenset[str]  # the state it moved to (empty when not named: "Ahmed left Contoso")
    context: frozenset[str]  # the sentence's other content words: whose state it is


@lru_cache(maxsize=8192)  # critique asks for each sentence once per pair it is in
def move_in(text: str) -> Move | None:
    """The move the sentence states, or None."""
    for pattern in _PATTERNS:
        m = pattern.search(text)
        if m is None:
            continue
        old = phrase_words(m.group("old"))
        new = phrase_words(m.groupdict().get("new") or "")
        if old:
            return Move(old, new - old, frozenset(split_words(text).words) - old - new - _VERBS)
    return None


# the verbs of a move, which say nothing about whose state moved
_VERBS = phrase_words("moved migrated switched changed went transitioned upgraded downgraded converted relocated "
                      "replaced left quit dropped abandoned retired stopped using")
