"""The lexical analyzer (docs/decisions.md#d21): what a "word" is wherever ContextGraph matches words — E6's terms, the
tombstone search, tool discovery.

    text → words (letters/digits/_ runs, joined by dots: `os.path.join`) →
        a compound identifier (snake_case, camelCase, dotted, letters with digits) yields itself whole,
        lower-cased, unstemmed
        ("os.path.join", "getvalue") and then its parts;
        every part / plain word is lower-cased and lightly stemmed (Snowball English, PyStemmer);
        English function words are dropped (their idf is ~0 and their postings are the longest).

    analyze("parseHTTPResponse(resp_body)") == ["parsehttpresponse", "pars", "http", "respons", "resp_body",
                                                "resp", "bodi"]
    analyze("invoices were sent") == ["invoic", "sent"];  analyze("invoice") == ["invoic"]

Pure and deterministic: a function of the text only (the stemmer's tables ship with PyStemmer), cached per word.
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[0-9]+(?:\.[0-9]+)*")
# camelCase / PascalCase / acronym boundaries: HTTPResponse → HTTP, Response; utf8Decode → utf, 8, Decode
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]")

STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been being it its this that these "
    "those there here than then so such into onto over under up down out off about which who whom whose what when "
    "where why how all any both each few more most other some no nor not only own same too very can will just do "
    "does did doing has have had having i me my we our you your he him his she her they them their if else also "
    "may might must shall should would could".split()
)
MAX_WORD = 64  # longer runs (hashes, base64) are kept whole but not split or stemmed

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The light stem of one lower-case word (Snowball English); digits and short words unchanged."""
    if len(word) <= 3 or not word.isalpha():
        return word
    return _stemmer.stemWord(word)


@lru_cache(maxsize=200_000)
def _word_terms(word: str) -> tuple[str, ...]:
    if len(word) > MAX_WORD:
        return (word.lower(),)
    core = word.strip("_")
    if not core:
        return ()
    compound = ("_" in core or "." in core or _INNER_CAPITAL.search(core) is not None
                or (not core.isalpha() and not core.isdigit()))  # letters with digits: utf8, md5, x86_64
    parts = [p for piece in re.split(r"[._]+", word) if piece for p in _CAMEL.findall(piece)]
    out: list[str] = []
    if compound:
        out.append(core.lower())
    for part in parts:
        lower = part.lower()
        if lower in STOPWORDS:
            continue
        out.append(stem(lower))
    return tuple(out)


def analyze(text: str) -> list[str]:
    """The terms of `text`, in order, with repeats (term frequencies count them)."""
    out: list[str] = []
    for m in _WORD.finditer(text):
        out.extend(_word_terms(m.group(0)))
    return out


def term_set(text: str) -> frozenset[str]:
    return frozenset(analyze(text))
