"""Throws random and malformed arguments at every registered tool: the answer is a structured JSON-RPC error
with a registry code or a valid result, never a crash, never a traceback."""

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextgraph.app import build_app
from contextgraph.constitution import constitution
from contextgraph.tools.dispatch import PULSE_KEY, ToolCallFailed

CODES = {e.code for e in constitution().errors.values()}
PULSE_FIELDS = {"entropy", "coherence", "learning_score", "quadrant", "suggested_action"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


def _app(tmp_path_factory, make_settings):
    return build_app(make_settings(tmp_path_factory.mktemp("fuzz")))


def _tool_and_arguments(registry):
    names = st.sampled_from(sorted(registry.specs) + ["unknown_tool", "TOOL_FIND", "gwt/compute_delta_sc"])

    def arguments_for(name):
        schema = registry.input_schemas.get(name, {})
        keys = st.sampled_from(sorted(schema.get("properties", {})) + ["extra"])
        shaped = st.dictionaries(keys, json_values, max_size=4)
        return st.one_of(shaped, json_values)

    return names.flatmap(lambda n: st.tuples(st.just(n), arguments_for(n)))


def test_no_tool_crashes_on_any_input(tmp_path_factory, make_settings):
    app = _app(tmp_path_factory, make_settings)

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_tool_and_arguments(app.registry))
    def check(call):
        name, arguments = call

        async def run():
            return await app.dispatcher.call(name, arguments, app.tool_context("fuzz"))

        try:
            outcome = anyio.run(run)
        except ToolCallFailed as failure:
            assert failure.code in CODES and failure.code != -32603, failure.message
            assert "Traceback" not in failure.message and 'File "' not in failure.message
            assert set(failure.data[PULSE_KEY]) == PULSE_FIELDS
            assert failure.data["hint"]
        else:
            assert isinstance(outcome.payload, dict)
            assert set(outcome.payload[PULSE_KEY]) == PULSE_FIELDS

    check()
