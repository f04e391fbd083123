"""`contextgraph import` and `contextgraph export` as a user runs them: the console script in a subprocess, on a
temp data directory (issue 19.6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "contextgraph"
LINES = [
    json.dumps({"content": "The nightly backup runs at 02:00 and keeps fourteen days of snapshots.",
                "tags": ["ops"], "importance": 0.7, "created_at": 1_760_000_000}),
    '{"content": 42}',
    json.dumps({"content": "The staging database password: hunter2hunter2 (rotate it monthly)",
                "rationale": "staging access"}),
    json.dumps({"content": "Green turtles nest on the beach in the second half of the summer."}),
]


def run(home: Path, model_cache: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_MODEL_CACHE": str(model_cache),
           "HF_HUB_OFFLINE": "1"}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=300)


def test_import_export_round_trip_through_the_console_script(tmp_path, model_cache):
    corpus = tmp_path / "notes.jsonl"
    corpus.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    home = tmp_path / "home"
    done = run(home, model_cache, "import", str(corpus), "--batch-size", "2")
    assert done.returncode == 1, done.stderr  # one line refused: stored the rest, said which
    assert "notes.jsonl: line 2 skipped" in done.stderr and "argument 'content'" in done.stderr
    assert "import notes.jsonl [" in done.stderr and "4/4" in done.stderr  # the progress bar
    summary = json.loads(done.stdout)
    assert summary["stored"] == 3 and summary["refused"] == 1 and summary["lines"] == 4
    again = run(home, model_cache, "import", str(corpus))
    assert json.loads(again.stdout)["already_imported"] == 4 and json.loads(again.stdout)["stored"] == 0
    out = tmp_path / "out.jsonl"
    exported = run(home, model_cache, "export", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert "exported 3 memories" in exported.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["content"][:10] for r in rows] == ["The nightl", "The stagin", "Green turt"]
    assert rows[0]["tags"] == ["ops"] and rows[0]["importance"] == 0.7 and rows[0]["created_at"] == 1_760_000_000
    assert rows[2]["rationale"] == "imported from notes.jsonl"
    assert "hunter2hunter2" not in out.read_text(encoding="utf-8")  # redacted on import: never stored
    fresh = tmp_path / "fresh"  # fingerprinted by two worker processes this time
    assert run(fresh, model_cache, "import", str(out), "--workers", "2").returncode == 0
    to_stdout = run(fresh, model_cache, "export")
    assert to_stdout.returncode == 0 and to_stdout.stdout == out.read_text(encoding="utf-8")


def test_usage_errors(tmp_path, model_cache):
    missing = run(tmp_path / "home", model_cache, "import", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 1 and "is not a file" in missing.stderr
    bad_batch = run(tmp_path / "home", model_cache, "import", str(tmp_path / "nope.jsonl"), "--batch-size", "0")
    assert bad_batch.returncode == 2 and "--batch-size must be 1-1024" in bad_batch.stderr
    bad_workers = run(tmp_path / "home", model_cache, "import", str(tmp_path / "nope.jsonl"), "--workers", "0")
    assert bad_workers.returncode == 2 and "--workers must be 1-64" in bad_workers.stderr
    empty = run(tmp_path / "empty", model_cache, "export")
    assert empty.returncode == 1 and "nothing to export" in empty.stderr
