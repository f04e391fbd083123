"""`contextgraph serve` answers initialize and tools/list quickly (docs/budgets.md#cpu-budgets): it imports no
numeric or model library the handshake does not need (they cost seconds; they load with the model and the store,
in the background, once the tool list is on its way), and the collector does not walk the start-up imports'
objects over and over while they load (~290 collections, ~130 ms of a ~1 s start on two loaded cores).

The server is the real stdio serve path in a child process; the only addition is a probe on
Perception.start_model_load, which the server calls while answering the first tools/list, just before the
response is written: what is in sys.modules then was imported to answer the handshake. The probe is attached
when the server itself imports the module, so the child imports what `contextgraph serve` does, in its order."""

import json
import os
import subprocess
import sys
from pathlib import Path

# Heavy libraries the handshake must not import: the GP and clustering (scipy, scikit-learn) and the model's
# runtimes (onnxruntime, torch, transformers, tokenizers).
DEFERRED = ("scipy", "sklearn", "onnxruntime", "torch", "transformers", "tokenizers")
MARK = "cold-start-probe:"

PROBE = f"""
import gc, importlib.abc, importlib.util, json, sys

TARGET = "contextgraph.services.runtime.perception"


def report(self, real, seen=[]):
    if not seen:
        seen.append(True)
        print({MARK!r} + json.dumps({{
            "imported": sorted(name for name in {DEFERRED!r} if name in sys.modules),
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
            real = module.Perception.start_model_load
            module.Perception.start_model_load = lambda self: report(self, real)

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


def serve_handshake(home: Path) -> dict:
    """Run `contextgraph serve` (stdio) through initialize + tools/list; what the probe saw then."""
    lines = [
        message(1, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                  "clientInfo": {"name": "pytest", "version": "1"}}),
        message(None, "notifications/initialized"),
        message(2, "tools/list", {}),
    ]
    env = {**os.environ, "CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_LOG_LEVEL": "error", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    responses = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert responses[2]["result"]["tools"], responses
    probes = [line[len(MARK):] for line in done.stderr.splitlines() if line.startswith(MARK)]
    assert probes, f"the probe never ran (tools/list did not start the model load): {done.stderr[-2000:]}"
    return json.loads(probes[0])


def test_serve_answers_the_handshake_without_the_heavy_libraries(tmp_path: Path):
    assert serve_handshake(tmp_path)["imported"] == []


def test_serve_sets_the_start_up_imports_aside_from_the_collector(tmp_path: Path):
    seen = serve_handshake(tmp_path)
    # the imported modules' objects sit in the permanent generation (the model load's heap settling collects
    # and freezes again), and no full collection walked them before the tool list was answered
    assert seen["frozen"] > 0
    assert seen["full_collections"] == 0
