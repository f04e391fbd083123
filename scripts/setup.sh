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
