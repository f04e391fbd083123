from typing import Literal

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
