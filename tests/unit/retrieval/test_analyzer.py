"""The shared lexical analyzer (SPEC D21): identifiers split and kept whole, light stemming, stopwords out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contextgraph.retrieval.analyzer import analyze, stem, term_set


def test_snake_camel_and_dotted_identifiers_split_and_kept_whole():
    assert analyze("parseHTTPResponse") == ["parsehttpresponse", "pars", "http", "respons"]
    assert analyze("resp_body") == ["resp_body", "resp", "bodi"]
    assert analyze("os.path.join") == ["os.path.join", "os", "path", "join"]
    assert analyze("__init__") == ["init"]  # dunder: not a compound, just the word


def test_prose_is_lightly_stemmed_and_stopwords_dropped():
    assert analyze("invoices") == analyze("invoice") == ["invoic"]
    assert analyze("The running of the tests") == ["run", "test"]
    assert term_set("caching layers") == term_set("cache layer")


def test_numbers_and_versions():
    assert analyze("Python 3.11.2") == ["python", "3.11.2", "3", "11", "2"]


def test_stem_leaves_short_and_non_alpha_words():
    assert stem("gpu") == "gpu" and stem("utf8") == "utf8"


@given(st.text(max_size=200))
def test_terms_are_lowercase_nonempty_and_deterministic(text):
    terms = analyze(text)
    assert terms == analyze(text)
    assert all(t and t == t.lower() for t in terms)
