import math
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from contextgraph.tools.tfidf import TfIdfIndex, stem, tokens

DOCS = {
    "store_memory": tokens("store memory save a memory with a rationale"),
    "search_graph": tokens("search graph find memories by meaning"),
    "tool_load": tokens("tool load activate tools"),
    "forget_concept": tokens("forget concept delete a memory soft delete undo"),
}


def naive_scores(docs, query):
    """TF-IDF cosine written out longhand: the reference the index must match."""
    n = len(docs)
    df = Counter(t for toks in docs.values() for t in set(toks))
    idf = {t: math.log((1 + n) / (1 + d)) + 1 for t, d in df.items()}

    def vec(toks):
        v = {t: c * idf[t] for t, c in Counter(toks).items() if t in idf}
        norm = math.sqrt(sum(x * x for x in v.values()))
        return {t: x / norm for t, x in v.items()} if norm else {}

    q = vec(tokens(query))
    return {k: sum(w * vec(toks).get(t, 0.0) for t, w in q.items()) for k, toks in docs.items()}


def test_stemming_folds_plurals_and_verb_forms():
    assert stem("memories") == stem("memory") == "memory"
    assert stem("loading") == stem("loads") == "load"
    assert stem("process") == "process"  # double s is kept
    assert tokens("tool_find: Find the TOOLS") == ["tool", "find", "find", "tool"]


def test_ranks_the_obvious_tool_first():
    index = TfIdfIndex(DOCS)
    assert index.search("delete a memory", 4)[0][0] == "forget_concept"
    assert index.search("loading tools", 4)[0][0] == "tool_load"
    assert index.search("find memories", 4)[0][0] == "search_graph"


def test_limit_order_and_no_zero_scores():
    index = TfIdfIndex(DOCS)
    hits = index.search("memory", 2)
    assert len(hits) == 2
    assert hits[0][1] >= hits[1][1]
    assert index.search("kuramoto", 5) == []
    assert index.search("the of and", 5) == []  # only stop words


def test_restricting_to_keys():
    index = TfIdfIndex(DOCS)
    assert [k for k, _ in index.search("memory", 5, keys=["tool_load", "store_memory"])] == ["store_memory"]


@given(st.lists(st.sampled_from(["store", "memory", "search", "graph", "tool", "load", "forget", "undo", "x"]),
                min_size=1, max_size=6))
def test_matches_naive_reference(words):
    query = " ".join(words)
    index = TfIdfIndex(DOCS)
    expected = {k: s for k, s in naive_scores(DOCS, query).items() if s > 0}
    got = dict(index.search(query, 10))
    assert got.keys() == expected.keys()
    for k in got:
        assert math.isclose(got[k], expected[k], rel_tol=1e-9)
