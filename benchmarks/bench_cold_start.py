"""Cold start: spawn `contextgraph serve` (stdio) and time how long a client waits for a usable tool list.

Each run starts a fresh process with CONTEXTGRAPH_HOME in a new temporary directory and speaks raw
newline-delimited JSON-RPC the way a host does:

    initialize  ->  (wait for its response)  ->  notifications/initialized  +  tools/list  ->  (wait)

Measured from just before Popen to the moment each response line arrives on stdout:
  * time to the initialize response
  * time to the tools/list response  (budget: ≤ 1.0 s on a 2-core CPU, docs/budgets.md#cpu-budgets; 2 s with a GPU)
Then stdin is closed and the time until the process exits is recorded as well (it is killed if it hangs).

A short breakdown follows (skip with --no-breakdown): bare interpreter start, `import mcp.server`,
`import contextgraph.server`, and the top entries of `python -X importtime -c "import contextgraph.server"`.

The code measured is whatever the console script imports (PYTHONPATH wins): the result records that package's
directory, and how many of its modules had cached bytecode. With PYTHONDONTWRITEBYTECODE set and no __pycache__
(an editable install in a fresh checkout), every start compiles the package's ~200 modules again, a few hundred
ms that an installed server never pays; `python -m compileall -q <package dir>` first measures what it does.

Run:  .venv/bin/python benchmarks/bench_cold_start.py [--runs 15] [--warmup 1] [--no-breakdown]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import REPO_ROOT, format_summary, summarize, write_result

BUDGET_TOOLS_LIST_MS = 1000.0  # the 2-core CPU budget (docs/budgets.md#cpu-budgets)
RESPONSE_TIMEOUT_S = 30.0
EXIT_TIMEOUT_S = 5.0


def find_executable() -> str:
    local = REPO_ROOT / ".venv" / "bin" / "contextgraph"
    if local.exists():
        return str(local)
    found = shutil.which("contextgraph")
    if not found:
        sys.exit("contextgraph console script not found (.venv/bin/contextgraph or on PATH); pip install -e . first")
    return found


def venv_python() -> str:
    local = REPO_ROOT / ".venv" / "bin" / "python"
    return str(local) if local.exists() else sys.executable


class LineReader:
    """Reads newline-delimited JSON from a pipe with a deadline (no threads)."""

    def __init__(self, stream) -> None:
        self.fd = stream.fileno()
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.fd, selectors.EVENT_READ)
        self.buf = b""

    def wait_for_id(self, request_id: int, deadline: float) -> tuple[dict[str, Any], float]:
        """Return (message, perf_counter at arrival) of the response with this id; skips notifications."""
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if not line.strip():
                    continue
                arrived = time.perf_counter()
                msg = json.loads(line)
                if msg.get("id") == request_id and ("result" in msg or "error" in msg):
                    return msg, arrived
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no response to id {request_id} within {RESPONSE_TIMEOUT_S}s")
            if not self.sel.select(remaining):
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError(f"server closed stdout before answering id {request_id}")
            self.buf += chunk

    def close(self) -> None:
        self.sel.close()


def send(proc: subprocess.Popen, message: dict[str, Any]) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def one_run(exe: str, base_env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cg-bench-home-") as home, \
            tempfile.TemporaryFile(prefix="cg-bench-stderr-") as stderr_file:
        env = dict(base_env, CONTEXTGRAPH_HOME=home)
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [exe, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr_file, env=env,
            cwd=home, bufsize=0,
        )
        reader = LineReader(proc.stdout)
        result: dict[str, Any] = {}
        try:
            deadline = t0 + RESPONSE_TIMEOUT_S
            send(proc, {
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                           "clientInfo": {"name": "bench_cold_start", "version": "0"}},
            })
            init, t_init = reader.wait_for_id(1, deadline)
            if "error" in init:
                raise RuntimeError(f"initialize failed: {init['error']}")
            send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
            listed, t_list = reader.wait_for_id(2, deadline)
            if "error" in listed:
                raise RuntimeError(f"tools/list failed: {listed['error']}")
            result = {
                "initialize_ms": (t_init - t0) * 1000,
                "tools_list_ms": (t_list - t0) * 1000,
                "tool_count": len(listed["result"].get("tools", [])),
                "protocol_version": init["result"].get("protocolVersion"),
            }
        except BaseException:
            stderr_file.seek(0)
            sys.stderr.write(stderr_file.read().decode(errors="replace")[-4000:])
            raise
        finally:
            t_close = time.perf_counter()
            try:
                proc.stdin.close()
            except OSError:
                pass
            how = "eof"
            try:
                proc.wait(timeout=EXIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                how = "terminate"
                proc.terminate()
                try:
                    proc.wait(timeout=EXIT_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    how = "kill"
                    proc.kill()
                    proc.wait()
            result["exit_ms"] = (time.perf_counter() - t_close) * 1000
            result["exit_via"] = how
            result["returncode"] = proc.returncode
            reader.close()
            proc.stdout.close()
        return result


def measured_package(python: str, env: dict[str, str]) -> dict[str, Any]:
    """The contextgraph package the server will import, and how many of its modules have up-to-date bytecode."""
    code = ("import contextgraph, importlib.util, os, pathlib, json; d = pathlib.Path(contextgraph.__file__).parent; "
            "src = list(d.rglob('*.py')); "
            "ok = [p for p in src if os.path.exists(c := importlib.util.cache_from_source(p)) "
            "and os.stat(c).st_mtime >= os.stat(p).st_mtime]; "
            "print(json.dumps({'package': str(d), 'modules': len(src), 'bytecode_cached': len(ok)}))")
    return json.loads(subprocess.run([python, "-c", code], env=env, check=True, capture_output=True, text=True).stdout)


# -- breakdown -------------------------------------------------------------------------------------------------
def time_command(argv: list[str], runs: int, env: dict[str, str]) -> list[float]:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


_IMPORTTIME = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S.*)$")


def import_profile(python: str, env: dict[str, str], module: str, top: int) -> dict[str, Any]:
    """Run -X importtime once (after a warm-up import so .pyc files exist) and rank imports."""
    proc = subprocess.run([python, "-X", "importtime", "-c", f"import {module}"], env=env, check=True,
                          capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        m = _IMPORTTIME.match(line)
        if m:
            rows.append({"self_us": int(m.group(1)), "cumulative_us": int(m.group(2)),
                         "depth": (len(m.group(3)) - 1) // 2, "module": m.group(4).strip()})
    total_us = max((r["cumulative_us"] for r in rows if r["module"] == module), default=None)
    top_level = {}
    for r in rows:  # cumulative per top-level package, from its outermost import
        pkg = r["module"].split(".")[0]
        if r["cumulative_us"] > top_level.get(pkg, 0) and not r["module"].startswith(module):
            top_level[pkg] = r["cumulative_us"]
    return {
        "module": module,
        "total_us": total_us,
        "top_cumulative": sorted(rows, key=lambda r: r["cumulative_us"], reverse=True)[:top],
        "top_self": sorted(rows, key=lambda r: r["self_us"], reverse=True)[:top],
        "top_packages_cumulative_us": dict(sorted(top_level.items(), key=lambda kv: kv[1], reverse=True)[:top]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15, help="measured server starts (default 15)")
    ap.add_argument("--warmup", type=int, default=1,
                    help="unmeasured starts first, to warm .pyc/page cache (default 1)")
    ap.add_argument("--breakdown-runs", type=int, default=5, help="runs per breakdown command (default 5)")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the import-time breakdown")
    ap.add_argument("--name", default="cold_start", help="result file name (benchmarks/results/<name>.json)")
    args = ap.parse_args()

    exe = find_executable()
    python = venv_python()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTGRAPH_")}
    package = measured_package(python, env)
    load_at_start = list(os.getloadavg())
    print(f"cold start: {exe} serve  ({args.warmup} warm-up, {args.runs} measured runs); load average "
          f"{' '.join(f'{x:.2f}' for x in load_at_start)}")
    print(f"  package {package['package']}: {package['bytecode_cached']} of {package['modules']} modules with "
          "cached bytecode")

    warmups = [one_run(exe, env) for _ in range(args.warmup)]
    runs = []
    for i in range(args.runs):
        r = one_run(exe, env)
        runs.append(r)
        print(f"  run {i + 1:>2}: initialize {r['initialize_ms']:7.1f} ms   tools/list {r['tools_list_ms']:7.1f} ms   "
              f"exit {r['exit_ms']:6.1f} ms ({r['exit_via']}, rc={r['returncode']})")

    init_s = summarize([r["initialize_ms"] for r in runs])
    list_s = summarize([r["tools_list_ms"] for r in runs])
    exit_s = summarize([r["exit_ms"] for r in runs])
    print(format_summary("Popen -> initialize response", init_s, "ms"))
    print(format_summary("Popen -> tools/list response", list_s, "ms", BUDGET_TOOLS_LIST_MS))
    print(format_summary("stdin closed -> process exit", exit_s, "ms"))

    data: dict[str, Any] = {
        "command": [exe, "serve"],
        "env": "CONTEXTGRAPH_HOME=<fresh tempdir per run>; other CONTEXTGRAPH_* unset (log level default)",
        "protocol": "initialize (2024-11-05) -> wait -> notifications/initialized + tools/list -> wait",
        "unit": "ms",
        "package": package,
        "loadavg_at_start": load_at_start,
        "budget": {"tools_list_ms": BUDGET_TOOLS_LIST_MS, "meets_budget_p95": list_s["p95"] < BUDGET_TOOLS_LIST_MS},
        "tool_count": runs[0]["tool_count"] if runs else None,
        "initialize_ms": init_s,
        "tools_list_ms": list_s,
        "exit_ms": exit_s,
        "exit_via": sorted({r["exit_via"] for r in runs}),
        "warmup_runs": warmups,
        "runs": runs,
    }

    if not args.no_breakdown:
        n = args.breakdown_runs
        print(f"breakdown ({n} runs each, fresh interpreter):")
        breakdown = {}
        for label, code in (
            ("python -c pass", "pass"),
            ("import mcp.server", "import mcp.server"),
            ("import contextgraph.cli", "import contextgraph.cli"),
            ("import contextgraph.server", "import contextgraph.server"),
            ("import server + build_app",
             "import tempfile, contextgraph.server; from contextgraph.app import build_app; "
             "from contextgraph.config import Settings; "
             "build_server = contextgraph.server.build_server; "
             "build_server(build_app(Settings.from_env({'CONTEXTGRAPH_HOME': tempfile.mkdtemp(), "
             "'CONTEXTGRAPH_LOG_LEVEL': 'error'})))"),
        ):
            s = summarize(time_command([python, "-c", code], n, env))
            breakdown[label] = s
            print("  " + format_summary(label, s, "ms"))
        profile = import_profile(python, env, "contextgraph.server", top=12)
        data["breakdown_ms"] = breakdown
        data["importtime"] = profile
        print(f"  -X importtime: import contextgraph.server = {profile['total_us'] / 1000:.1f} ms cumulative; "
              f"top packages (cumulative ms):")
        for pkg, us in list(profile["top_packages_cumulative_us"].items())[:8]:
            print(f"    {pkg:<28} {us / 1000:7.1f}")
        print("  top self-time modules (ms):")
        for r in profile["top_self"][:8]:
            print(f"    {r['module']:<40} {r['self_us'] / 1000:7.1f}")

    write_result(args.name, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
