"""Issue 13.2 and 13.3 in numbers: start-up, the first store in a fresh data directory, and Claude Code hooks.

Three sections (pick with --only):

* ``startup``: spawn `python -m contextgraph serve` (stdio) in a fresh data directory and time Popen → the
  tools/list response, the way bench_cold_start does. With ``--before-src DIR`` the same is timed for another
  source tree (e.g. a `git worktree` of the commit before a change), run for run interleaved with this one, so
  the two see the same load on a shared machine.
* ``first-store``: after `contextgraph doctor --warm` (what setup.sh runs), spawn a server in a fresh data
  directory, do initialize → tools/list, then at once a `store_memory` with a progressToken: the store's
  latency counted from the tools/list response, and the progress notifications it sent. ``--cold`` adds one run
  with an empty model cache (the export a new data directory paid before the shared cache).
* ``hooks``: `contextgraph call TOOL --hook` as Claude Code runs it (a new process, the hook's JSON on stdin) for
  SessionStart (search_graph, get_memetic_status), UserPromptSubmit (search_graph) and PostToolUse
  (inject_context with a new edit, and with a repeated one, which is looked up and skipped), first with a
  server running on TCP (`contextgraph serve --transport tcp`, model loaded), then in-process (no server). The
  project is this repository (its README and git history make the SessionStart query). A bare `python -c pass`
  and `contextgraph --version` give the floor of any hook written in Python.

Run:  HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_hooks.py [--runs 5] [--only hooks] [--cold]
      [--before-src /tmp/before/src]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import REPO_ROOT, format_summary, summarize, write_result
from bench_cold_start import LineReader, send

PYTHON = str(REPO_ROOT / ".venv" / "bin" / "python") if (REPO_ROOT / ".venv").exists() else sys.executable
SCRIPT = str(Path(PYTHON).parent / "contextgraph")
TIMEOUT_S = 300.0
HOOK_BUDGET_MS = 300.0


def base_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "CONTEXTGRAPH_LOG_LEVEL": "error", **extra}


@contextmanager
def stdio_server(env: dict[str, str], src: Path | None = None):
    """A `serve` process on stdio; yields (proc, reader, t0 = perf_counter just before Popen)."""
    if src is not None:
        env = {**env, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([PYTHON, "-m", "contextgraph", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, bufsize=0)
    reader = LineReader(proc.stdout)
    try:
        yield proc, reader, t0
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.close()


def handshake(proc, reader) -> float:
    """initialize → initialized → tools/list; returns perf_counter when the tools/list response arrived."""
    deadline = time.perf_counter() + TIMEOUT_S
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench_hooks", "version": "0"}}})
    reader.wait_for_id(1, deadline)
    send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    _, listed = reader.wait_for_id(2, deadline)
    return listed


# -- startup --------------------------------------------------------------------------------------------------------
def bench_startup(runs: int, before_src: Path | None) -> dict[str, Any]:
    variants = {"this tree": REPO_ROOT / "src"}
    if before_src is not None:
        variants = {"before": before_src, **variants}
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs + 1):  # the first round warms the disk cache and is dropped
        for name, src in variants.items():
            with tempfile.TemporaryDirectory(prefix="cg-bench-home-") as home, \
                    stdio_server(base_env(CONTEXTGRAPH_HOME=home), src) as (proc, reader, t0):
                times[name].append((handshake(proc, reader) - t0) * 1e3)
    out = {}
    for name, values in times.items():
        stats = summarize(values[1:])
        print(format_summary(f"spawn -> tools/list ({name})", stats, "ms"))
        out[name] = stats
    return out


# -- first store ----------------------------------------------------------------------------------------------------
def doctor_warm(env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([SCRIPT, "doctor", "--warm"], env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    seconds = time.perf_counter() - started
    line = next((ln for ln in done.stdout.splitlines() if "model warm-up" in ln), done.stdout[-300:])
    print(f"contextgraph doctor --warm: {seconds:.2f} s  ({line.strip()})")
    return seconds


def first_store(env: dict[str, str], list_first: bool = True) -> dict[str, Any]:
    """list_first=False: the store follows initialize directly (a client that never lists the tools, so the
    server only starts loading the model when the store arrives)."""
    with tempfile.TemporaryDirectory(prefix="cg-bench-home-") as home, \
            stdio_server({**env, "CONTEXTGRAPH_HOME": home}) as (proc, reader, t0):
        if list_first:
            listed = handshake(proc, reader)
        else:
            send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench_hooks", "version": "0"}}})
            _, listed = reader.wait_for_id(1, time.perf_counter() + TIMEOUT_S)
            send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "store_memory", "_meta": {"progressToken": "first"},
            "arguments": {"content": "Deploys go out from the release branch after the smoke tests pass.",
                          "rationale": "the team's deploy rule"}}})
        progress: list[str] = []
        deadline = time.perf_counter() + TIMEOUT_S
        while True:  # read progress notifications until the answer
            while b"\n" not in reader.buf:
                if not reader.sel.select(max(0.0, deadline - time.perf_counter())):
                    raise TimeoutError("no answer to store_memory")
                chunk = os.read(reader.fd, 65536)
                if not chunk:
                    raise EOFError("the server closed stdout")
                reader.buf += chunk
            line, reader.buf = reader.buf.split(b"\n", 1)
            message = json.loads(line)
            if message.get("method") == "notifications/progress":
                progress.append(str(message["params"].get("message")))
            elif message.get("id") == 3:
                stored = time.perf_counter()
                assert "result" in message, message
                break
    return {"tools_list_ms": (listed - t0) * 1e3, "store_after_list_ms": (stored - listed) * 1e3,
            "spawn_to_stored_ms": (stored - t0) * 1e3, "progress": progress}


def bench_first_store(runs: int, cold: bool) -> dict[str, Any]:
    env = base_env()
    out: dict[str, Any] = {"doctor_warm_s": doctor_warm(env)}
    rows = [first_store(env) for _ in range(runs)]
    for key in ("tools_list_ms", "store_after_list_ms", "spawn_to_stored_ms"):
        stats = summarize([r[key] for r in rows])
        print(format_summary(f"first store, warm cache: {key}", stats, "ms",
                             3000.0 if key == "store_after_list_ms" else None))
        out[key] = stats
    print(f"  progress messages of the first run: {rows[0]['progress']}")
    unlisted = [first_store(env, list_first=False) for _ in range(max(1, runs // 2))]
    stats = summarize([r["store_after_list_ms"] for r in unlisted])
    print(format_summary("first store right after initialize (no tools/list)", stats, "ms", 3000.0))
    out["store_without_tools_list_ms"] = stats
    if cold:
        with tempfile.TemporaryDirectory(prefix="cg-bench-cache-") as cache:
            row = first_store(base_env(CONTEXTGRAPH_MODEL_CACHE=cache))
        print(f"first store, EMPTY model cache (the old per-data-directory export): store after tools/list "
              f"{row['store_after_list_ms']:.0f} ms; progress {row['progress']}")
        out["cold"] = row
    return out


# -- hooks ----------------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hook_events(run: int) -> dict[str, tuple[str, dict[str, Any]]]:
    cwd = str(REPO_ROOT)
    edit = {"cwd": cwd, "hook_event_name": "PostToolUse", "tool_name": "Edit", "session_id": "bench",
            "tool_input": {"file_path": f"{cwd}/src/contextgraph/shell/hooks.py", "old_string": "x",
                           "new_string": "REPEATED = 1  # the same edit, applied again"}}
    new_edit = {**edit, "tool_input": {**edit["tool_input"], "file_path": f"{cwd}/src/module_{run}.py",
                                       "new_string": f"def handler_{run}(event):\n    return route(event, "
                                                     f"attempt={run})  # edit number {run} of the benchmark"}}
    return {
        "SessionStart search_graph": ("search_graph", {"cwd": cwd, "hook_event_name": "SessionStart",
                                                       "source": "startup", "session_id": "bench"}),
        "SessionStart get_memetic_status": ("get_memetic_status", {"cwd": cwd, "hook_event_name": "SessionStart",
                                                                   "source": "startup", "session_id": "bench"}),
        "UserPromptSubmit search_graph": ("search_graph", {
            "cwd": cwd, "hook_event_name": "UserPromptSubmit", "session_id": "bench",
            "prompt": "How do the Claude Code hooks decide which memories to inject?"}),
        "PostToolUse inject_context (new edit)": ("inject_context", new_edit),
        "PostToolUse inject_context (repeat, skipped)": ("inject_context", edit),
    }


def time_hook(tool: str, event: dict[str, Any], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([SCRIPT, "call", tool, "--hook"], input=json.dumps(event), env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    elapsed = (time.perf_counter() - started) * 1e3
    if done.returncode != 0:
        raise RuntimeError(f"{tool} hook failed: {done.stderr[-2000:]}")
    return elapsed


def time_process(args: list[str], runs: int) -> dict[str, Any]:
    values = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, capture_output=True, check=True, timeout=60)
        values.append((time.perf_counter() - started) * 1e3)
    return summarize(values)


SEED = [
    "ContextGraph's hooks search the memory for the project at SessionStart: README title, branch, commits.",
    "The PostToolUse hook skips an edit whose nearest stored memory is above the duplicate similarity.",
    "UserPromptSubmit injects the memories relevant to the prompt as additionalContext.",
    "Hooks try the TCP server first; in-process they pay the store open and the model load.",
    "The ONNX graph is exported once into the installation's model cache, shared by every data directory.",
    "Release notes are written on Fridays by whoever cut the release.",
    "The staging database is read-only on weekends.",
    "Card charges are retried five times with exponential backoff.",
]


def seed(env: dict[str, str]) -> None:
    from contextgraph.config import Settings
    from contextgraph.shell.call import connect

    with connect(Settings.from_env(env)) as call:
        for text in SEED:
            assert call("store_memory", {"content": text, "rationale": "benchmark seed for the hooks"}).ok


def bench_hooks(runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, args in (("python -c pass", [PYTHON, "-c", "pass"]), ("contextgraph --version", [SCRIPT, "--version"])):
        stats = time_process(args, runs)
        print(format_summary(f"floor: {label}", stats, "ms"))
        out[label] = stats
    with tempfile.TemporaryDirectory(prefix="cg-bench-hooks-") as home:
        port = free_port()
        env = base_env(CONTEXTGRAPH_HOME=home, CONTEXTGRAPH_PORT=str(port))
        server = subprocess.Popen([SCRIPT, "serve", "--transport", "tcp", "--port", str(port)], env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise RuntimeError("the TCP server did not start") from None
                    time.sleep(0.1)
            seed(env)  # through the server: also waits for its model
            out["with server"] = run_hooks(env, runs, "server on TCP")
        finally:
            server.terminate()
            server.wait(timeout=30)
        closed = base_env(CONTEXTGRAPH_HOME=home, CONTEXTGRAPH_PORT="1")  # nothing listens: in-process
        out["in-process"] = run_hooks(closed, runs, "in-process")
    return out


def run_hooks(env: dict[str, str], runs: int, where: str) -> dict[str, Any]:
    samples: dict[str, list[float]] = {}
    for run in range(runs + 1):  # round 0 warms (and stores the edit that later rounds repeat); dropped
        for name, (tool, event) in hook_events(run).items():
            elapsed = time_hook(tool, event, env)
            if run:
                samples.setdefault(name, []).append(elapsed)
    out = {}
    for name, values in samples.items():
        stats = summarize(values)
        print(format_summary(f"hook ({where}): {name}", stats, "ms",
                             HOOK_BUDGET_MS if where == "server on TCP" else None))
        out[name] = stats
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=("startup", "first-store", "hooks"))
    parser.add_argument("--before-src", type=Path, help="another source tree to time start-up against")
    parser.add_argument("--cold", action="store_true", help="also one first store with an empty model cache")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    if args.only in (None, "startup"):
        results["startup"] = bench_startup(args.runs, args.before_src)
    if args.only in (None, "first-store"):
        results["first_store"] = bench_first_store(args.runs, args.cold)
    if args.only in (None, "hooks"):
        results["hooks"] = bench_hooks(args.runs)
    path = write_result("hooks", {"runs": args.runs, "results": results})
    print(f"[hooks] wrote {path}")


if __name__ == "__main__":
    main()
