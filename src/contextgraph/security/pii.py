"""PII redaction (docs/tools.md): API keys, AWS secret keys, passwords, bearer tokens, SSNs, card numbers, phone
numbers (as `pii.redact_phones` says) and email addresses (as `pii.redact_emails` says) are replaced by
`[REDACTED:type]` before the text is embedded or stored, so no vector and no record ever holds them.
security/free_text.py applies it to every free-text tool argument, and `redact_identifier` to every identifier
a client names.

Text in, (redacted text, kinds found) out; the only inputs besides the text are the two settings. Patterns are
deliberately specific — a memory server that eats ordinary numbers and words is worse than useless — so card
numbers must pass the Luhn check, an AWS secret key is recognised only next to its name (a bare run of 40
base64 characters is just as often a git commit hash or a checksum), and a phone number only as people write
one: a bare run of digits is as often a timestamp, an id or a literal in code. Idempotent: a placeholder is
never matched again, so text redacted twice (by the dispatcher and again by a service) comes out the same,
with no kinds."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from contextgraph.constitution import constitution

_KEY_PREFIXES = (
    r"sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}",  # OpenAI / Anthropic style
    r"AKIA[0-9A-Z]{16}",  # AWS access key id
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"xox[abpr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"AIza[0-9A-Za-z_\-]{35}",  # Google API key
    r"glpat-[A-Za-z0-9_\-]{20,}",  # GitLab
)


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    # Which group holds the secret (0 = the whole match); text outside it (e.g. "password=") is kept.
    group: int = 0
    accept: Callable[[str], bool] | None = None


def _luhn_ok(candidate: str) -> bool:
    digits = [int(c) for c in candidate if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_PLACEHOLDER = r"(?!\[REDACTED:)"  # a value that is already a placeholder is not a secret again

# aws_secret_access_key / AWS_SECRET_ACCESS_KEY / AWSSecretKey / SecretAccessKey (JSON, env, ini, YAML), then
# exactly 40 characters of AWS's base64 alphabet: the name is what tells a key from a 40-character git hash.
_AWS_SECRET = (r"(?i)(?:\baws_?secret\w*|\bsecret_?access_?key)[\"']?\s*[:=]\s*[\"']?"
               r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])")
# Starts only where no address character precedes it (linear time on long runs); the domain needs a dot and a
# letters-only last label, so "user@host" and "@decorator" stay.
_EMAIL = r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"

# International: a + and 8-15 digits in groups (an optional "(0)" trunk prefix, a group in parentheses); the
# + must not follow a word or digit, so offsets (+05:30 after a time) and exponents (1e+10) stay.
_PHONE_INTL = (r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(0\))?(?:[ .-]?\(?\d{1,4}\)?){1,6}"
               r"(?![\w-]|[.:]\d)")
# North American with its area code: "(415) 555-0100", or "415-555-0100" / "415.555.0100" with one separator
# throughout. Area code and exchange start with 2-9. Groups joined by spaces alone are not taken: "256 512 1024"
# is far more often a list of numbers than a phone.
_PHONE_NANP = (r"(?<![\w.+-])(?:\([2-9]\d{2}\) ?[2-9]\d{2}-|[2-9]\d{2}([-.])[2-9]\d{2}\1)\d{4}"
               r"(?![\w-]|[.:]\d)")


def _phone_digits_ok(candidate: str) -> bool:
    digits = sum(c.isdigit() for c in candidate) - candidate.count("(0)")
    return 8 <= digits <= 15


_RULES = (
    _Rule("aws_secret_key", re.compile(_AWS_SECRET), group=1),
    _Rule("bearer_token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)"), group=1),
    _Rule("api_key", re.compile(r"\b(?:" + "|".join(_KEY_PREFIXES) + r")\b")),
    _Rule("api_key", re.compile(
        r"(?i)\b(?:api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
        r"\s*[:=]\s*[\"']?([A-Za-z0-9\-._~+/]{12,})"), group=1),
    _Rule("password", re.compile(
        r"(?i)\b(?:password|passwd|pwd|passphrase)\s*[:=]\s*[\"']?" + _PLACEHOLDER + r"([^\s\"',;]{4,})"), group=1),
    # an underscore ends it too (user_123-45-6789 in an identifier), where \b would not
    _Rule("ssn", re.compile(r"(?<![A-Za-z0-9])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![A-Za-z0-9])")),
    _Rule("card_number", re.compile(r"\b(?:\d[ -]?){12,18}\d\b"), accept=_luhn_ok),
)
_EMAIL_RULE = _Rule("email", re.compile(_EMAIL))
# after the card rule: a Luhn-valid run of digits with a + before it is a card's number, not a phone's
_PHONE_RULES = (_Rule("phone", re.compile(_PHONE_INTL), accept=_phone_digits_ok),
                _Rule("phone", re.compile(_PHONE_NANP)))


def emails_redacted() -> bool:
    """The constitution's choice (`pii.redact_emails`)."""
    return bool(constitution().get("pii.redact_emails"))


def phones_redacted() -> bool:
    """The constitution's choice (`pii.redact_phones`)."""
    return bool(constitution().get("pii.redact_phones"))


def redact_identifier(value: str) -> tuple[str, list[str]]:
    """An identifier a client chose (a session id, a tool or argument name it asked for) with every kind
    redacted, emails and phones whatever the settings: it is a key or a name, never content to recall."""
    return redact(value, emails=True, phones=True)


def redact(text: str, *, emails: bool | None = None, phones: bool | None = None) -> tuple[str, list[str]]:
    """The text with each secret replaced by [REDACTED:kind], and the kinds replaced (one entry per secret).
    `emails` / `phones`: whether addresses / phone numbers count as secrets; None takes the constitution's
    setting."""
    found: list[str] = []
    if emails is None:
        emails = emails_redacted()
    if phones is None:
        phones = phones_redacted()
    rules = (*_RULES, *(_PHONE_RULES if phones else ()), *((_EMAIL_RULE,) if emails else ()))
    for rule in rules:
        def replace(match: re.Match[str], rule: _Rule = rule) -> str:
            secret = match.group(rule.group)
            if rule.accept is not None and not rule.accept(secret):
                return match.group(0)
            found.append(rule.kind)
            start, end = match.span(rule.group)
            whole_start = match.start(0)
            whole = match.group(0)
            return whole[: start - whole_start] + f"[REDACTED:{rule.kind}]" + whole[end - whole_start:]

        text = rule.pattern.sub(replace, text)
    return text, found


def shown_identifier(value: str, limit: int) -> str:
    """An identifier the server does not know (an unknown tool or argument name), as an error message or a log
    line may show it: redacted (before it is cut, so a secret is not cut past recognition) and cut to `limit`
    characters, so a name of megabytes is not sent back or logged whole."""
    text, _kinds = redact_identifier(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
