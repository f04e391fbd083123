"""PII redaction (SPEC §10): API keys, passwords, bearer tokens, SSNs and card numbers are replaced by
`[REDACTED:type]` before the content is embedded or stored, so no vector and no record ever holds them.

Pure: text in, (redacted text, kinds found) out. Patterns are deliberately specific — a memory server that
eats ordinary numbers and words is worse than useless — and card numbers must pass the Luhn check."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

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


_RULES = (
    _Rule("bearer_token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)"), group=1),
    _Rule("api_key", re.compile(r"\b(?:" + "|".join(_KEY_PREFIXES) + r")\b")),
    _Rule("api_key", re.compile(
        r"(?i)\b(?:api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
        r"\s*[:=]\s*[\"']?([A-Za-z0-9\-._~+/]{12,})"), group=1),
    _Rule("password", re.compile(r"(?i)\b(?:password|passwd|pwd|passphrase)\s*[:=]\s*[\"']?([^\s\"',;]{4,})"),
          group=1),
    _Rule("ssn", re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")),
    _Rule("card_number", re.compile(r"\b(?:\d[ -]?){12,18}\d\b"), accept=_luhn_ok),
)


def redact(text: str) -> tuple[str, list[str]]:
    """The text with each secret replaced by [REDACTED:kind], and the kinds replaced (one entry per secret)."""
    found: list[str] = []
    for rule in _RULES:
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
