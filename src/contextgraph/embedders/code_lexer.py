"""A small language-agnostic lexer for E7 (and E11's identifiers): where the identifier-like words and the
keywords of a text are, and a 16-class histogram of its lexical token kinds. Regexes only — no parser, so it
works on snippets, diffs and prose with inline code alike."""

from __future__ import annotations

import re

import numpy as np

KEYWORDS = frozenset(
    # Python
    "def class return import from as if elif else for while try except finally with yield lambda async await "
    "raise pass break continue global nonlocal assert del in is not and or None True False "
    # JavaScript / TypeScript / Java / C#
    "function const let var new this typeof instanceof export default extends interface type enum implements "
    "public private protected static void null undefined switch case throw throws catch package "
    # Go / Rust / C / C++
    "func struct chan go defer select map range fn mut impl trait pub use mod match crate self Self where loop "
    "int float double char long short unsigned bool boolean include define typedef sizeof namespace template "
    "auto virtual override".split()
)

# Identifier-like words: dotted names, snake_case, camelCase/PascalCase with an inner capital, and any name
# directly followed by "(" (a call or a definition).
IDENTIFIER = re.compile(
    r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b"  # os.path.join
    r"|\b_*[A-Za-z][A-Za-z0-9]*_\w*\b"  # snake_case, CONSTANT_CASE
    r"|\b[a-z]+[0-9]*[A-Z]\w*\b"  # camelCase
    r"|\b[A-Z][a-z0-9]+[A-Z]\w*\b"  # PascalCase with an inner capital
    r"|\b[A-Za-z_]\w*(?=\s*\()"  # name(
)
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")

# Histogram classes, in vector order.
CLASSES = (
    "keyword", "name", "snake_case", "camel_case", "dotted_name", "call", "number", "string", "comment",
    "operator", "assignment", "open_bracket", "close_bracket", "punctuation", "newline", "indentation",
)
_CLASS_INDEX = {name: i for i, name in enumerate(CLASSES)}
_LEXER = re.compile(
    r"(?P<comment>#[^\n]*|//[^\n]*|/\*[\s\S]*?\*/)"
    r"|(?P<string>\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|`[^`\n]*`)"
    r"|(?P<number>\b0[xX][0-9a-fA-F]+\b|\b\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?\b)"
    r"|(?P<newline>\n)"
    r"|(?P<indentation>(?<=\n)[ \t]+)"
    r"|(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"
    r"|(?P<operator>==|!=|<=|>=|=>|->|&&|\|\|)"
    r"|(?P<assignment>(?:\*\*|//|<<|>>|[+\-*/%&|^])?=|:=)"
    r"|(?P<operator1>[+\-*/%<>!&|^~@?]+)"
    r"|(?P<open_bracket>[(\[{])"
    r"|(?P<close_bracket>[)\]}])"
    r"|(?P<punctuation>[,;:.])"
    r"|(?P<space>\s+)"
    r"|(?P<other>.)"
)


def identifier_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in IDENTIFIER.finditer(text)]


def keyword_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _WORD.finditer(text) if m.group(0) in KEYWORDS]


def name_class(name: str, followed_by: str) -> str:
    if name in KEYWORDS:
        return "keyword"
    if followed_by.lstrip(" \t").startswith("("):
        return "call"
    if "." in name:
        return "dotted_name"
    if "_" in name.strip("_"):
        return "snake_case"
    if re.search(r"[a-z0-9][A-Z]", name):
        return "camel_case"
    return "name"


def token_class_histogram(text: str) -> np.ndarray:
    """float32 [16]: the share of each lexical class among the text's tokens (zeros for an empty text)."""
    counts = np.zeros(len(CLASSES), dtype=np.float64)
    for m in _LEXER.finditer(text):
        kind = m.lastgroup or "other"  # every alternative of _LEXER is a named group
        if kind in ("space", "other"):
            continue
        if kind == "name":
            kind = name_class(m.group(0), text[m.end() : m.end() + 8])
        elif kind == "operator1":
            kind = "operator"
        counts[_CLASS_INDEX[kind]] += 1
    total = counts.sum()
    return (counts / total if total else counts).astype(np.float32)
