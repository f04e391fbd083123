import pytest

from contextgraph.constitution import constitution
from contextgraph.tools.catalog import build_registry
from contextgraph.tools.registry import Alias, Registry, RegistryError, check_aliases
from contextgraph.tools.spec import Args, ToolSpec

C = constitution()


async def _noop(ctx, args):
    return {}


def spec(name, category="core"):
    return ToolSpec(name, category, f"{name} does a thing.", Args, _noop, keywords=("thing",))


def registry(specs, aliases=(), active_categories=None, retired=None):
    return Registry(specs, list(aliases), retired=retired or {}, categories=C["categories"],
                    active_categories=active_categories, name_pattern=C["tool_name_pattern"],
                    discovery_settings=C["discovery"])


def test_constitution_holds_the_four_aliases_of_spec_section_3():
    declared = {a["alias"]: a["target"] for a in C["tool_aliases"]}
    assert declared == {
        "gwt/compute_delta_sc": "compute_delta_sc",
        "get_neuromodulation": "get_neuromodulation_state",
        "consolidate_memories": "trigger_consolidation",
        "discover_goals": "discover_sub_goals",
    }


def test_alias_resolves_only_when_its_target_exists():
    r = registry([spec("discover_sub_goals", "autonomous")],
                 [Alias("discover_goals", "discover_sub_goals"),
                  Alias("consolidate_memories", "trigger_consolidation")])
    assert r.resolve("discover_goals") == "discover_sub_goals"
    assert r.resolve("discover_sub_goals") == "discover_sub_goals"
    assert r.resolve("consolidate_memories") is None
    assert "alias of trigger_consolidation" in r.unknown_tool_message("consolidate_memories")
    assert r.aliases_of["discover_sub_goals"] == ("discover_goals",)
    assert "Aliases: discover_goals" in r.listed_description(r.specs["discover_sub_goals"])


def test_aliases_are_case_sensitive():
    r = registry([spec("discover_sub_goals", "autonomous")], [Alias("discover_goals", "discover_sub_goals")])
    assert r.resolve("Discover_Goals") is None
    assert r.resolve("DISCOVER_GOALS") is None
    assert "case-sensitive" in r.unknown_tool_message("DISCOVER_GOALS")


@pytest.mark.parametrize(("aliases", "message"), [
    ([Alias("store_memory", "search_graph")], "collides"),
    ([Alias("a", "store_memory"), Alias("a", "search_graph")], "declared twice"),
    ([Alias("a", "b"), Alias("b", "a")], "itself an alias"),
    ([Alias("a", "b"), Alias("b", "store_memory")], "itself an alias"),
    ([Alias("a", "a")], "itself an alias|points at itself"),
])
def test_startup_check_rejects_bad_alias_tables(aliases, message):
    with pytest.raises(RegistryError, match=message):
        check_aliases(aliases, ["store_memory", "search_graph"])


def test_duplicate_tool_names_and_bad_names_are_refused():
    with pytest.raises(RegistryError, match="twice"):
        registry([spec("a_tool"), spec("a_tool")])
    with pytest.raises(RegistryError, match="does not match"):
        registry([spec("gwt/compute_delta_sc")])
    with pytest.raises(RegistryError, match="does not match"):
        registry([spec("x" * 65)])
    with pytest.raises(RegistryError, match="category"):
        registry([spec("a_tool", "nonsense")])


def test_profiles_choose_the_active_set():
    everything = build_registry(C, "all")
    assert everything.active == set(everything.specs)
    core = build_registry(C, "core")
    pulse_tools = set(C.get("server.profiles")["core"]["tools"])  # what the pulse may suggest (issue 13.4)
    assert {core.specs[n].category for n in core.active - pulse_tools} <= {"core", "curation", "discovery"}
    assert pulse_tools & set(core.specs) <= core.active
    assert "tool_find" in core.active and "get_system_logs" not in core.active
    assert core.activate(["get_system_logs", "tool_find", "get_system_logs"]) == ["get_system_logs"]
    assert core.activate(["get_system_logs"]) == []


def test_suggestions_for_typos_and_retired_names():
    r = build_registry(C, "all")
    assert r.suggestions("tool_fnd")[0] == "tool_find"
    assert "tool_describe" in r.suggestions("describe tool")
    assert "retired; use auto_bootstrap_north_star" in r.unknown_tool_message("set_north_star")
    assert r.unknown_tool_message("nope").startswith("Unknown tool: nope.")
