#!/usr/bin/env bash
# Static checks, run by .ci/run before the tests (after scripts/setup.sh installed the tools into .venv):
# ruff (the rule set in pyproject.toml, McCabe complexity included), basedpyright (standard mode, src/), and
# import-linter's contracts, which encode docs/architecture.md's layers. Any violation fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "ruff check" >&2
.venv/bin/ruff check src tests benchmarks
echo "basedpyright (src)" >&2
.venv/bin/basedpyright --level error
echo "import contracts" >&2
.venv/bin/lint-imports
