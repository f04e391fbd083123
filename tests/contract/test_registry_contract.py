"""Contracts between the registry, the protocol and the docs: fail when they disagree."""

import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from contextgraph.constitution import constitution
from contextgraph.tools.catalog import CATEGORY_MODULES, build_registry

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = build_registry(constitution(), "all")
NAME = re.compile(constitution()["tool_name_pattern"])

# The tools this issue delivers; each later issue extends this set with its own.
EXPECTED = {
    "store_memory", "inject_context", "search_graph", "get_graph_manifest",
    "tool_find", "tool_describe", "tool_load", "tool_active", "tool_call",
    "get_system_instructions", "get_system_logs", "temporary_scratchpad",
    "merge_concepts", "annotate_node", "forget_concept", "boost_importance", "restore_from_hash",
    "get_neighborhood", "get_recent_context", "find_causal_path", "entailment_query", "hydrate_citation",
    "get_node_lineage",
    "search_tombstones",
    "utl_status", "get_kuramoto_sync", "adjust_coupling", "get_consciousness_state", "get_johari_classification",
    "compute_delta_sc", "get_memetic_status", "get_workspace_status", "get_ego_state", "trigger_workspace_broadcast",
    "epistemic_action",
    # issue 16: dreams, neuromodulation, steering
    "trigger_dream", "get_dream_status", "abort_dream", "get_amortized_shortcuts",
    "get_neuromodulation_state", "adjust_neuromodulator", "get_steering_feedback",
    # issue 18: causal inference, self-reflection, diagnostics
    "omni_infer", "query_causal", "reflect_on_memory", "generate_search_plan", "critique_context",
    "homeostatic_status", "check_adversarial", "test_recall_accuracy", "debug_compare_retrieval", "reload_manifest",
    # issue 17: adaptive thresholds (ATC) and Meta-UTL
    "get_threshold_status", "get_calibration_metrics", "trigger_recalibration",
    "get_meta_learning_status", "trigger_lambda_recalibration", "get_meta_learning_log",
    # issue 15: purpose (teleological and autonomous)
    "search_teleological", "compute_teleological_vector", "fuse_embeddings", "update_synergy_matrix",
    "manage_teleological_profile", "auto_bootstrap_north_star", "get_alignment_drift", "trigger_drift_correction",
    "get_pruning_candidates", "trigger_consolidation", "discover_sub_goals", "get_autonomous_status",
}


def readme_tool_reference() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Tool reference")
    end = text.find("\n## ", start + 1)
    return text[start: end if end != -1 else None]


def test_registry_holds_exactly_the_delivered_tools():
    assert set(REGISTRY.specs) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_tool_is_well_formed(name):
    spec = REGISTRY.specs[name]
    assert NAME.fullmatch(name)
    assert len(spec.description) >= 40, "a description a model can choose by"
    schema = REGISTRY.input_schemas[name]
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema.get("additionalProperties") is False
    if spec.output_schema is not None:
        Draft202012Validator.check_schema(spec.output_schema)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_tool_is_in_the_readme_tool_reference(name):
    assert f"`{name}`" in readme_tool_reference()


def test_readme_lists_no_tool_that_does_not_exist():
    named = set(re.findall(r"^\| `([a-z_]+)`", readme_tool_reference(), re.M))
    assert named == EXPECTED


def test_category_modules_are_an_explicit_tuple_without_duplicates():
    names = [spec.name for module in CATEGORY_MODULES for spec in module.TOOLS]
    assert len(names) == len(set(names))


def test_rationale_rule_names_spec_d5_tools():
    # SPEC D5's four, and inject_context, whose rationale seed 004 marks required: a missing rationale is
    # -32009 wherever one is required, never -32602.
    assert set(constitution().get("validation.rationale_required")) == {
        "store_memory", "merge_concepts", "forget_concept", "boost_importance", "inject_context"}


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```(?:bash|sh)?\n(.*?)```", readme, re.S)
    first_two = [line for block in commands[:1] for line in block.strip().splitlines() if not line.startswith("#")]
    assert len(first_two) == 2, "the README opens with exactly two commands"
    serve, test = first_two
    assert "contextgraph serve" in serve
    assert test in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _unbounded(node, path, defs):
    """Paths in a JSON Schema where a string has no maxLength or an array no maxItems. An enum is bounded by its
    values; a date-time is bounded by its parser (anything but an ISO timestamp is refused)."""
    if not isinstance(node, dict):
        return []
    if "$ref" in node:
        return _unbounded(defs[node["$ref"].rsplit("/", 1)[-1]], path, defs)
    found = []
    kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    if "string" in kinds and "maxLength" not in node and "enum" not in node and node.get("format") != "date-time":
        found.append(f"{path} (string without maxLength)")
    if "array" in kinds and "maxItems" not in node:
        found.append(f"{path} (array without maxItems)")
    for name, sub in node.get("properties", {}).items():
        found += _unbounded(sub, f"{path}.{name}", defs)
    found += _unbounded(node.get("items"), f"{path}[]", defs)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in node.get(key, []):
            found += _unbounded(sub, path, defs)
    return found


def test_every_string_and_array_argument_of_every_tool_is_bounded():
    """A client can send any size it likes: every argument says its limit in the schema (and the model refuses
    more with -32602), so no tag list or name grows every answer that lists it."""
    unbounded = [hole for name, schema in REGISTRY.input_schemas.items()
                 for hole in _unbounded(schema, name, schema.get("$defs", {}))]
    assert not unbounded
