"""`contextgraph serve` answers initialize and tools/list before it imports the numeric and model libraries: they
cost seconds of a host's start-up (docs/budgets.md#cpu-budgets) and no part of the handshake needs them. They load
with the model and the store, in the background, once the tool list is on its way.

The server is the real stdio serve path in a child process; the only addition is a probe on
Perception.start_model_load, which the server calls while answering the first tools/list, just before the
response is written: what is in sys.modules then was imported to answer the handshake."""

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
import json, sys
from contextgraph.services.runtime import perception

real, seen = perception.Perception.start_model_load, []

def probe(self):
    if not seen:
        seen.append(True)
        loaded = sorted(name for name in {DEFERRED!r} if name in sys.modules)
        print({MARK!r} + json.dumps(loaded), file=sys.stderr, flush=True)
    real(self)

perception.Perception.start_model_load = probe
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


def test_serve_answers_the_handshake_without_the_heavy_libraries(tmp_path: Path):
    lines = [
        message(1, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                  "clientInfo": {"name": "pytest", "version": "1"}}),
        message(None, "notifications/initialized"),
        message(2, "tools/list", {}),
    ]
    env = {**os.environ, "CONTEXTGRAPH_HOME": str(tmp_path), "CONTEXTGRAPH_LOG_LEVEL": "error",
           "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], input="\n".join(lines) + "\n", capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    responses = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert responses[2]["result"]["tools"], responses
    probes = [line[len(MARK):] for line in done.stderr.splitlines() if line.startswith(MARK)]
    assert probes, f"the probe never ran (tools/list did not start the model load): {done.stderr[-2000:]}"
    assert json.loads(probes[0]) == []
