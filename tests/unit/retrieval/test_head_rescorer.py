import numpy as np
import pytest

from contextgraph.fingerprint import MODALITIES, Sparse
from contextgraph.retrieval import head_rescorer as hr


def pool(n=8, seed=0):
    rng = np.random.default_rng(seed)
    scores = {sp: rng.random(n) for sp in range(1, 14)}
    fused = np.sort(rng.random(n))[::-1] + np.arange(n)[::-1] * 0.01  # already in fused order, no ties
    docs = [Sparse(np.array(sorted({1, 2, 3} if i % 2 else {2, 9}), dtype=np.int32),
                   np.array([1.0] * (3 if i % 2 else 2), dtype=np.float32)) for i in range(n)]
    dense = {}
    for sp in hr.DENSE:
        v = rng.normal(size=(n, 16)).astype(np.float32)
        dense[sp] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return fused, scores, np.array([1, 2, 3]), np.array([1.0, 0.5, 2.0]), docs, dense


def one_hot_model(name, head=5, sign=1.0):
    coef = np.zeros(len(hr.FEATURES))
    coef[hr.FEATURES.index(name)] = sign
    return hr.HeadModel(head, coef)


def test_features_have_one_column_per_name_and_the_fusion_and_coverage_values():
    fused, scores, q, idf, docs, dense = pool()
    head = np.argsort(-fused, kind="stable")[:5]
    x = hr.features(fused, scores, head, q, idf, docs, dense)
    assert x.shape == (5, len(hr.FEATURES))
    col = {n: x[:, j] for j, n in enumerate(hr.FEATURES)}
    assert col["fused"][0] == 1.0 and col["fused_gap"][0] == 0.0
    assert col["head_rr"].tolist() == [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5]
    # docs 1, 3 hold all of {1, 2, 3}; docs 0, 2, 4 only 2
    assert np.allclose(col["cov"], [1 / 3, 1, 1 / 3, 1, 1 / 3])
    assert np.allclose(col["cov_gap"], col["cov"] - 1)
    assert np.allclose(col["idf_cov"], [0.5 / 3.5, 1, 0.5 / 3.5, 1, 0.5 / 3.5])  # term 2's idf is 0.5 of 3.5
    assert np.allclose(col["missing_idf"], [2.0, 0, 2.0, 0, 2.0])  # term 3 (idf 2) is the rarest missing one
    assert np.allclose(col["log_dl"], np.log1p([2, 3, 2, 3, 2]))
    assert np.allclose(col["E1_to_best"][1:], dense[1][head[1:]] @ dense[1][head[0]], atol=1e-6)
    assert np.isclose(col["E1_to_best"][0], float(dense[1][head[0]] @ dense[1][head[1]]), atol=1e-6)


def test_rescore_deals_the_heads_scores_again_and_leaves_the_rest():
    fused = np.array([0.9, 0.8, 0.7, 0.1, 0.05])
    out = hr.rescore(fused, np.array([0, 1, 2]), np.array([0.0, 5.0, 1.0]))
    assert out.tolist() == [0.7, 0.9, 0.8, 0.1, 0.05]
    tied = hr.rescore(fused, np.array([0, 1, 2]), np.zeros(3))  # ties keep the fused order
    assert tied.tolist() == fused.tolist()


def test_a_model_on_coverage_lifts_the_covering_memories_within_its_head_only():
    fused, scores, q, idf, docs, dense = pool()
    out = hr.apply(fused, scores, q, idf, docs, dense, one_hot_model("cov", head=5))
    order = np.argsort(-out, kind="stable").tolist()
    assert order[:5] == [1, 3, 0, 2, 4]
    assert order[5:] == [5, 6, 7]
    assert np.array_equal(out[5:], fused[5:])
    assert sorted(out[:5].tolist()) == sorted(fused[:5].tolist())


def test_fewer_candidates_than_the_models_head_are_left_as_fused():
    fused, scores, q, idf, docs, dense = pool(n=8)
    assert hr.apply(fused, scores, q, idf, docs, dense, one_hot_model("cov", head=9)) is fused
    assert hr.apply(fused, scores, q, idf, docs, dense, one_hot_model("cov", head=8)) is not fused


def test_a_zero_model_changes_nothing():
    fused, scores, q, idf, docs, dense = pool()
    model = hr.HeadModel(5, np.zeros(len(hr.FEATURES)))
    assert np.array_equal(hr.apply(fused, scores, q, idf, docs, dense, model), fused)


def test_head_kind_is_the_modality_most_of_the_head_has():
    e10 = np.zeros((4, 8 + len(MODALITIES)))
    for row, m in enumerate(("code", "text", "code", "code")):
        e10[row, 8 + MODALITIES.index(m)] = 0.4
    assert hr.head_kind(e10, np.array([0, 1, 2]), MODALITIES) == "code"
    assert hr.head_kind(e10, np.array([1]), MODALITIES) == "text"
    assert hr.head_kind(None, np.array([1]), MODALITIES) is None


def test_rescore_head_picks_the_model_of_the_heads_kind_and_leaves_other_kinds_alone():
    fused, scores, q, idf, docs, dense = pool()
    e10 = np.zeros((len(fused), 4 + len(MODALITIES)))
    e10[:, 4 + MODALITIES.index("image")] = 0.5
    models = {"text": one_hot_model("cov")}
    assert hr.rescore_head(fused, scores, q, idf, docs, dense, e10, MODALITIES, models) is fused
    e10[:, 4 + MODALITIES.index("image")] = 0.0
    e10[:, 4 + MODALITIES.index("text")] = 0.5
    assert not np.array_equal(hr.rescore_head(fused, scores, q, idf, docs, dense, e10, MODALITIES, models), fused)


def test_the_shipped_models_load_with_this_modules_features():
    models = hr.default_models()
    assert set(models) == {"text", "code"}
    for m in models.values():
        assert m.coef.shape == (len(hr.FEATURES),) and 2 <= m.head <= 50 and np.isfinite(m.coef).all()


def test_models_fitted_on_other_features_are_refused():
    with pytest.raises(ValueError):
        hr.parse_models({"features": ["fused"], "models": {"text": {"head": 5, "coef": [1.0]}}})
