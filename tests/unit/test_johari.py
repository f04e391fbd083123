import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextgraph.utl.johari import classify

T = 0.5


@pytest.mark.parametrize(
    ("ds", "dc", "expected"),
    [
        (0.2, 0.8, "Open"),
        (0.8, 0.2, "Blind"),
        (0.2, 0.2, "Hidden"),
        (0.8, 0.8, "Unknown"),
        # boundaries: a value must pass the threshold to count as novel / coherent
        (0.5, 0.5, "Hidden"),
        (0.5, 0.51, "Open"),
        (0.51, 0.5, "Blind"),
        (0.51, 0.51, "Unknown"),
        (1.0, 0.0, "Blind"),  # the empty store
    ],
)
def test_table_including_boundaries(ds, dc, expected):
    assert classify(ds, dc, T) == expected


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0.05, 0.95))
def test_matches_the_seed_table(ds, dc, threshold):
    q = classify(ds, dc, threshold)
    assert (q in ("Blind", "Unknown")) == (ds > threshold)
    assert (q in ("Open", "Unknown")) == (dc > threshold)
