"""The tool catalogue: the category modules in registry order, and the registry built from them for a profile.
Apart from registry.py so that the handlers, which receive a registry through their ToolContext, never sit in an
import cycle with the modules that list them."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from contextgraph.constitution import Constitution
from contextgraph.tools import (
    admin,
    atc,
    autonomous,
    causal,
    core,
    curation,
    diagnostic,
    discovery,
    dream,
    gwt,
    meta_utl,
    metacog,
    navigation,
    neuromod,
    steering,
    teleological,
    utl,
)
from contextgraph.tools.registry import Alias, Registry

# Category modules, in registry order. A new category adds its module here.
CATEGORY_MODULES: tuple[ModuleType, ...] = (core, gwt, utl, atc, dream, neuromod, steering, causal, teleological,
                                             autonomous, meta_utl, curation, navigation, metacog, diagnostic, admin,
                                             discovery)


def build_registry(constitution: Constitution, profile: str,
                   modules: Sequence[ModuleType] = CATEGORY_MODULES) -> Registry:
    chosen = constitution.get("server.profiles")[profile]  # "*", or {categories: [...], tools: [...]}
    everything = chosen == "*"
    registry = Registry(
        (spec for module in modules for spec in module.TOOLS),
        [Alias(str(a["alias"]), str(a["target"])) for a in constitution["tool_aliases"]],
        retired=constitution["retired_tools"],
        categories=constitution["categories"],
        active_categories=None if everything else chosen.get("categories", ()),
        name_pattern=constitution["tool_name_pattern"],
        discovery_settings=constitution["discovery"],
    )
    if not everything:
        registry.activate(name for name in chosen.get("tools", ()) if name in registry.specs)
    return registry
