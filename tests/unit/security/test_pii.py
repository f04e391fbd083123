import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextgraph.security.pii import redact


@pytest.mark.parametrize(("text", "kind", "secret"), [
    ("use key sk-proj-abcdEFGH1234ijklMNOP5678 for the API", "api_key", "sk-proj-abcdEFGH1234ijklMNOP5678"),
    ("AWS id AKIAIOSFODNN7EXAMPLE in config", "api_key", "AKIAIOSFODNN7EXAMPLE"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "api_key", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("API_KEY=abcd1234efgh5678ijkl", "api_key", "abcd1234efgh5678ijkl"),
    ("password: hunter2hunter", "password", "hunter2hunter"),
    ("db pwd='s3cr3t!pass' and more", "password", "s3cr3t!pass"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", "bearer_token", "eyJhbGciOiJIUzI1NiJ9"),
    ("SSN 123-45-6789 on file", "ssn", "123-45-6789"),
    ("card 4111 1111 1111 1111 exp 12/29", "card_number", "4111 1111 1111 1111"),
    ("card 5500-0000-0000-0004", "card_number", "5500-0000-0000-0004"),
])
def test_secrets_are_replaced(text, kind, secret):
    out, kinds = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert kinds == [kind]


def test_context_around_a_secret_is_kept():
    out, _ = redact("password=hunter2hunter then continue")
    assert out == "password=[REDACTED:password] then continue"


@pytest.mark.parametrize("text", [
    "The meeting is at 10:30 on 2026-11-26, room 4111.",
    "Order 1234 5678 9012 3456 is not a valid card (Luhn fails).",
    "Call 555-123-4567 tomorrow.",
    "The password policy requires 12 characters.",
    "def bearer(token): return token",
    "version 1.2.3 of sk-learn",
])
def test_ordinary_text_is_untouched(text):
    assert redact(text) == (text, [])


def test_several_secrets_are_all_counted():
    out, kinds = redact("pwd=abcd1234 and SSN 123-45-6789 and pwd=efgh5678")
    assert sorted(kinds) == ["password", "password", "ssn"]
    assert "abcd1234" not in out and "efgh5678" not in out


@given(st.text(alphabet=st.characters(codec="ascii"), max_size=200))
def test_idempotent_and_never_grows_secrets(text):
    once, _ = redact(text)
    twice, kinds = redact(once)
    assert twice == once and kinds == []
