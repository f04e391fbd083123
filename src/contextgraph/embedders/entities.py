"""Entity mentions and simple relation triples in a text, by regular expressions (E11). Entities: URLs, file
paths, version numbers, code identifiers and Capitalised Phrases; triples: (head, relation, tail) for a handful of
verb patterns ("X uses Y", "X is a Y", "X depends on Y", "X calls Y", …). Pure text processing."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from contextgraph.embedders.code_lexer import IDENTIFIER


@dataclass(frozen=True, slots=True)
class Entity:
    text: str
    kind: str  # url | path | version | identifier | phrase
    start: int
    end: int


# Earlier kinds win where mentions overlap (a URL contains a path, a path contains a file name's dotted name).
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("url", re.compile(r"\b(?:https?|ftp)://[^\s<>\"'`]+[^\s<>\"'`.,;:!?)\]]")),
    ("path", re.compile(
        r"(?<![\w/:.])(?:~|\.{1,2})?/[\w.\-]+(?:/[\w.\-]+)*/?"  # /etc/hosts, ~/x, ./a/b
        r"|\b[\w\-]+(?:/[\w\-]+)*/[\w\-]+\.\w{1,8}\b"  # src/app/main.py
        r"|\b[\w\-]+\.(?:py|pyi|js|ts|tsx|jsx|md|rst|json|yaml|yml|toml|txt|rs|go|java|kt|c|cc|cpp|h|hpp|sh|html|"
        r"css|sql|cfg|ini|lock|onnx|csv|log)\b"  # main.py
    )),
    ("version", re.compile(
        r"\bv\d+(?:\.\d+)+(?:[-+][0-9A-Za-z.]+)?\b"  # v2.3, v1.0.0-rc1
        r"|\b\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.]+)?\b"  # 2.13.0
    )),
    ("loose_version", re.compile(r"(?<=[A-Za-z] )\d+\.\d+\b")),  # Python 3.11 — kept only after a name (below)
    ("identifier", IDENTIFIER),
    ("phrase", re.compile(r"\b[A-Z][A-Za-z0-9\-]*(?:[ \t]+[A-Z][A-Za-z0-9\-]*)*\b")),
)

# Capitalised only because they open a sentence (or are pronouns): dropped from the front of a phrase.
_COMMON = frozenset(
    "the a an this that these those it its we i you he she they our my your their when if then so but and or "
    "because since after before while yesterday today tomorrow what why how where who which there here also "
    "however please let use add fix run note see all some each every no not yes ok in on at for to from with by "
    "as of is are was were be".split()
)


def entities(text: str) -> list[Entity]:
    """The entity mentions of `text`, in text order, without overlaps."""
    # the mentions taken so far, non-overlapping, as parallel sorted lists: a new span overlaps one of them iff
    # the first that ends after its start begins before its end (a binary search, not a scan of all of them)
    starts: list[int] = []
    ends: list[int] = []
    found: list[Entity] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if kind == "phrase":
                start = _skip_common_words(text, start, end)
                if start is None or _lone_sentence_opener(text, start, end):
                    continue
            if kind == "loose_version" and not _after_a_name(text, start):
                continue
            at = bisect.bisect_right(ends, start)
            if at < len(starts) and starts[at] < end:
                continue
            starts.insert(at, start)
            ends.insert(at, end)
            found.append(Entity(text[start:end], kind.removeprefix("loose_"), start, end))
    return sorted(found, key=lambda e: e.start)


def _lone_sentence_opener(text: str, start: int, end: int) -> bool:
    """A single ordinary capitalised word that opens a sentence ("Upgrade the…") is most likely capitalised for
    that reason alone; one with an inner capital, a digit or all capitals (ContextGraph, HNSW, S3) is kept."""
    word = text[start:end]
    return _opens_sentence(text, start) and " " not in word and re.fullmatch(r"[A-Z][a-z\-]*", word) is not None


def _opens_sentence(text: str, start: int) -> bool:
    r"""Does text[:start] end the way `(?:^|[.!?:]\s+|\n\s*)$` says: nothing before it, or sentence punctuation
    then whitespace, or a newline then any whitespace? Read backwards from `start` (a regex search over
    text[:start] made every capitalised phrase cost a pass over the text before it)."""
    if start == 0:
        return True
    blank = start
    while blank > 0 and text[blank - 1].isspace():  # str.isspace is the \s of a str pattern
        blank -= 1
    if blank == start:
        return False
    return "\n" in text[blank:start] or (blank > 0 and text[blank - 1] in ".!?:")


def _after_a_name(text: str, start: int) -> bool:
    r""""Python 3.11" is a version; "in 0.5 seconds" is not. The name is the word right before the one whitespace
    character before `start`: its run of word characters and hyphens from the first ASCII letter on (what
    `([A-Za-z][\w\-]*)\s$` finds in text[:start] when, as after loose_version's look-behind, a letter and a
    space precede `start`), read backwards from `start` instead of searching all of text[:start]."""
    if start == 0 or not text[start - 1].isspace():
        return False
    first = start - 1
    while first > 0 and (text[first - 1].isalnum() or text[first - 1] in "_-"):
        first -= 1
    run = text[first : start - 1]
    letter = next((i for i, ch in enumerate(run) if ch.isascii() and ch.isalpha()), None)
    return letter is not None and run[letter:].lower() not in _STOP


def _skip_common_words(text: str, start: int, end: int) -> int | None:
    """Where the phrase starts once leading common words ("The", "We") are dropped; None if nothing is left."""
    for word in re.finditer(r"\S+", text[start:end]):
        if word.group(0).lower() not in _COMMON:
            return start + word.start()
    return None


# (relation name, pattern between head and tail)
RELATIONS: tuple[tuple[str, str], ...] = (
    ("depends_on", r"depends?\s+on|depended\s+on"),
    ("is_a", r"is\s+an?|are|was\s+an?"),
    ("uses", r"uses|used|use"),
    ("calls", r"calls|called|call"),
    ("imports", r"imports|imported"),
    ("extends", r"extends|inherits\s+from"),
    ("implements", r"implements"),
    ("contains", r"contains|includes"),
)
_RELATION = re.compile(
    r"\s(?:" + "|".join(f"(?P<{name}>{pattern})" for name, pattern in RELATIONS) + r")\s", re.IGNORECASE
)
_CLAUSE = re.compile(r"[^.;!?\n]+(?:[.;!?](?!\s|$)[^.;!?\n]*)*")  # a dot inside a name does not end it
_TERM_WORD = re.compile(r"[\w.\-/:@]+(?:\(\))?")
# Words that end a head (reading leftwards) or a tail (reading rightwards).
_STOP = _COMMON | frozenset("which who that whose to into for with in on at by from because and or but than".split())
MAX_TERM_WORDS = 4


def triples(text: str, mentions: list[Entity] | None = None) -> list[tuple[str, str, str]]:
    """(head, relation, tail) for each clause with one of RELATIONS between two terms, e.g.
    "ContextGraph uses LMDB for storage" → ("ContextGraph", "uses", "LMDB"). `mentions`: entities(text), when
    the caller has them already (E11 finds them once for its vector and its triples)."""
    mentions = entities(text) if mentions is None else mentions
    out = []
    for clause in _CLAUSE.finditer(text):
        base, body = clause.start(), clause.group(0)
        for m in _RELATION.finditer(body):
            head_at, tail_at = base + m.start(), base + m.end()
            # A whole entity mention next to the relation is the term; otherwise a few words up to a function word.
            head = next((e.text for e in mentions if e.end == head_at), None) or _term(
                reversed(_TERM_WORD.findall(body[: m.start()].rsplit(",", 1)[-1])), reverse=True
            )
            tail_words = body[m.end() :].split(",", 1)[0]
            skipped = len(tail_words) - len(re.sub(r"^(?:(?:an?|the)\s+)", "", tail_words, flags=re.IGNORECASE))
            tail = next((e.text for e in mentions if e.start == tail_at + skipped), None) or _term(
                _TERM_WORD.findall(tail_words), reverse=False
            )
            if head and tail:
                out.append((head, m.lastgroup, tail))
    return out


def _term(words, *, reverse: bool) -> str:
    """Up to MAX_TERM_WORDS words from the relation outwards, stopping at a function word."""
    picked = []
    for word in words:
        if word.lower() in _STOP:
            if picked or reverse:
                break
            continue  # a leading article of the tail ("is a graph index")
        picked.append(word.removesuffix("()").rstrip(".:"))
        if len(picked) == MAX_TERM_WORDS:
            break
    return " ".join(reversed(picked) if reverse else picked)
