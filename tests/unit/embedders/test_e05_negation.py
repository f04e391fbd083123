"""E5 cue extraction under negation and hedges (issue 11.7): a negated or hedged cue claims no cause, so it yields
no spans (and no automatic Causal edge); plain cues keep working. Pure text, no model."""

import pytest

from contextgraph.embedders.e05_causal import causal_spans


def sides(text):
    s = causal_spans(text)
    return [text[a:b] for a, b in s.cause], [text[a:b] for a, b in s.effect], s.cues, s.negated


@pytest.mark.parametrize("text", [
    "The table is never locked, so the deploy succeeds.",  # the case: 'never locked' is not 'locked'
    "The deploy did not fail because of the lock.",
    "The outage wasn't caused by the deploy.",
    "Retries no longer lead to duplicate orders.",
    "Unless the cache is cleared, the build fails because of stale files.",
    "The cache was not stale. Therefore the build failed.",  # the cause is the negated sentence before
    "This may lead to data loss.",
    "Perhaps the timeout triggers the retry storm.",
    "It doesn't cause errors.",
    "Neither the lock nor the index causes the slowdown.",
    "The job finished without errors because the queue was empty.",
])
def test_a_negated_or_hedged_cue_claims_no_cause(text):
    cause, effect, cues, negated = sides(text)
    assert (cause, effect, cues) == ([], [], ())
    assert negated  # and says which cue it skipped


@pytest.mark.parametrize(("text", "cause", "effect"), [
    ("The deploy failed because the migration locked the table.", ["the migration locked the table"],
     ["The deploy failed"]),
    ("A stale cache leads to failed builds.", ["A stale cache"], ["failed builds"]),
    ("The cache was stale. Therefore the build failed.", ["The cache was stale"], ["the build failed"]),
    ("Nothing notable here: the outage was caused by a bad deploy.", ["a bad deploy"],
     ["Nothing notable here: the outage was"]),  # 'notable' and 'Nothing' are not negations of the cue
])
def test_plain_cues_still_split(text, cause, effect):
    got_cause, got_effect, cues, negated = sides(text)
    assert (got_cause, got_effect) == (cause, effect) and cues and not negated


def test_only_the_negated_clause_is_dropped():
    text = "The build failed because the cache was stale. The deploy did not fail because of the lock."
    cause, effect, cues, negated = sides(text)
    assert cause == ["the cache was stale"] and effect == ["The build failed"]
    assert cues == ("because",) and negated == ("because of",)
