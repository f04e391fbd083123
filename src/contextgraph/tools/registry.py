"""The registry: the tool table built from the category modules (tools/catalog.py names them), the alias map, the
active set and the TF-IDF index. Data only: no handler runs here, nothing registers by import side effect."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from contextgraph.tools.spec import ToolSpec
from contextgraph.tools.tfidf import TfIdfIndex, tokens


class RegistryError(RuntimeError):
    """The tool table is inconsistent; the server refuses to start."""


@dataclass(frozen=True, slots=True)
class Alias:
    alias: str
    target: str


def check_aliases(aliases: Sequence[Alias], canonical: Iterable[str]) -> None:
    """Seed 000 §7.1: no alias equals a canonical name, no alias is declared twice, no alias points at an
    alias (which would allow chains and cycles)."""
    names = set(canonical)
    seen: set[str] = set()
    declared = {a.alias for a in aliases}
    for a in aliases:
        if a.alias in names:
            raise RegistryError(f"alias {a.alias!r} collides with the canonical tool of the same name")
        if a.alias in seen:
            raise RegistryError(f"alias {a.alias!r} is declared twice")
        if a.target in declared:
            raise RegistryError(f"alias {a.alias!r} points at {a.target!r}, which is itself an alias (chain or cycle)")
        if a.alias == a.target:
            raise RegistryError(f"alias {a.alias!r} points at itself")
        seen.add(a.alias)


class Registry:
    def __init__(
        self,
        specs: Iterable[ToolSpec],
        aliases: Sequence[Alias],
        *,
        retired: dict[str, str],
        categories: Sequence[str],
        active_categories: Iterable[str] | None,
        name_pattern: str,
        discovery_settings: dict[str, Any],
    ) -> None:
        self.specs: dict[str, ToolSpec] = {}
        pattern = re.compile(name_pattern)
        for spec in specs:
            if spec.name in self.specs:
                raise RegistryError(f"tool {spec.name!r} is registered twice")
            if not pattern.fullmatch(spec.name):
                raise RegistryError(f"tool name {spec.name!r} does not match {name_pattern}")
            if spec.category not in categories:
                raise RegistryError(f"tool {spec.name!r} has unknown category {spec.category!r}")
            self.specs[spec.name] = spec
        check_aliases(aliases, self.specs)
        self.declared_aliases = {a.alias: a.target for a in aliases}
        # Only aliases whose target exists resolve; the others are reported by unknown_tool_message().
        self.aliases = {a.alias: a.target for a in aliases if a.target in self.specs}
        self.aliases_of: dict[str, tuple[str, ...]] = {
            name: tuple(a for a, t in self.aliases.items() if t == name) for name in self.specs
        }
        self.retired = dict(retired)
        self.categories = tuple(categories)
        self.input_schemas = {name: spec.args.model_json_schema() for name, spec in self.specs.items()}
        wanted = None if active_categories is None else set(active_categories)
        self.active: set[str] = {n for n, s in self.specs.items() if wanted is None or s.category in wanted}
        self._settings = discovery_settings
        self.index = TfIdfIndex({name: self._document(spec) for name, spec in self.specs.items()})

    def _document(self, spec: ToolSpec) -> list[str]:
        s = self._settings
        name_terms = tokens(spec.name) + [t for a in self.aliases_of[spec.name] for t in tokens(a)]
        return (
            name_terms * int(s["name_weight"])
            + tokens(" ".join(spec.keywords)) * int(s["keyword_weight"])
            + tokens(spec.category.replace("_", " "))
            + tokens(spec.description)
        )

    # -- lookups -------------------------------------------------------------------------------------------
    def resolve(self, name: str) -> str | None:
        """The canonical name for `name` (itself or an alias of a registered tool), or None."""
        canonical = self.aliases.get(name, name)
        return canonical if canonical in self.specs else None

    def listed(self) -> list[ToolSpec]:
        """The active tools, in registry order: what tools/list returns."""
        return [s for n, s in self.specs.items() if n in self.active]

    def listed_description(self, spec: ToolSpec) -> str:
        """The description a client sees: aliases are named in it (docs/tools.md#aliases-and-retired-names)."""
        aliases = self.aliases_of[spec.name]
        if not aliases:
            return spec.description
        return f"{spec.description}\n\nAliases: {', '.join(aliases)} (PRD compatibility)."

    def activate(self, names: Iterable[str]) -> list[str]:
        """Mark canonical names active; returns the ones that were not active before."""
        fresh = [n for n in dict.fromkeys(names) if n not in self.active]
        self.active.update(fresh)
        return fresh

    def suggestions(self, name: str) -> list[str]:
        """Close names for an unknown one: edit distance over every callable name, then TF-IDF on its words."""
        s = self._settings
        limit = int(s["suggestions"])
        callable_names = list(self.specs) + list(self.aliases)
        import difflib  # here: only an unknown name needs it, and it was ~15 ms of every start

        close = difflib.get_close_matches(name, callable_names, n=limit, cutoff=float(s["suggestion_cutoff"]))
        picked = [self.aliases.get(c, c) for c in close]
        for candidate, _score in self.index.search(name.replace("_", " "), limit):
            picked.append(candidate)
        return list(dict.fromkeys(picked))[:limit]

    def unknown_tool_message(self, name: str) -> str:
        """-32004's message: what was asked, why it is unknown, what to call instead."""
        message = f"Unknown tool: {name}."
        if name in self.retired:
            message += f" It was retired; use {self.retired[name]} instead."
        elif name in self.declared_aliases:
            message += (
                f" It is an alias of {self.declared_aliases[name]}, which this server does not provide yet."
            )
        elif name.lower() != name and self.resolve(name.lower()):
            message += f" Tool names are case-sensitive: did you mean {name.lower()}?"
        return message + " Call tool_find with a few keywords to discover the right tool."
