#!/usr/bin/env bash
# Creates .venv (if missing) and installs ContextGraph with its test tools. Safe to run again.
# Everything it prints goes to stderr, so `./scripts/setup.sh && .venv/bin/contextgraph serve` keeps stdout
# for the MCP protocol.
set -euo pipefail
exec 1>&2
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first, pinned: the CPU wheel (needed to export the transformer to ONNX). Unpinned, pip would fetch a
# multi-GB CUDA build; pinned, every later requirement on torch is already satisfied.
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[test]"
# Export the transformer's ONNX graph once into the installation's model cache (.venv/share/contextgraph/models;
# $CONTEXTGRAPH_MODEL_CACHE overrides it; the user's cache only if the venv were not writable), shared by every
# data directory and every HOME a client sets: without it the first store pays the export (5-15 s). Offline:
# the model ships as a package.
# A failure here is reported but does not fail the set-up (the first store exports it instead).
HF_HUB_OFFLINE=1 .venv/bin/contextgraph doctor --warm || echo "setup: contextgraph doctor --warm reported a problem (above); if the warm-up failed, the first store exports the model instead" >&2
