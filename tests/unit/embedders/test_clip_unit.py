"""clip_unit against its naive reference, clip(nan_to_num(v), 0, 1), bit for bit, NaN and infinities included,
in float64 and float32 (the dtype is kept)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from contextgraph.vectors import clip_unit


@given(hnp.arrays(st.sampled_from([np.float64, np.float32]), hnp.array_shapes(max_dims=2, max_side=12),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=32)))
def test_clip_unit_is_clip_of_nan_to_num(values):
    expected = np.clip(np.nan_to_num(values), 0.0, 1.0)
    got = clip_unit(values)
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(got, expected)
