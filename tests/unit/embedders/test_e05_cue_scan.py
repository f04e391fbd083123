"""E5's cue scan: `_cue_matches` (the regex tried only where a cue can begin) returns exactly what the plain
`_CUES.finditer` scan returns, on generated texts dense in cue phrases, near-misses and case variants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contextgraph.embedders import e05_causal
from contextgraph.embedders.e05_causal import _CUES, _cue_matches, _sentences

CUE_PHRASES = (
    "because of", "because", "due to", "owing to", "thanks to", "caused by", "triggered by", "driven by",
    "as a result of", "as a consequence of", "results from", "resulted from", "stems from", "stemming from",
    "since", "since 2020", "<-", "←", "leads to", "led to", "leading to", "results in", "resulting in", "causes",
    "caused", "causing", "triggers", "triggering", "cause", "the cause", "a root cause", "cause of", "cause is",
    "so that", "in order to", "that is why", "which is why", "this is why", "that's why", "that’s why",
    "as a result", "as a consequence", "therefore", "hence", "thus", "consequently", ", so", ",so", "->", "=>", "→",
)
FILLER = ("the", "a", "build", "failed", "also", "sofa", "inside", "becausee", "Because", "THEREFORE", "Thus",
          "x", "1", ".", ",", "!", "?", "\n", "lock", "cache", "so", "in", "as", "that", "led", "-", "<", "=")
SEPARATORS = ("", " ", "  ", "\t", ". ", ", ")

texts = st.lists(st.tuples(st.sampled_from(CUE_PHRASES + FILLER), st.sampled_from(SEPARATORS)), max_size=40).map(
    lambda parts: "".join(word + sep for word, sep in parts))


def spans(matches) -> list[tuple[tuple[int, int], str | None]]:
    return [(m.span(), m.lastgroup) for m in matches]


@settings(max_examples=400, deadline=None)
@given(texts)
def test_cue_scan_equals_the_plain_scan(text):
    assert spans(_cue_matches(text, 0, len(text))) == spans(_CUES.finditer(text))
    for lo, hi in _sentences(text):
        assert spans(_cue_matches(text, lo, hi)) == spans(_CUES.finditer(text, lo, hi))


def test_every_cue_alternative_can_start_where_the_prefilter_looks():
    """Each alternative of _CUES matched on its own is found by the fast scan (a cue missing from _CUE_START
    would be silently dropped)."""
    found_groups = set()
    for phrase in CUE_PHRASES:
        for text in (f"x {phrase} y", f"X {phrase.upper()} Y"):
            assert spans(_cue_matches(text, 0, len(text))) == spans(_CUES.finditer(text))
            found_groups.update(m.lastgroup for m in _CUES.finditer(text))
    alternatives = len(e05_causal._EFFECT_FIRST) + len(e05_causal._CAUSE_FIRST)
    assert len(found_groups) == alternatives, "add a phrase for the new cue alternative to CUE_PHRASES"
