"""Whether two memories contradict each other (docs/tools.md#critique). A contradiction needs the same subject and
predicate with incompatible values or polarity; facts that can both hold, similar words about different subjects
and restatements are not contradictions. Three ways two sentences contradict:

    negation      polarity differs (one "not"/"never"/"no longer" more, or an opposite word: enabled/disabled,
                  on/off, passed/failed …) and the claims are otherwise the same: one sentence's content words
                  all in the other, with at most one qualifier more ("speaks German fluently" / "does not speak
                  German"). A different word on each side is another subject or object: the payment service
                  vs the admin service, bodies vs headers.
    value         the same words in the same order but for one slot, holding a value on each side (a number with
                  its unit, or a name of one or two words): "TTL is 30 seconds" / "TTL is 60 seconds", "lives in
                  Porto" / "lives in Lisbon". A slot at the start is the subject (different subjects), two slots
                  are a different subject and a different value (staging 16 GB / production 64 GB), and a
                  predicate that holds several values at once ("supports", "uses", "speaks") makes two values a
                  possible conflict only, both may hold.
    supersession  one says the thing moved on (`moves.move_in`) and the other states the old state of the same
                  subject (it names the old state, shares a subject word, and does not name the new state).

A supersession says which side states what holds now (`newer`: the move); for the others only the time they were
stored can tell."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contextgraph.claims.moves import Move, move_in
from contextgraph.claims.words import Words, numeric, phrase_words, sentences, split_words, stem_of

Kind = Literal["negation", "value", "supersession"]

# opposite words: the second reads as "not" the first (stemmed like the sentences)
_OPPOSITES = tuple((frozenset({stem_of(x)}), frozenset({stem_of(y)})) for x, y in (
    ("enabled", "disabled"), ("enable", "disable"), ("on", "off"), ("true", "false"), ("passed", "failed"),
    ("succeeded", "failed"), ("allowed", "forbidden"), ("allowed", "denied"), ("online", "offline"),
    ("valid", "invalid"), ("safe", "unsafe"), ("supported", "unsupported"), ("available", "unavailable"),
    ("reachable", "unreachable"), ("always", "never"), ("included", "excluded"), ("accepted", "rejected"),
    ("works", "broken"), ("public", "private"), ("present", "absent"), ("increase", "decrease"),
    ("faster", "slower"), ("required", "optional")))
# predicates that hold several values at once: two of their values may both be true
_MULTI = phrase_words("support supports include includes accept accepts speak speaks use uses offer offers contain "
                      "contains like likes know knows handle handles provide provides")
_NAME_WORDS = 2  # a value slot without a number: a name of one or two words ("Lisbon", "data engineering")
_MIN_FRAME = 2  # the words both sentences share around the slot: a subject and a predicate at least
# sentences compared per memory: a pair of memories costs at most its square in sentence pairs, each a few µs
_MAX_SENTENCES = 12


@dataclass(frozen=True, slots=True)
class Contradiction:
    kind: Kind
    confirmed: bool  # False: a possible conflict the text cannot settle (both values may hold)
    evidence: str
    newer: Literal["a", "b"] | None = None  # the side stating what holds now, when the text says so (a move)


def contradiction(a: str, b: str) -> Contradiction | None:
    """How `a` (stored first) and `b` contradict each other, or None when they do not: the first contradiction
    between a sentence of one and a sentence of the other (the first `_MAX_SENTENCES` of each)."""
    for sa in sentences(a)[:_MAX_SENTENCES]:
        for sb in sentences(b)[:_MAX_SENTENCES]:
            found = _between(sa, sb)
            if found is not None:
                return found
    return None


def _between(a: str, b: str) -> Contradiction | None:
    """How two sentences contradict each other, or None."""
    if move_in(a) is not None or move_in(b) is not None:
        # a move's words are an old state and a new one: only what the other says of the old state can contradict it
        return _supersession(a, b)
    wa, wb = split_words(a), split_words(b)
    wa, wb = _resolve_opposites(wa, wb)
    if wa.negations % 2 != wb.negations % 2:
        return _negation(wa, wb)
    return _value(wa, wb)


def _resolve_opposites(wa: Words, wb: Words) -> tuple[Words, Words]:
    """An opposite word on one side only ("disabled" where the other says "enabled") becomes its counterpart and
    one negation more, so "failed" / "did not pass" agree and "enabled" / "disabled" differ in polarity only."""
    for x, y in _OPPOSITES:
        sa, sb = wa.every, wb.every
        if x <= sa and y <= sb and not y <= sa and not x <= sb:
            wb = _flip(wb, y, x)
        elif x <= sb and y <= sa and not y <= sb and not x <= sa:
            wa = _flip(wa, y, x)
    return wa, wb


def _flip(words: Words, opposite: frozenset[str], counterpart: frozenset[str]) -> Words:
    """`words` with its opposite word replaced in place by the counterpart (where it is a content word, not "off"),
    and one negation more."""
    every = words.every - opposite | counterpart
    if not opposite & set(words.words):
        return Words(words.words, words.negations + 1, every)
    replaced: list[str] = []
    for w in words.words:
        if w not in opposite:
            replaced.append(w)
        elif not counterpart & set(replaced):
            replaced += sorted(counterpart)
    return Words(tuple(replaced), words.negations + 1, every)


def _negation(wa: Words, wb: Words) -> Contradiction | None:
    sa, sb = set(wa.words), set(wb.words)
    only_a, only_b = sa - sb, sb - sa
    if only_a and only_b:
        return None  # a word of its own on each side: another subject or object, not a denial
    if len(only_a | only_b) > 1 or len(sa & sb) < _MIN_FRAME:
        return None
    denier = "a" if wa.negations % 2 else "b"
    return Contradiction("negation", True, f"the {'first' if denier == 'a' else 'second'} denies what the other "
                                           f"states ({', '.join(sorted(sa & sb))})")


def _value(wa: Words, wb: Words) -> Contradiction | None:
    import difflib  # here, not at the top: ~15 ms of every process's start, for a check few calls reach

    ops = [op for op in difflib.SequenceMatcher(a=wa.words, b=wb.words, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None  # words only one side has (a refinement), or two slots differ (another subject too)
    _, i1, i2, j1, j2 = ops[0]
    frame = wa.words[:i1] + wa.words[i2:]
    if i1 == 0 or len(frame) < _MIN_FRAME:
        return None  # the slot is the subject, or too little is shared to call it the same claim
    va, vb = wa.words[i1:i2], wb.words[j1:j2]
    if not (_is_value(va) and _is_value(vb)):
        return None
    evidence = f"the same claim ({' '.join(frame)}) with another value: {' '.join(va)} vs {' '.join(vb)}"
    if any(map(numeric, va)) != any(map(numeric, vb)) or set(wa.words[:i1]) & _MULTI:
        # a number against a word, or a predicate holding several values: both may hold
        return Contradiction("value", False, evidence + " (both may hold)")
    return Contradiction("value", True, evidence)


def _is_value(words: tuple[str, ...]) -> bool:
    """A slot holding one value: a number with at most one unit word ("30 minutes", "04:30"), or a short name. A
    longer slot is another predicate ("has 8 TB of storage" / "takes a snapshot every hour")."""
    if any(map(numeric, words)):
        return sum(not numeric(w) for w in words) <= 1 and len(words) <= 2
    return 0 < len(words) <= _NAME_WORDS


def _supersession(a: str, b: str) -> Contradiction | None:
    sides: tuple[tuple[str, str, Literal["a", "b"]], ...] = ((b, a, "b"), (a, b, "a"))
    for mover, other, side in sides:
        move = move_in(mover)
        if move is None or move_in(other) is not None:
            continue
        if _states_old(move, frozenset(split_words(other).words)):
            stale = "a" if side == "b" else "b"
            return Contradiction("supersession", True,
                                 f"the {'second' if side == 'b' else 'first'} moved on from "
                                 f"{' '.join(sorted(move.old))}, which the {'first' if stale == 'a' else 'second'}"
                                 f" still states", side)
    return None


def _states_old(move: Move, other: frozenset[str]) -> bool:
    """Whether a sentence states the old state of the move's subject: it names the old state, shares a subject
    word with the move (or names the old state in two words or more, a subject in itself: "the Netgear R7000
    router"), and does not name the new one."""
    if not move.old <= other and len(move.old & other) < 2:
        return False
    if move.new and move.new <= other:
        return False
    return bool(move.context & other) or len(move.old & other) >= 2
