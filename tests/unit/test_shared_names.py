"""services.dreams.shared_names: which words count as names, and which pairs of memories share one specific
enough to propose a dream link (docs/engine.md#rem)."""

import math

from contextgraph.services.dreams.shared_names import names_by_memory, propose, with_causal_neighbours


def test_names_are_identifiers_hyphenated_names_model_numbers_and_words_never_written_in_lower_case():
    names = names_by_memory({
        "a": "The billing-api calls parse_invoice on every upload; Priya owns it.",
        "b": "Renaming the Pixel 7 test phone, said Priya on Monday.",
        "c": "renaming things is hard; see e.g. the system (below) and chapter II.",
    })
    assert names["a"] == {"billing-api", "parse_invoice", "priya"}
    # "Renaming" is written in lower case elsewhere, Monday is a weekday, II a numeral, e.g. and system( not code
    assert names["b"] == {"pixel 7", "pixel", "priya"}
    assert names["c"] == set()


def test_pairs_sharing_a_specific_name_are_proposed_with_its_idf_and_linked_or_common_ones_are_not():
    names = {f"m{i}": set() for i in range(20)}
    names["m0"] |= {"ledger-sync"}
    names["m1"] |= {"ledger-sync", "tomás"}
    names["m2"] |= {"tomás"}
    for i in range(3, 13):  # held by 10 of 20: common
        names[f"m{i}"] |= {"slack"}
    names["m0"] |= {"slack"}
    linked = {("m1", "m2")}
    out = propose(names, lambda a, b: (a, b) in linked or (b, a) in linked, max_share=0.05, min_common=8,
                  min_evidence=1.0)
    assert [(p.a, p.b, p.shared) for p in out] == [("m0", "m1", ("ledger-sync",))]
    assert out[0].evidence == round(math.log(20 / 2), 6)
    assert propose(names, lambda a, b: False, 0.05, 8, min_evidence=3.0) == []  # log(10) < 3


def test_a_shared_causal_neighbour_counts_as_a_shared_name():
    names = with_causal_neighbours({"a": set(), "b": set(), "c": set(), "d": set()}, {"a": {"x"}, "b": {"x"}})
    (p,) = propose(names, lambda a, b: False, 0.05, 8, min_evidence=0.0)
    assert (p.a, p.b, p.shared) == ("a", "b", ("causal:x",))


def test_a_wake_request_stops_the_name_extraction_between_memories():
    texts = {f"m{i}": f"ledger-sync note {i} by Tomás" for i in range(50)}
    looks = []

    def stop():
        looks.append(1)
        return len(looks) > 3

    assert names_by_memory(texts, stop) == {}
    assert len(looks) == 4  # it looked before each memory and stopped at the fourth
    assert names_by_memory(texts)["m0"] == {"ledger-sync", "tomás"}
