"""REM's link proposals (docs/engine.md#rem): pairs of memories that name the same thing (a service, a person, a
device, a code identifier, a shared causal neighbour) but that no store-time rule linked, because they say
different things about it. Pure text processing over the sample the walk explores; the walk's support and the
commit are services.dreams.dream_phases'.

A memory's names are what `entities` finds that is specific enough to be a name: code identifiers, paths, URLs
and versions whole; hyphenated lower-case names (billing-api); and capitalised words that are never written in
lower case anywhere in the sample (so "Priya" and "Pixel" count, "Renaming" opening a sentence does not when
"renaming" appears elsewhere, and a weekday never does). A name shared by more than `max_share` of the sample
(at least `min_common` memories) is common, not a name; each shared name weighs its inverse document frequency
log(n / df), so two memories sharing a rare name have more evidence than two sharing a frequent one.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from contextgraph.embedders.entities import entities

_KEBAB = re.compile(r"(?<![\w\-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w\-])")
# a capitalised word and a model number: Pixel 7, ThinkPad X1, Windows 11 (the word alone may be ordinary)
_MODEL = re.compile(r"\b[A-Z][\w\-]*\s+[A-Z]?\d[\w.\-]*\b")
# an identifier that is visibly code: an underscore, an inner capital, or dotted parts of two letters or more
# (not "e.g", not a plain word before a parenthesis)
_CODE_LIKE = re.compile(r"_|[a-z0-9][A-Z]|^[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+$")
_CAPITALISED = re.compile(r"\b[^\W\d_][\w\-]*")
_LOWER_WORD = re.compile(r"\b[^\W\d_][\w\-]*")
_ROMAN = re.compile(r"^[ivxlcdm]+$")  # II, IV, XII: a numeral, not a name
_WHOLE = frozenset({"identifier", "path", "url"})  # a bare version number names nothing by itself
# capitalised in any text without naming anything particular
_CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july august "
    "september october november december i".split()
)


@dataclass(frozen=True, slots=True)
class Proposal:
    a: str
    b: str
    shared: tuple[str, ...]  # the names they share, most specific first
    evidence: float  # Σ log(n / df) over the shared names


def candidate_names(text: str) -> tuple[set[str], set[str]]:
    """(names found whole, capitalised words): the second are names only if the sample never writes them in
    lower case (`lower_case_words`)."""
    whole: set[str] = set()
    for mention in entities(text):
        if mention.kind == "identifier" and not _CODE_LIKE.search(mention.text):
            continue
        if mention.kind in _WHOLE and len(mention.text) > 2:
            whole.add(mention.text.lower())
    whole.update(m.group(0) for m in _KEBAB.finditer(text))
    whole.update(" ".join(m.group(0).lower().split()) for m in _MODEL.finditer(text))
    capitalised = {m.group(0).lower() for m in _CAPITALISED.finditer(text) if m.group(0)[0].isupper()}
    return whole, capitalised - _CALENDAR - whole


def lower_case_words(text: str) -> set[str]:
    return {m.group(0) for m in _LOWER_WORD.finditer(text) if m.group(0)[0].islower()}


def names_by_memory(texts: Mapping[str, str], stop: Callable[[], bool] = lambda: False) -> dict[str, set[str]]:
    """Each memory's names (module docstring), the lower-case test taken over all of `texts`; {} as soon as
    `stop` says so (checked between memories: a dream wakes within one memory's text)."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    ordinary: set[str] = set()
    for memory_id, text in texts.items():
        if stop():
            return {}
        found[memory_id] = candidate_names(text)
        ordinary |= lower_case_words(text)
    return {memory_id: whole | {w for w in capitalised if w not in ordinary and len(w) > 1 and not _ROMAN.match(w)}
            for memory_id, (whole, capitalised) in found.items()}


def propose(names: Mapping[str, set[str]], linked: Callable[[str, str], bool], max_share: float,
            min_common: int, min_evidence: float) -> list[Proposal]:
    """Unlinked pairs sharing names specific enough (df ≤ max(min_common, max_share·n)) with evidence ≥
    min_evidence, strongest first. Bounded: a name joins at most max(min_common, max_share·n) memories, so it
    proposes at most that many squared pairs."""
    n = len(names)
    if n < 2:
        return []
    holders: dict[str, list[str]] = {}
    for memory_id, own in names.items():
        for name in own:
            holders.setdefault(name, []).append(memory_id)
    common = max(min_common, int(max_share * n))
    weight = {name: math.log(n / len(ids)) for name, ids in holders.items() if 2 <= len(ids) <= common}
    shared: dict[tuple[str, str], list[str]] = {}
    for name in weight:
        for a, b in itertools.combinations(sorted(holders[name]), 2):
            shared.setdefault((a, b), []).append(name)
    out = []
    for (a, b), pair_names in shared.items():
        evidence = sum(weight[name] for name in pair_names)
        if evidence >= min_evidence and not linked(a, b):
            ordered = tuple(sorted(pair_names, key=lambda name: (-weight[name], name)))
            out.append(Proposal(a, b, ordered, round(evidence, 6)))
    return sorted(out, key=lambda p: (-p.evidence, p.a, p.b))


def with_causal_neighbours(names: Mapping[str, set[str]], causal: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """`names` with each memory's causal neighbours added as names ("causal:<id>"): two memories with the same
    cause or effect share it as they would share a service's name."""
    return {memory_id: own | {f"causal:{other}" for other in causal.get(memory_id, ())}
            for memory_id, own in names.items()}
