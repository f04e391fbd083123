"""The explicit-causal-link rule without the transformer (docs/storage.md#explicit-causal-links): which side of a
cue a stored memory is matched to, the floor and margin, one memory per side, and the "So …" opening."""

import numpy as np
import pytest

from contextgraph.embedders.e05_causal import causal_spans
from contextgraph.services.memory.causal_links import LinkRule, continuation_cue

RULE = LinkRule(min_cosine=0.6, min_margin=0.05, continuation_window=3600.0, continuation_weight=0.7)


def unit(*xs):
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


CAUSE, EFFECT = unit(1, 0, 0), unit(0, 1, 0)  # the new memory's clause vectors
SPANS = causal_spans("The deploy failed because the migration timed out.")


def test_a_memory_stating_the_cause_clause_is_the_cause_and_one_stating_the_effect_is_the_effect():
    found = RULE.clause_matches(SPANS, CAUSE, EFFECT, [("cause", unit(0.9, 0.1, 0.1)), ("effect", unit(0.1, 0.9, 0))])
    assert {(m.direction, m.other) for m in found} == {("in", "cause"), ("out", "effect")}
    assert all(m.cue == "because" and m.margin > 0.6 for m in found)


def test_below_the_floor_or_the_margin_nothing_is_matched():
    weak = unit(0.5, 0.2, 0.84)  # cosine 0.5 with the cause clause
    both = unit(0.7, 0.7, 0.14)  # as near the effect clause as the cause clause: a restatement of both
    assert RULE.clause_matches(SPANS, CAUSE, EFFECT, [("weak", weak), ("both", both)]) == []


def test_the_best_memory_per_side_is_the_one_matched():
    found = RULE.clause_matches(SPANS, CAUSE, EFFECT, [("near", unit(0.8, 0.1, 0.5)), ("nearer", unit(0.95, 0, 0.3))])
    assert [m.other for m in found] == ["nearer"]


def test_a_side_no_cue_named_is_never_matched():
    """"Therefore B" alone names an effect only; its cause half is the whole text, not a clause."""
    spans = causal_spans("Therefore the on-call raised the timeout.")
    assert spans.cues and not spans.cause
    assert RULE.clause_matches(spans, CAUSE, EFFECT, [("whole", unit(1, 0, 0))]) == []


def test_a_negated_link_names_no_side():
    spans = causal_spans("The deploy did not fail because the migration timed out.")
    assert RULE.clause_matches(spans, CAUSE, EFFECT, [("cause", unit(1, 0, 0))]) == []


@pytest.mark.parametrize(("text", "cue"), [
    ("So the on-call raised the timeout.", "so"),
    ("so, we rolled back.", "so"),
    ("And so the harvest was delayed.", "so"),
    ("Therefore the nurse started an IV drip.", "therefore"),
    ("As a result  the ferry left early.", "as a result"),
    ("That's why the pump was replaced.", "that's why"),
    ("So far the cache is fine.", None),
    ("So-called hot fixes are risky.", None),
    ("So that the pods restart, we drain them.", None),
    ("The deploy failed, so we rolled back.", None),  # a cue inside the memory: its own clauses, not a continuation
    ("So the on-call did not raise the timeout.", None),
    ("So the on-call might raise the timeout.", None),
])
def test_continuation_cue(text, cue):
    assert continuation_cue(text) == cue


def test_negation_in_a_later_sentence_does_not_cancel_the_opening():
    assert continuation_cue("So we raised the timeout. It did not help.") == "so"
