from typing import Annotated, Literal

import pytest
from pydantic import Field, ValidationError

from contextgraph.tools.spec import Args
from contextgraph.tools.validation import invalid_params


class Sample(Args):
    query: str = Field(min_length=1, max_length=10)
    top_k: int = Field(10, ge=1, le=100)
    phase: Literal["nrem", "rem", "full"] = "full"
    note: str | None = Field(None, max_length=5)


def error_for(arguments):
    with pytest.raises(ValidationError) as info:
        Sample.model_validate(arguments)
    return invalid_params("sample_tool", info.value, Sample.model_json_schema())


def test_bounds_are_named():
    err = error_for({"query": "q", "top_k": 101})
    assert err.data["field"] == "top_k"
    assert (err.data["min"], err.data["max"]) == (1, 100)
    assert "argument 'top_k'" in err.message and "max 100" in err.message


def test_enum_lists_allowed_values():
    err = error_for({"query": "q", "phase": "deep"})
    assert err.data["allowed"] == ["nrem", "rem", "full"]
    assert "'nrem', 'rem', 'full'" in err.message


def test_missing_and_unknown_arguments():
    err = error_for({"top_k": 5})
    assert err.data["field"] == "query" and "missing required argument 'query'" in err.message
    err = error_for({"query": "q", "topk": 5})
    assert "unknown argument 'topk'" in err.message
    assert err.data["allowed_arguments"] == ["note", "phase", "query", "top_k"]


def test_optional_fields_show_their_bounds():
    err = error_for({"query": "q", "note": "too long"})
    assert err.data["max_length"] == 5


def test_every_error_is_reported_and_no_input_is_echoed():
    secret = "s3cr3t-value-that-must-not-echo"
    err = error_for({"query": secret * 3, "top_k": "many"})
    assert [e["field"] for e in err.data["errors"]] == ["query", "top_k"]
    assert secret not in err.message and secret not in repr(err.data)


class Merge(Args):
    ids: list[Annotated[str, Field(min_length=32)]] = Field(min_length=2, max_length=3)


def test_a_list_too_short_is_reported_before_its_items():
    """Issue 38.6: pydantic checks a list's length only after its items validate, so merge_concepts with one
    short id reported the id's 32 characters, not that it needs at least 2 ids."""
    for ids, kind in ((["abc"], "at least 2 items"), (["a" * 32] * 2 + ["b"] * 2, "at most 3 items")):
        with pytest.raises(ValidationError) as info:
            Merge.model_validate({"ids": ids})
        err = invalid_params("merge", info.value, Merge.model_json_schema(), {"ids": ids})
        assert err.message.startswith(f"Invalid arguments for merge: argument 'ids': List should have {kind}")
        assert err.data["field"] == "ids" and (err.data["min_items"], err.data["max_items"]) == (2, 3)
        assert err.data["errors"][0]["field"] == "ids"
    with pytest.raises(ValidationError) as info:  # a list of the right length: its items' errors alone
        Merge.model_validate({"ids": ["a" * 32, "b"]})
    err = invalid_params("merge", info.value, Merge.model_json_schema(), {"ids": ["a" * 32, "b"]})
    assert [e["field"] for e in err.data["errors"]] == ["ids.1"] and err.data["min_length"] == 32
