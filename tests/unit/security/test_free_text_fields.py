"""Free-text tool arguments (issue 12.3): every string argument of every tool is either marked free text, and so
redacted by the dispatcher, or an identifier named here on purpose; and the redaction of an argument model."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from contextgraph.security.free_text import (
    FREE_TEXT,
    IDENTIFIER,
    REDACTED_ON_STORE,
    Redaction,
    free_text_fields,
    redact_arguments,
    report_redactions,
)
from contextgraph.tools.catalog import CATEGORY_MODULES

# String arguments that are matched exactly, not read: ids and hashes the server made. Redacting one would only
# break the lookup it is for. Identifiers a client names freely (session ids, tool names) are marked IDENTIFIER;
# anything else that takes a string is free text and must carry the marker.
IDENTIFIERS = {"node_id", "memory_id", "source_id", "target_id", "vertex_id", "source_node_ids", "link_to",
               "citation_tag", "reversal_hash",
               # issue 18: omni_infer's memory ids, test_recall_accuracy's expected ids, reload_manifest's file path
               "source", "target", "expected_node_ids", "path",
               # issue 15: stored vectors, profiles, north stars and goals, all looked up by id
               "query_vector_id", "result_vector_id", "profile_id", "revert_to", "parent_goal_id"}
SPECS = [spec for module in CATEGORY_MODULES for spec in module.TOOLS]


def _takes_text(annotation) -> bool:
    """Whether a value of this type can be a caller's string (Literal choices cannot)."""
    if annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return False
    if origin is Annotated:
        return _takes_text(typing.get_args(annotation)[0])
    if origin in (list, tuple, set, typing.Union, types.UnionType):
        return any(_takes_text(arg) for arg in typing.get_args(annotation))
    return False


def _string_fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    found = []
    for name, info in model.model_fields.items():
        if _takes_text(info.annotation):
            found.append(prefix + name)
        nested = [a for a in (info.annotation, *typing.get_args(info.annotation))
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        for sub in nested:
            found += _string_fields(sub, f"{prefix}{name}.")
    return found


def test_every_string_argument_is_free_text_or_a_named_identifier():
    unclassified = [f"{spec.name}.{path}" for spec in SPECS for path in _string_fields(spec.args)
                    if path not in free_text_fields(spec.args) and path.rsplit(".", 1)[-1] not in IDENTIFIERS]
    assert unclassified == []


def test_the_fields_issue_12_names_are_free_text():
    fields = {spec.name: free_text_fields(spec.args) for spec in SPECS}
    assert {"content", "rationale", "tags"} <= fields["store_memory"].keys()
    assert {"content", "rationale", "tags"} <= fields["inject_context"].keys()
    assert {"annotations.tags", "annotations.notes", "annotations.related_concepts"} <= fields["annotate_node"].keys()
    assert {"target_name", "rationale"} <= fields["merge_concepts"].keys()
    assert "rationale" in fields["forget_concept"] and "rationale" in fields["boost_importance"]
    # the use-case redacts these itself and stores the kinds on the record
    assert {p for p, m in fields["store_memory"].items() if m.redacted_on_store} == {"content", "rationale"}


class _Notes(BaseModel):
    model_config = ConfigDict(frozen=True)
    text: Annotated[str | None, FREE_TEXT] = None
    kind: str = "plain"


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True)
    body: Annotated[str, REDACTED_ON_STORE]
    tags: Annotated[list[str], FREE_TEXT] = []
    note: Annotated[str | None, FREE_TEXT] = None
    nested: _Notes = _Notes()
    node_id: str = "0123"


def test_redact_arguments_replaces_marked_fields_nested_ones_too_and_reports_where():
    args = _Args(body="SSN 123-45-6789", tags=["ok", "pwd=abcd1234"], note=None,
                 nested=_Notes(text="card 4111 1111 1111 1111"), node_id="123-45-6789")
    out, found = redact_arguments(args)
    assert out.tags == ["ok", "pwd=[REDACTED:password]"]
    assert out.nested.text == "card [REDACTED:card_number]"
    assert out.body == "SSN 123-45-6789"  # the use-case's to redact (and record)
    assert out.node_id == "123-45-6789"  # not free text
    assert args.tags == ["ok", "pwd=abcd1234"]  # the validated model itself is left as it was
    assert sorted(found, key=lambda r: r.field) == [
        Redaction("body", "ssn"), Redaction("nested.text", "card_number"), Redaction("tags", "password")]


def test_nothing_to_redact_returns_the_same_model():
    args = _Args(body="fine", tags=["a"], note="plain words")
    assert redact_arguments(args) == (args, [])


@pytest.mark.parametrize(("payload", "expected"), [
    ({"id": "x"}, {"id": "x", "redacted": ["password", "ssn"], "redacted_fields": ["rationale", "tags"]}),
    ({"redacted": ["card_number", "ssn"]},  # what store_memory's service reported itself
     {"redacted": ["card_number", "password", "ssn"], "redacted_fields": ["rationale", "tags"]}),
])
def test_report_merges_with_what_the_service_reported(payload, expected):
    found = [Redaction("tags", "password"), Redaction("rationale", "ssn"), Redaction("tags", "password")]
    assert report_redactions(payload, found) == expected


def test_report_leaves_a_clean_answer_alone():
    payload = {"id": "x"}
    assert report_redactions(payload, []) is payload


def test_an_identifier_loses_emails_and_phones_whatever_the_settings():
    class Ids(BaseModel):
        model_config = ConfigDict(frozen=True)
        session_id: Annotated[str | None, IDENTIFIER] = None
        note: Annotated[str | None, FREE_TEXT] = None

    args, found = redact_arguments(Ids(session_id="alice@example.com +1 415 555 0100", note="alice@example.com"))
    assert args.session_id == "[REDACTED:email] [REDACTED:phone]"
    assert args.note == "alice@example.com"  # free text keeps addresses: pii.redact_emails is false
    assert {(r.field, r.kind) for r in found} == {("session_id", "email"), ("session_id", "phone")}
