"""PII redaction (docs/tools.md): API keys, AWS secret keys, passwords, bearer tokens, SSNs and card numbers (and,
when `pii.redact_emails` says so, email addresses) are replaced by `[REDACTED:type]` before the text is
embedded or stored, so no vector and no record ever holds them. security/free_text.py applies it to every
free-text tool argument.

Text in, (redacted text, kinds found) out; the only input besides the text is the email setting. Patterns are
deliberately specific — a memory server that eats ordinary numbers and words is worse than useless — so card
numbers must pass the Luhn check, and an AWS secret key is recognised only next to its name: a bare run of 40
base64 characters is just as often a git commit hash or a checksum. Idempotent: a placeholder is never matched
again, so text redacted twice (by the dispatcher and again by a service) comes out the same, with no kinds."""

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

_RULES = (
    _Rule("aws_secret_key", re.compile(_AWS_SECRET), group=1),
    _Rule("bearer_token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)"), group=1),
    _Rule("api_key", re.compile(r"\b(?:" + "|".join(_KEY_PREFIXES) + r")\b")),
    _Rule("api_key", re.compile(
        r"(?i)\b(?:api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
        r"\s*[:=]\s*[\"']?([A-Za-z0-9\-._~+/]{12,})"), group=1),
    _Rule("password", re.compile(
        r"(?i)\b(?:password|passwd|pwd|passphrase)\s*[:=]\s*[\"']?" + _PLACEHOLDER + r"([^\s\"',;]{4,})"), group=1),
    _Rule("ssn", re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")),
    _Rule("card_number", re.compile(r"\b(?:\d[ -]?){12,18}\d\b"), accept=_luhn_ok),
)
_EMAIL_RULE = _Rule("email", re.compile(_EMAIL))


def emails_redacted() -> bool:
    """The constitution's choice (`pii.redact_emails`)."""
    return bool(constitution().get("pii.redact_emails"))


def redact(text: str, *, emails: bool | None = None) -> tuple[str, list[str]]:
    """The text with each secret replaced by [REDACTED:kind], and the kinds replaced (one entry per secret).
    `emails`: whether addresses count as secrets; None takes the constitution's setting."""
    found: list[str] = []
    if emails is None:
        emails = emails_redacted()
    for rule in (*_RULES, _EMAIL_RULE) if emails else _RULES:
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
