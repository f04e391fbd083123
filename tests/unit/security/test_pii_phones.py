"""Phone numbers in PII redaction: written the way people write them (international with a +, or a North American
number with its area code in parentheses or its groups joined by dashes or dots), and never a number that only
looks like digits: versions, dates, timestamps, UUIDs, hex ids, IP addresses and code's numeric literals stay."""

import pytest

from contextgraph.constitution import constitution
from contextgraph.security.pii import redact, redact_identifier


@pytest.mark.parametrize("text, expected", [
    ("call +1 415 555 0100 tonight", "call [REDACTED:phone] tonight"),
    ("call +1-415-555-0100.", "call [REDACTED:phone]."),
    ("on-call: +14155550100", "on-call: [REDACTED:phone]"),
    ("office +44 20 7946 0958, ext 4", "office [REDACTED:phone], ext 4"),
    ("London +44 (0)20 7946 0958", "London [REDACTED:phone]"),
    ("Paris +33 1 23 45 67 89", "Paris [REDACTED:phone]"),
    ("Berlin +49 30 1234567", "Berlin [REDACTED:phone]"),
    ("US +1 (415) 555-0100", "US [REDACTED:phone]"),
    ("(415) 555-0100 is the desk", "[REDACTED:phone] is the desk"),
    ("desk (415)555-0100", "desk [REDACTED:phone]"),
    ("call 415-555-0100 or 212.555.0199", "call [REDACTED:phone] or [REDACTED:phone]"),
])
def test_phone_numbers_are_redacted(text, expected):
    out, kinds = redact(text)
    assert out == expected and set(kinds) == {"phone"}


@pytest.mark.parametrize("text", [
    "upgraded numpy 1.26.4 -> 2.1.3 and python 3.11.9",  # versions
    "released 2024-01-15, patched 2024.01.16 and 15/01/2024",  # dates
    "at 2024-01-15T10:30:00+05:30 and 2024-01-15T10:30:00.123456Z",  # ISO timestamps with offsets
    "epoch 1700000000 and 1700000000123 ms",  # unix times: bare digit runs are never phones
    "id 123e4567-e89b-12d3-a456-426614174000 and 12345678-1234-5678-1234-567812345678",  # UUIDs
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8, object 0x7f3a2b1c4d5e",  # hex ids
    "hosts 192.168.100.200, 10.0.0.1:8080 and 255.255.255.0",  # IP addresses
    "ip 203.555.0100.7 is not an address either",  # four dotted groups
    "x = 4155550100; y = -2125550199; z = 1234567890 * 3",  # numeric literals in code
    "sizes = [256, 512, 1024]; dims 256 512 1024; shape (384, 768)",  # lists of numbers
    "range(200, 300) and 415-555 and 555-0100",  # too short for a number with its area code
    "tolerance 1e+10, offset +05:30, delta +3.5, count +1200",  # signed numbers
    "SSN-like 078-05-1120 is the ssn rule's, card 4111 1111 1111 1111 the card rule's",
    "matrix 1-800-flowers and ISBN 978-3-16-148410-0",  # words, ISBNs
])
def test_numbers_that_are_not_phones_are_kept(text):
    out, kinds = redact(text)
    assert "phone" not in kinds and "[REDACTED:phone]" not in out


def test_phones_are_redacted_by_default_as_the_constitution_says():
    assert constitution().get("pii.redact_phones") is True


def test_phones_can_be_kept():
    text = "call +1 415 555 0100"
    assert redact(text, phones=False) == (text, [])


def test_phone_redaction_is_idempotent():
    once, kinds = redact("call +1 415 555 0100 or (212) 555-0199")
    assert kinds == ["phone", "phone"] and redact(once) == (once, [])


def test_identifiers_lose_every_kind_emails_and_phones_included():
    """A session id is a key, not content to recall: nothing personal in it is kept, whatever the settings."""
    assert redact_identifier("user-078-05-1120") == ("user-[REDACTED:ssn]", ["ssn"])
    assert redact_identifier("alice@example.com") == ("[REDACTED:email]", ["email"])
    assert redact_identifier("tel +14155550100") == ("tel [REDACTED:phone]", ["phone"])
    assert redact_identifier("user_078-05-1120_a") == ("user_[REDACTED:ssn]_a", ["ssn"])
    assert redact_identifier("sprint-42") == ("sprint-42", [])
