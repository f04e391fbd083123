from contextgraph.retrieval.query_kind import QueryKind, classify, query_weights


def test_kinds():
    assert classify("how do I reset the cache?").question
    assert classify("os.path.join with a trailing slash").code
    assert classify("parse_args defaults").code
    assert classify("invoice").keyword and not classify("invoice").question
    assert classify("what did we decide yesterday").temporal
    assert classify("meeting notes from last week").temporal
    assert classify("deploy on 2026-11-20").temporal
    assert not classify("Return the number of bytes in the buffer").temporal
    assert classify(None) == QueryKind() == classify("")


def test_temporal_spaces_vote_only_for_time_queries():
    base = {1: 1.0, 2: 0.1, 3: 0.05, 4: 0.05, 6: 0.8}
    topical = query_weights(base, classify("database migration timeouts"), {})
    assert topical[2] == topical[3] == topical[4] == 0.0 and topical[1] == 1.0
    timely = query_weights(base, classify("what broke yesterday"), {})
    assert timely[2] == 0.1
    kept = query_weights(base, classify("database migration timeouts"), {}, temporal_only_when_asked=False)
    assert kept[2] == 0.1


def test_kind_multipliers_apply():
    base = {1: 1.0, 6: 0.8}
    w = query_weights(base, classify("parse_args"), {"code": {6: 2.0}, "question": {1: 3.0}})
    assert w[6] == 1.6 and w[1] == 1.0
