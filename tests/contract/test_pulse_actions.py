"""SPEC D16: the pulse names only tools a client can call. Every action it can emit — each Johari quadrant's and
the two timers' — resolved against the registry of each profile is a registered tool, listed by that profile
(so a host that never re-reads tools/list can still call it), never an ideal name that is not built."""

from __future__ import annotations

import pytest

from contextgraph.app import build_app
from contextgraph.utl.pulse import callable_action


def emitted_actions(app) -> set[str]:
    rules = app.services.cognition._rules
    return {*rules.actions.values(), rules.high_entropy_action, rules.empty_workspace_action}


@pytest.mark.parametrize("profile", ["all", "core"])
def test_every_action_the_pulse_can_emit_is_a_listed_tool(make_settings, tmp_path, profile):
    app = build_app(make_settings(tmp_path / profile, CONTEXTGRAPH_PROFILE=profile))
    try:
        actions = emitted_actions(app)
        assert actions and "none" not in actions
        assert actions <= set(app.registry.specs)
        assert actions <= set(app.registry.active)
        # and every quadrant's answer agrees with what the per-memory payloads say
        for quadrant, action in app.services.cognition._rules.actions.items():
            assert app.services.cognition.action_for(quadrant) == action
    finally:
        app.close()


def test_stand_ins_replace_what_is_not_built():
    stand_ins = {"trigger_dream": ["trigger_consolidation", "get_memetic_status"], "direct_recall": ["search_graph"]}
    tools = {"search_graph", "get_memetic_status", "epistemic_action"}
    assert callable_action("epistemic_action", stand_ins, tools) == "epistemic_action"
    assert callable_action("direct_recall", stand_ins, tools) == "search_graph"
    assert callable_action("trigger_dream", stand_ins, tools) == "get_memetic_status"
    assert callable_action("trigger_dream", stand_ins, tools | {"trigger_dream"}) == "trigger_dream"
    assert callable_action("unknown_thing", stand_ins, tools) == "none"
