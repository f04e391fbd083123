"""A sentence as the words a claim is made of (docs/tools.md#critique): content words in order, lightly stemmed
(Snowball, as the lexical analyzer stems), with the words that only flip its polarity ("not", "never", "no
longer", "cannot", "doesn't", "without") counted apart. Numbers and times stay whole ("02:00", "3.11"), a possessive
stays its own word ("Tom's" is not "Tom": "Tom's wife" is another subject), and an all-capitals word is kept even
where its lower case is a function word ("US" is a region, "us" is not)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from contextgraph.retrieval.analyzer import STOPWORDS, stem

# contractions first, so "doesn't" is "does not" and "can't" is "can not" before the words are split
_CONTRACTIONS = ((re.compile(r"\bcan['’]t\b", re.I), "can not"), (re.compile(r"\bwon['’]t\b", re.I), "will not"),
                 (re.compile(r"\bcannot\b", re.I), "can not"), (re.compile(r"n['’]t\b", re.I), " not"))
_TOKEN = re.compile(r"[A-Za-z0-9][\w]*(?:[.\-:/][A-Za-z0-9][\w]*)*(?:['’]s\b)?")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NEGATORS = frozenset(("not", "never", "no", "nor", "neither", "without"))
# function words a claim's subject, predicate and value never hinge on (beyond the analyzer's list)
_FILLER = STOPWORDS - _NEGATORS | frozenset(
    "every now currently still yet already ago last next per whether us".split())


@dataclass(frozen=True, slots=True)
class Words:
    words: tuple[str, ...]  # content words in text order: stems, numbers, possessives
    negations: int  # how many polarity words ("no longer" is one)
    every: frozenset[str] = frozenset()  # every word, function words included ("on" / "off" flip a flag too)


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of a text: a claim is made in one of them, so two memories are compared sentence by
    sentence (a dot inside a word, "Node.js", "v1.2", does not end one)."""
    return [s for s in (part.strip() for part in _SENTENCE_END.split(text)) if s]


def stem_of(word: str) -> str:
    """One lower-case word as `split_words` writes it: stemmed when it is letters only."""
    return stem(word) if word.isalpha() else word


def numeric(word: str) -> bool:
    return bool(_NUMBER.fullmatch(word))


@lru_cache(maxsize=8192)  # critique compares each sentence with many others
def split_words(text: str) -> Words:
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    text = re.sub(r"\bno\s+longer\b", "no", text, flags=re.I)
    words: list[str] = []
    every: set[str] = set()
    negations = 0
    for token in _TOKEN.findall(text):
        low = token.lower().replace("’", "'")
        every.add(stem_of(low))
        if low in _NEGATORS:
            negations += 1
        elif low.endswith("'s"):
            words.append(low)  # a possessive names another subject ("Tom's wife"): never stemmed into "tom"
        elif low not in _FILLER or (token.isupper() and len(token) > 1):
            words.append(stem_of(low))
    return Words(tuple(words), negations, frozenset(every))


def phrase_words(text: str) -> frozenset[str]:
    """The content words of a short phrase (a value, a subject), as `split_words` writes them."""
    return frozenset(split_words(text).words)
