"""The rules issue 12.3 added to PII redaction: AWS secret keys by their name only (a bare 40-character run is as
often a git hash), email addresses behind `pii.redact_emails`, and placeholders never redacted again."""

import pytest

from contextgraph.constitution import constitution
from contextgraph.security.pii import emails_redacted, redact

AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example secret: 40 characters
GIT_HASH = "9fceb02d0ae598e95dc970b74767f19372d61af8"
BASE64_RUN = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0MTIz"  # 40 base64 characters, no key name


@pytest.mark.parametrize("text", [
    f"aws_secret_access_key = {AWS}",  # ~/.aws/credentials
    f"export AWS_SECRET_ACCESS_KEY={AWS}",
    f'AWS_SECRET_ACCESS_KEY="{AWS}"',
    f"AWS_SECRET_KEY: '{AWS}'",
    f'{{"SecretAccessKey": "{AWS}", "AccessKeyId": "AKIAIOSFODNN7EXAMPLE"}}',  # `aws sts` JSON
    f"awsSecretKey={AWS}",
])
def test_aws_secret_keys_next_to_their_name_are_redacted(text):
    out, kinds = redact(text)
    assert AWS not in out
    assert "aws_secret_key" in kinds and "[REDACTED:aws_secret_key]" in out


@pytest.mark.parametrize("text", [
    f"commit {GIT_HASH} fixed the migration",
    f"git show {GIT_HASH}",
    f"sha1: {GIT_HASH}",
    f"the blob is {BASE64_RUN}",
    f"secret={BASE64_RUN}x",  # a key name, but not 40 characters: not an AWS key (nor any other rule's)
])
def test_forty_character_runs_without_an_aws_key_name_survive(text):
    assert redact(text) == (text, [])


def test_emails_are_kept_by_default_as_the_constitution_says():
    assert constitution().get("pii.redact_emails") is False and emails_redacted() is False
    text = "ask alice.smith+release@example.co.uk about it; remote git@github.com:org/repo.git"
    assert redact(text) == (text, [])


@pytest.mark.parametrize(("text", "expected"), [
    ("ask alice.smith+release@example.co.uk about it", "ask [REDACTED:email] about it"),
    ("mail bob@mail.example.com, carol@example.org.", "mail [REDACTED:email], [REDACTED:email]."),
    ("(eve@example.io)", "([REDACTED:email])"),
])
def test_emails_are_redacted_when_switched_on(text, expected):
    out, kinds = redact(text, emails=True)
    assert out == expected and set(kinds) == {"email"}


@pytest.mark.parametrize("text", ["@decorator on line 4", "user@localhost", "a @ b.com", "x@y"])
def test_what_is_not_an_address_is_kept_even_with_emails_on(text):
    assert redact(text, emails=True) == (text, [])


@pytest.mark.parametrize("text", [
    "password: hunter2hunter", f"aws_secret_access_key={AWS}", "SSN 123-45-6789", "bob@example.com",
    "card 4111 1111 1111 1111 and pwd=abcd1234",
])
def test_redacting_twice_gives_the_same_text_and_no_new_kinds(text):
    """The dispatcher redacts an argument and a service may redact the same text again: the second pass must
    neither change it nor report a secret (before, `password: [REDACTED:password]` counted a password again)."""
    once, kinds = redact(text, emails=True)
    assert kinds
    assert redact(once, emails=True) == (once, [])


def test_a_long_run_without_an_address_is_linear():
    """The email pattern must not backtrack quadratically over a long run of address characters."""
    text = "a." * 50_000 + "@"
    assert redact(text, emails=True) == (text, [])
