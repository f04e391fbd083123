"""SPEC §3's whole inventory, by category: every canonical tool and alias, no more and no fewer.
Written out here (not parsed from SPEC.md, which lives outside the repository) so that a tool that disappears, is
renamed or lands in the wrong category fails by name."""

from contextgraph.constitution import constitution
from contextgraph.tools.catalog import build_registry

SPEC_INVENTORY: dict[str, set[str]] = {
    "core": {"inject_context", "store_memory", "search_graph", "get_memetic_status", "get_graph_manifest",
             "utl_status"},
    "gwt": {"get_consciousness_state", "get_kuramoto_sync", "get_workspace_status", "get_ego_state",
            "trigger_workspace_broadcast", "adjust_coupling", "get_johari_classification", "epistemic_action"},
    "utl": {"compute_delta_sc"},
    "atc": {"get_threshold_status", "get_calibration_metrics", "trigger_recalibration"},
    "dream": {"trigger_dream", "get_dream_status", "abort_dream", "get_amortized_shortcuts"},
    "neuromod": {"get_neuromodulation_state", "adjust_neuromodulator"},
    "steering": {"get_steering_feedback"},
    "causal": {"omni_infer", "query_causal"},
    "teleological": {"search_teleological", "compute_teleological_vector", "fuse_embeddings",
                     "update_synergy_matrix", "manage_teleological_profile"},
    "autonomous": {"auto_bootstrap_north_star", "get_alignment_drift", "trigger_drift_correction",
                   "get_pruning_candidates", "trigger_consolidation", "discover_sub_goals", "get_autonomous_status"},
    "meta_utl": {"get_meta_learning_status", "trigger_lambda_recalibration", "get_meta_learning_log"},
    "curation": {"merge_concepts", "annotate_node", "forget_concept", "boost_importance", "restore_from_hash"},
    "navigation": {"get_neighborhood", "get_recent_context", "find_causal_path", "entailment_query"},
    "metacog": {"reflect_on_memory", "generate_search_plan", "critique_context", "hydrate_citation",
                "get_system_instructions", "get_system_logs", "get_node_lineage"},
    "diagnostic": {"homeostatic_status", "check_adversarial", "test_recall_accuracy", "debug_compare_retrieval",
                   "search_tombstones"},
    "admin": {"reload_manifest", "temporary_scratchpad"},
    "discovery": {"tool_find", "tool_describe", "tool_load", "tool_active", "tool_call"},
}
SPEC_ALIASES = {
    "gwt/compute_delta_sc": "compute_delta_sc",
    "get_neuromodulation": "get_neuromodulation_state",
    "consolidate_memories": "trigger_consolidation",
    "discover_goals": "discover_sub_goals",
}

REGISTRY = build_registry(constitution(), "all")


def test_seventy_canonical_tools_and_four_aliases():
    assert sum(len(names) for names in SPEC_INVENTORY.values()) == 70
    assert len(SPEC_ALIASES) == 4


def test_the_registry_holds_exactly_spec_section_3():
    expected = set().union(*SPEC_INVENTORY.values())
    assert set(REGISTRY.specs) - expected == set(), "tools that SPEC §3 does not list"
    assert expected - set(REGISTRY.specs) == set(), "SPEC §3 tools that are missing"


def test_every_tool_sits_in_its_spec_category():
    misplaced = {name: (spec.category, category) for category, names in SPEC_INVENTORY.items()
                 for name in names if (spec := REGISTRY.specs.get(name)) is not None and spec.category != category}
    assert misplaced == {}, "tool: (registered category, SPEC category)"


def test_every_alias_resolves_to_its_target():
    configured = {str(a["alias"]): str(a["target"]) for a in constitution()["tool_aliases"]}
    assert configured == SPEC_ALIASES
    for alias, target in SPEC_ALIASES.items():
        assert REGISTRY.resolve(alias) == target
