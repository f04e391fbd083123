"""E5's directional comparison crosses the halves (SPEC §6: effect↔cause): a "why" query's cause half against a
memory's effect half, a "what happens" query's effect half against its cause half. So the score of A against B
is not B's against A, while the undirected comparison (restatement) stays symmetric and scores a memory 1 against
itself."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from contextgraph.embedders.e05_causal import CausalEmbedder, query_direction

HIDDEN = 8


class _Backbone:  # the similarity needs only the hidden size
    hidden_size = HIDDEN
    model_name = "test"


def _e5() -> CausalEmbedder:
    return CausalEmbedder(_Backbone())  # type: ignore[arg-type]


def _pack(cause: np.ndarray, effect: np.ndarray) -> np.ndarray:
    unit = [v / np.linalg.norm(v) for v in (cause, effect)]
    return (np.concatenate(unit) / np.sqrt(2.0)).astype(np.float32)


_half = arrays(np.float64, HIDDEN, elements=st.floats(-1, 1, allow_nan=False)).filter(
    lambda v: np.linalg.norm(v) > 0.1)


def _naive(query: np.ndarray, doc: np.ndarray, direction: str) -> float:
    """The reference: cosines of the named halves, written out."""
    qc, qe, dc, de = query[:HIDDEN], query[HIDDEN:], doc[:HIDDEN], doc[HIDDEN:]

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    if direction == "forward":
        return cos(qe, dc)
    if direction == "backward":
        return cos(qc, de)
    return max(cos(qc, dc), cos(qe, de))


@settings(max_examples=60, deadline=None)
@given(_half, _half, _half, _half)
def test_directions_match_the_naive_reference_and_are_dual(a_cause, a_effect, b_cause, b_effect):
    e5 = _e5()
    a, b = _pack(a_cause, a_effect), _pack(b_cause, b_effect)
    for direction in ("forward", "backward", "both"):
        assert e5.similarity(a, [b], direction)[0] == pytest.approx(_naive(a, b, direction), abs=1e-5)
    # A leading to B is B explained by A: forward(A, B) = backward(B, A)
    assert e5.similarity(a, [b], "forward")[0] == pytest.approx(e5.similarity(b, [a], "backward")[0], abs=1e-5)
    # undirected: symmetric, and a memory restates itself fully
    assert e5.similarity(a, [b])[0] == pytest.approx(e5.similarity(b, [a])[0], abs=1e-5)
    assert e5.similarity(a, [a])[0] == pytest.approx(1.0, abs=1e-5)
    causes, effects = e5.restatement(a, [b])
    assert causes[0] == pytest.approx(_naive(_pack(a_cause, a_cause), _pack(b_cause, b_cause), "both"), abs=1e-5)
    assert max(causes[0], effects[0]) == pytest.approx(e5.similarity(a, [b])[0], abs=1e-5)


def test_a_chain_scores_differently_each_way():
    """Unit vectors along axes: A = x → y, B = y → z. B continues A (A's effect is B's cause), not the reverse."""
    e5 = _e5()
    x, y, z = np.eye(HIDDEN)[:3]
    a, b = _pack(x, y), _pack(y, z)
    assert e5.similarity(a, [b], "forward")[0] == pytest.approx(1.0)
    assert e5.similarity(b, [a], "forward")[0] == pytest.approx(0.0, abs=1e-6)
    assert e5.similarity(b, [a], "backward")[0] == pytest.approx(1.0)
    assert e5.similarity(a, [], "backward").shape == (0,)


# ---- on real causal text (the shipped MiniLM) -----------------------------------------------------------------

DEPLOY = "The deploy failed because the migration locked the table."
LOCK = "The migration locked the table because an index rebuild ran during business hours."
MENTION = "We deploy the billing service every Friday afternoon."
UNRELATED = "Heavy rain leads to flooded basements in the old town."


def test_real_text_is_asymmetric(memory, backbone):
    e5 = CausalEmbedder(backbone)
    deploy, lock = e5.embed(memory(DEPLOY)), e5.embed(memory(LOCK))
    # LOCK explains DEPLOY's cause (its effect is "the migration locked the table"); DEPLOY explains nothing of LOCK
    explains = e5.similarity(deploy, [lock], "backward")[0]
    reverse = e5.similarity(lock, [deploy], "backward")[0]
    assert explains > reverse + 0.2, (explains, reverse)
    assert e5.similarity(lock, [deploy], "forward")[0] == pytest.approx(explains, abs=1e-5)
    assert e5.similarity(deploy, [lock])[0] == pytest.approx(e5.similarity(lock, [deploy])[0], abs=1e-5)


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ("Why did the deploy fail?", DEPLOY),
        ("What caused the table lock?", LOCK),
        ("What happens when the migration locks the table?", DEPLOY),
    ],
)
def test_a_directional_query_finds_the_memory_stating_the_cause_or_effect(memory, backbone, query, answer):
    """A "why X" query ranks the memory that states X's cause above ones that merely mention X's topic; a "what
    happens" query the memory that states the consequence."""
    e5 = CausalEmbedder(backbone)
    texts = [DEPLOY, LOCK, MENTION, UNRELATED]
    scores = e5.similarity(e5.embed(memory(query)), [e5.embed(memory(t)) for t in texts], query_direction(query))
    assert query_direction(query) != "both"
    assert texts[int(np.argmax(scores))] == answer, dict(zip(texts, scores.round(3)))
