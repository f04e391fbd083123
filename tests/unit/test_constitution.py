import inspect

import pytest

from contextgraph import errors
from contextgraph.config import Settings, SettingsError
from contextgraph.constitution import ConstitutionError, constitution, load

SPEC_SECTION_5 = {
    -32700: "PARSE_ERROR", -32600: "INVALID_REQUEST", -32601: "METHOD_NOT_FOUND", -32602: "INVALID_PARAMS",
    -32603: "INTERNAL_ERROR", -32001: "STORAGE_ERROR", -32002: "EMBEDDING_ERROR", -32003: "UTL_ERROR",
    -32004: "TOOL_NOT_FOUND", -32005: "GWT_NOT_INITIALIZED", -32006: "WORKSPACE_ERROR",
    -32007: "CONSCIOUSNESS_COMPUTATION_FAILED", -32008: "DREAM_ERROR", -32009: "MISSING_RATIONALE",
    -32010: "PRIORS_INCOMPATIBLE", -32011: "RECOVERY_WINDOW_EXPIRED", -32012: "NODE_NOT_FOUND",
    -32013: "CIRCULAR_DEPENDENCY", -32014: "TOMBSTONE_EXISTS", -32015: "SEMANTIC_CANCER_DETECTED",
    -32016: "SSE_SESSION_EXPIRED", -32017: "NEUROMOD_ERROR", -32018: "THRESHOLD_ERROR",
    -32801: "INVALID_FINGERPRINT", -32802: "COMPUTATION_ERROR", -32803: "DIMENSION_MISMATCH",
}


def test_registry_matches_spec_section_5():
    by_code = {e.code: e.name for e in constitution().errors.values()}
    for code, name in SPEC_SECTION_5.items():
        assert by_code.get(code) == name
    assert set(range(-32116, -32109)) <= set(by_code)  # the autonomous block


def test_codes_are_unique_and_every_error_has_a_hint(tmp_path):
    codes = [e.code for e in constitution().errors.values()]
    assert len(codes) == len(set(codes))
    assert all(e.hint for e in constitution().errors.values())
    broken = tmp_path / "c.yaml"
    broken.write_text("errors:\n  A: {code: -1, hint: a}\n  B: {code: -1, hint: b}\n")
    with pytest.raises(ConstitutionError, match="used twice"):
        load(broken)


def test_every_error_class_names_a_registry_entry():
    for _, cls in inspect.getmembers(errors, inspect.isclass):
        if issubclass(cls, errors.ContextGraphError):
            constitution().error(cls.code_name)


def test_unreadable_constitution_is_refused(tmp_path):
    with pytest.raises(ConstitutionError):
        load(tmp_path / "absent.yaml")
    (tmp_path / "bad.yaml").write_text("just: text\n")
    with pytest.raises(ConstitutionError, match="no 'errors'"):
        load(tmp_path / "bad.yaml")


def test_dotted_lookup_names_what_is_missing():
    assert constitution().get("pulse.empty_workspace_seconds") == 5.0
    with pytest.raises(KeyError, match="missing 'nope'"):
        constitution().get("pulse.nope")


def test_settings_from_environment_and_overrides(tmp_path):
    s = Settings.from_env({"CONTEXTGRAPH_HOME": str(tmp_path), "CONTEXTGRAPH_PROFILE": "core"})
    assert (s.home, s.profile, s.log_level) == (tmp_path, "core", "info")
    assert Settings.from_env({"CONTEXTGRAPH_PROFILE": "core"}, profile="all").profile == "all"
    assert str(Settings.from_env({}).home).endswith(".context-graph")
    with pytest.raises(SettingsError, match="unknown tool profile"):
        Settings.from_env({"CONTEXTGRAPH_PROFILE": "everything"})
    with pytest.raises(SettingsError, match="log level"):
        Settings.from_env({"CONTEXTGRAPH_LOG_LEVEL": "loud"})
