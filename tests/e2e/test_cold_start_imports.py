"""`contextgraph serve` answers initialize and tools/list quickly (docs/budgets.md#cpu-budgets): it imports no
numeric or model library the handshake does not need (they cost seconds; they load with the model and the store,
in the background, once the tool list is on its way), neither the tool modules nor the services (~200 modules:
tools/list comes from the listing snapshot, and the App is built after the answer, deferred_app.py), and the
collector does not walk the start-up imports' objects over and over while they load (~290 collections, ~130 ms
of a ~1 s start on two loaded cores). The first tool call after the handshake waits for the App and is answered.

The server is the real stdio serve path in a child process; the only addition is a probe on DeferredApp.start,
which the server calls while answering the first tools/list, just before the response is written: what is in
sys.modules then was imported to answer the handshake. The probe is attached when the server itself imports the
module, so the child imports what `contextgraph serve` does, in its order."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextgraph.constitution import constitution

# Heavy libraries the handshake must not import: the GP and clustering (scipy, scikit-learn) and the model's
# runtimes (onnxruntime, torch, transformers, tokenizers).
DEFERRED = ("scipy", "sklearn", "onnxruntime", "torch", "transformers", "tokenizers")
MARK = "cold-start-probe:"

PROBE = f"""
import gc, importlib.abc, importlib.util, json, sys

TARGET = "contextgraph.deferred_app"


def report(self, real, seen=[]):
    if not seen:
        seen.append(True)
        print({MARK!r} + json.dumps({{
            "imported": sorted(name for name in {DEFERRED!r} if name in sys.modules),
            "contextgraph": sorted(name for name in sys.modules if name.startswith("contextgraph")),
            "full_collections": gc.get_stats()[2]["collections"],
            "frozen": gc.get_freeze_count(),
        }}), file=sys.stderr, flush=True)
    real(self)


class AttachProbe(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            real = module.DeferredApp.start
            module.DeferredApp.start = lambda self: report(self, real)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, AttachProbe())
from contextgraph.cli import main
sys.exit(main(["serve"]))
"""


def message(id_: int | None, method: str, params: dict | None = None) -> str:
    msg: dict = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        msg["id"] = id_
    if params is not None:
        msg["params"] = params
    return json.dumps(msg)


INITIALIZE = message(1, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                      "clientInfo": {"name": "pytest", "version": "1"}})
INITIALIZED = message(None, "notifications/initialized")
FIRST_CALLS = [  # right after the handshake, before the App can have been built
    message(3, "tools/call", {"name": "temporary_scratchpad", "arguments": {"action": "read"}}),
    message(4, "tools/call", {"name": "no_such_tool", "arguments": {}}),
]


def serve(home: Path, lines: list[str]) -> tuple[dict[int, dict], list[dict]]:
    """Run `contextgraph serve` (stdio) on these request lines: the responses by id, and what the probe saw."""
    env = {**os.environ, "CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_LOG_LEVEL": "error", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    responses = {r["id"]: r for r in map(json.loads, done.stdout.splitlines()) if "id" in r}
    probes = [json.loads(line[len(MARK):]) for line in done.stderr.splitlines() if line.startswith(MARK)]
    return responses, probes


@pytest.fixture(scope="module")
def handshake(tmp_path_factory) -> tuple[dict, dict[int, dict]]:
    """initialize + tools/list, then the first tool calls: what the probe saw at the tool list, and the answers."""
    responses, probes = serve(tmp_path_factory.mktemp("home"),
                              [INITIALIZE, INITIALIZED, message(2, "tools/list", {}), *FIRST_CALLS])
    assert responses[2]["result"]["tools"], responses
    assert probes, "the probe never ran (tools/list did not start building the App)"
    return probes[0], responses


def test_serve_answers_the_handshake_without_the_heavy_libraries(handshake):
    assert handshake[0]["imported"] == []


def test_serve_answers_the_handshake_without_the_tool_modules_or_the_services(handshake):
    imported = handshake[0]["contextgraph"]
    assert "contextgraph.app" not in imported
    assert [m for m in imported if m.startswith(("contextgraph.services", "contextgraph.storage",
                                                 "contextgraph.embedders", "contextgraph.graph"))] == []
    # of the tool layer, only the listing (the snapshot tools/list answers from) and the call outcome's names
    assert {m for m in imported if m.startswith("contextgraph.tools.")} <= {"contextgraph.tools.listing",
                                                                           "contextgraph.tools.outcome"}


def test_serve_sets_the_start_up_imports_aside_from_the_collector(handshake):
    seen = handshake[0]
    # the imported modules' objects sit in the permanent generation (the model load's heap settling collects
    # and freezes again), and no full collection walked them before the tool list was answered
    assert seen["frozen"] > 0
    assert seen["full_collections"] == 0


def test_the_first_tool_calls_wait_for_the_app_and_are_answered(handshake):
    responses = handshake[1]
    assert responses[3]["result"]["structuredContent"]["count"] == 0, responses[3]
    assert responses[4]["error"]["code"] == constitution().error("TOOL_NOT_FOUND").code, responses[4]


def test_a_tool_call_without_a_tool_list_builds_the_app_itself(tmp_path: Path):
    responses, probes = serve(tmp_path, [INITIALIZE, INITIALIZED, *FIRST_CALLS])
    assert responses[3]["result"]["structuredContent"]["count"] == 0, responses[3]
    assert responses[4]["error"]["code"] == constitution().error("TOOL_NOT_FOUND").code, responses[4]
    assert probes  # started by the first call that needed the App
