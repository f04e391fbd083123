"""Prompt-injection patterns (docs/tools.md: "ignore previous", "disregard system", "you are now", "new instructions:",
"override:") and the variants that hide them, found in a normalised copy of the text. Pure: text in, findings out.

Normalisation undoes the tricks a pattern list alone would miss, and each one used is reported as evidence:
  - NFKC folds fullwidth and other compatibility forms ("ｉｇｎｏｒｅ" → "ignore");
  - zero-width and bidi control characters are removed ("ig\u200bnore"); bidi controls are a finding of their
    own (the "Trojan Source" trick: text shown in another order than it is read);
  - homoglyphs: Cyrillic and Greek letters that look like Latin ones are mapped to them ("іgnоre" with a
    Cyrillic і and о), and a word mixing such letters with Latin ones is a finding (no real word does);
  - letter spacing ("i g n o r e   p r e v i o u s") is joined back;
  - leetspeak digits and symbols ("1gn0r3") are read as letters in a second pass, only for the patterns.

A memory is flagged, never dropped: the caller decides what a finding means.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Zero-width and invisible formatting characters (removed before matching).
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u2061\u2062\u2063\u2064"
# Bidirectional embedding/override/isolate controls (Trojan Source, CVE-2021-42574).
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"
_INVISIBLE = re.compile(f"[{_ZERO_WIDTH}{_BIDI}]")
_BIDI_RE = re.compile(f"[{_BIDI}]")

# Cyrillic and Greek letters drawn like Latin ones (Unicode confusables.txt, the single-letter cases that survive
# NFKC), lower and upper case.
CONFUSABLES: dict[str, str] = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j", "к": "k", "м": "m", "н": "h",
    "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "Н": "H", "І": "I", "Ј": "J", "К": "K", "М": "M", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W",
    # Greek
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "ι": "i", "κ": "k", "τ": "t", "υ": "u", "χ": "x", "ε": "e",
    "Α": "A", "Β": "B", "Ε": "E", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T",
    "Υ": "Y", "Χ": "X", "Ζ": "Z",
}
_HOMOGLYPHS = str.maketrans(CONFUSABLES)
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i",
                       "|": "l"})
_WORD = re.compile(r"\w+")
# Runs of ≥ 3 single letters separated by single spaces or dots ("i g n o r e", "i.g.n.o.r.e").
_SPACED = re.compile(r"\b(?:[a-z][ .\-_]){2,}[a-z]\b", re.IGNORECASE)

_PREVIOUS = (r"(?:all\s+|any\s+|the\s+|your\s+|my\s+|of\s+the\s+)*"
             r"(?:previous|prior|preceding|above|earlier|foregoing|former)")
_ORDERS = r"(?:instructions?|prompts?|rules|directions|directives|guidelines|context|messages?|commands?|orders)"
_DROP = r"(?:ignore|disregard|forget|skip|bypass|neglect|drop|discard|abandon|set\s+aside)"
# name → (pattern, what it is); matched on the normalised, lower-cased text, so written in lower case.
PATTERNS: dict[str, tuple[str, str]] = {
    "ignore_previous": (
        rf"\b{_DROP}\s+{_PREVIOUS}(?:\s+{_ORDERS}\b|\s*(?:[.,;:!?]|$|\s+and\b))"
        rf"|\b{_DROP}\s+(?:all|everything)\s+(?:you\s+(?:were|have\s+been)\s+(?:told|given)|{_ORDERS})\b"
        # the order after the noun: "disregard the instructions above", "drop your rules so far"
        rf"|\b{_DROP}\s+(?:all\s+|the\s+|your\s+|my\s+|these\s+|those\s+|any\s+)*{_ORDERS}\s+(?:above"
        rf"|before(?=\s*(?:[.,;:!?]|$|and\b|this\b|now\b))|so\s+far"
        rf"|given\s+(?:to\s+you\s+)?(?:before|earlier|above)|you\s+(?:were|have\s+been)\s+given)\b"
        rf"|\bstop\s+following\s+(?:all\s+|the\s+|your\s+|any\s+)*{_ORDERS}\b",
        "asks the reader to drop the instructions it was given"),
    "disregard_system": (
        r"\b(?:disregard|ignore|forget|override|bypass)\s+(?:the\s+|your\s+|all\s+)*system(?:\s+(?:prompt|message|"
        r"instructions?|rules))?\b",
        "asks the reader to drop its system prompt"),
    "you_are_now": (
        r"\byou\s+are\s+now\s+(?:a|an|the|in|my|no\s+longer|free|unrestricted|jailbroken|dan\b|developer\s+mode)"
        r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must)\b|\bpretend\s+(?:that\s+)?you\s+are\s+(?:a|an|not)\b",
        "tries to give the reader a new identity"),
    "new_instructions": (
        r"\b(?:new|updated|real|actual|revised)\s+(?:system\s+)?instructions?\s*:"
        r"|(?:^|[\n.!?]\s*)(?:system\s+prompt|system)\s*:\s*you\b",
        "introduces replacement instructions"),
    "override": (
        r"(?:^|[\n.!?>\]]\s*)(?:admin\s+|system\s+|security\s+)?override\s*:",
        "claims an override of the reader's rules"),
    "reveal_prompt": (
        r"\b(?:reveal|print|show|repeat|output|leak)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|hidden\s+"
        r"instructions|initial\s+instructions)\b",
        "asks the reader to disclose its instructions"),
}
_COMPILED = {name: re.compile(pattern, re.IGNORECASE | re.MULTILINE) for name, (pattern, _) in PATTERNS.items()}
# Words each pattern cannot match without (a substring test in C before the regex: most text has none of them).
_NEEDLES: dict[str, tuple[str, ...]] = {
    "ignore_previous": ("ignore", "disregard", "forget", "skip", "bypass", "neglect", "drop", "discard", "abandon",
                        "aside", "following"),
    "disregard_system": ("system",),
    "you_are_now": ("you",),
    "new_instructions": ("instruction", "system"),
    "override": ("override",),
    "reveal_prompt": ("prompt", "instruction"),
}

# Scores: a pattern alone, a pattern reached only by undoing a trick (hiding is itself a signal), the tricks alone.
SCORE_PATTERN = 0.9
SCORE_HIDDEN_PATTERN = 1.0
SCORE_BIDI = 0.6
SCORE_MIXED_SCRIPT = 0.5
SCORE_SPLIT_WORD = 0.5


@dataclass(frozen=True, slots=True)
class Finding:
    check: str  # "prompt_injection"
    kind: str  # a PATTERNS name, or bidi_control / mixed_script / zero_width_split
    evidence: str
    score: float
    tricks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Normalised:
    text: str  # NFKC, invisibles removed, homoglyphs mapped, spaced letters joined
    tricks: tuple[str, ...]  # which of those changed anything


def normalise(text: str) -> Normalised:
    if text.isascii() and not _SPACED.search(text):
        return Normalised(text, ())  # nothing to undo: NFKC, invisibles and homoglyphs are all non-ASCII
    tricks = []
    folded = unicodedata.normalize("NFKC", text)
    if folded != text:
        tricks.append("compatibility_forms")
    visible = _INVISIBLE.sub("", folded)
    if visible != folded:
        tricks.append("invisible_characters")
    mapped = visible.translate(_HOMOGLYPHS)
    if mapped != visible:
        tricks.append("homoglyphs")
    joined = _SPACED.sub(lambda m: segment(re.sub(r"[ .\-_]", "", m.group(0))), mapped)
    if joined != mapped:
        tricks.append("letter_spacing")
    return Normalised(joined, tuple(tricks))


def _vocabulary() -> frozenset[str]:
    """The words the patterns are written with (and a few short ones that join them): what a letter-spaced run
    is split back into."""
    source = re.sub(r"\\[a-zA-Z]", " ", " ".join(pattern for pattern, _ in PATTERNS.values()))  # \b, \s: not words
    words = set(re.findall(r"[a-z]{2,}", source))
    words |= {w[:-1] for w in words if w.endswith("s") and len(w) > 4}  # instructions? → instruction too
    return frozenset(words | {"a", "i", "me", "and", "say", "do", "to", "it", "is", "please", "kindly", "just"})


_VOCABULARY = _vocabulary()
_LONGEST = max(map(len, _VOCABULARY))


def segment(run: str) -> str:
    """A letter-spaced run joined back ("i g n o r e p r e v i o u s" → "ignoreprevious") and split into the
    patterns' words where it splits completely ("ignore previous"); the fewest words win (dynamic programming
    over prefixes). A run that does not split stays one word: spaced letters in ordinary text are rare, and its
    words are not guessed."""
    low = run.lower()
    best: list[list[str] | None] = [[]] + [None] * len(low)
    for end in range(1, len(low) + 1):
        for start in range(max(0, end - _LONGEST), end):
            head = best[start]
            if head is not None and low[start:end] in _VOCABULARY:
                candidate = [*head, low[start:end]]
                held = best[end]
                if held is None or len(candidate) < len(held):
                    best[end] = candidate
    words = best[-1]
    return " ".join(words) if words else run


def _snippet(text: str, start: int, end: int, pad: int = 30) -> str:
    lo, hi = max(0, start - pad), min(len(text), end + pad)
    return ("…" if lo else "") + " ".join(text[lo:hi].split()) + ("…" if hi < len(text) else "")


def scan(text: str) -> list[Finding]:
    """Every injection pattern in the text (each once, with the first place it occurs) and every hiding trick
    that is suspicious on its own."""
    findings: list[Finding] = []
    plain = text.lower()
    norm = normalise(text)
    lowered = norm.text.lower()
    leet = lowered.translate(_LEET)
    # a variant identical to one already searched is not searched again (ordinary text: one pass, not three)
    variants = [(v, extra) for v, extra, same in ((lowered, (), lowered == plain),
                                                  (leet, ("leetspeak",), leet == lowered)) if not same]
    for name, pattern in _COMPILED.items():
        needles = _NEEDLES[name]
        hit = pattern.search(plain) if any(n in plain for n in needles) else None
        if hit is not None:
            findings.append(Finding("prompt_injection", name, _snippet(text, *hit.span()), SCORE_PATTERN))
            continue
        for variant, extra in variants:
            hit = pattern.search(variant) if any(n in variant for n in needles) else None
            if hit is not None:
                tricks = norm.tricks + extra
                findings.append(Finding("prompt_injection", name,
                                        f"{_snippet(variant, *hit.span())} (after undoing: {', '.join(tricks)})",
                                        SCORE_HIDDEN_PATTERN, tricks))
                break
    bidi = _BIDI_RE.findall(text)
    if bidi:
        codes = ", ".join(sorted({f"U+{ord(c):04X}" for c in bidi}))
        findings.append(Finding("prompt_injection", "bidi_control",
                                f"{len(bidi)} bidirectional control character(s) ({codes}): the text displays in "
                                "another order than it is read", SCORE_BIDI))
    mixed = mixed_script_words(text)
    if mixed:
        findings.append(Finding("prompt_injection", "mixed_script",
                                f"word(s) mixing Latin with look-alike Cyrillic/Greek letters: {', '.join(mixed[:5])}",
                                SCORE_MIXED_SCRIPT))
    split = zero_width_splits(text)
    if split:
        findings.append(Finding("prompt_injection", "zero_width_split",
                                f"zero-width character(s) inside word(s): {', '.join(split[:5])}", SCORE_SPLIT_WORD))
    return findings


def mixed_script_words(text: str) -> list[str]:
    """Words that mix ASCII Latin letters with Cyrillic/Greek look-alikes (after NFKC): a spoofing signal, since
    no word of any language is written that way."""
    out: list[str] = []
    if text.isascii():
        return out
    for word in _WORD.findall(unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))):
        has_latin = any("a" <= c.lower() <= "z" for c in word)
        if has_latin and any(c in CONFUSABLES for c in word):
            out.append(word.translate(_HOMOGLYPHS))
    return out


def zero_width_splits(text: str) -> list[str]:
    """Latin words with a zero-width character inside ("ig\u200bnore"): joiners between emoji or in scripts that
    use them (ZWNJ in Persian) are not counted."""
    out: list[str] = []
    if text.isascii():
        return out
    for m in re.finditer(rf"[A-Za-z]+(?:[{_ZERO_WIDTH}]+[A-Za-z]+)+", text):
        out.append(_INVISIBLE.sub("", m.group(0)))
    return out
