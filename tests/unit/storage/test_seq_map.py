"""SeqMap against a dict: the seq → row maps of the binary and sparse indexes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contextgraph.storage.seq_map import SeqMap

ops = st.lists(st.tuples(st.sampled_from(["set", "pop"]), st.integers(0, 5_000), st.integers(0, 10_000)),
               max_size=200)


@given(ops)
def test_seq_map_behaves_like_a_dict(steps):
    mine, ref = SeqMap(), {}
    for op, seq, at in steps:
        if op == "set":
            mine[seq] = at
            ref[seq] = at
        else:
            assert mine.pop(seq) == ref.pop(seq, None)
        assert len(mine) == len(ref)
    for seq in range(0, 5_001, 7):
        assert mine.get(seq) == ref.get(seq)
        assert (seq in mine) == (seq in ref)


@given(st.lists(st.integers(0, 100_000), unique=True, max_size=300))
def test_of_maps_each_seq_to_its_place(seqs):
    m = SeqMap.of(seqs)
    assert len(m) == len(seqs)
    assert all(m.get(s) == i for i, s in enumerate(seqs))
    assert m.get(100_001) is None and m.get(-1) is None
