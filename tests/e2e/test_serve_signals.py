"""Issue 12 item 6: `contextgraph serve` over stdio stops cleanly on SIGINT and on SIGTERM.

Claude Code stops a stdio server with SIGINT, then SIGTERM when it is still there. Before, SIGINT was ignored
(stdin was read by a thread no cancellation reaches) and SIGTERM killed the process without saving the
indexes. The console script is spawned as a host would, stores a memory, gets the signal, and must exit 0
within a few seconds having saved its indexes; a restart sees the memory."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "contextgraph"
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}


def _env(home: Path, model_cache: Path) -> dict[str, str]:
    return {**os.environ, "CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_MODEL_CACHE": str(model_cache),
            "HF_HUB_OFFLINE": "1", "CONTEXTGRAPH_LOG_LEVEL": "warn"}


class Served:
    """A spawned `contextgraph serve` spoken to in JSON lines, with timeouts on every read."""

    def __init__(self, home: Path, model_cache: Path) -> None:
        self.proc = subprocess.Popen([str(SCRIPT), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=_env(home, model_cache))
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, message: dict) -> None:
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def answer(self, id_: int, timeout: float = 180) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.lines.get(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == id_:
                return message


def _store_then_stop(home: Path, model_cache: Path, signum: int) -> tuple[subprocess.Popen, float]:
    served = Served(home, model_cache)
    try:
        served.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        served.answer(0)
        served.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        served.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "store_memory",
            "arguments": {"content": "The staging database is rebuilt every Sunday night.",
                          "rationale": "operations fact the team relies on"}}})
        stored = served.answer(1)
        assert "result" in stored, stored
        sent = time.monotonic()
        served.proc.send_signal(signum)  # stdin stays open, as a host's pipe does
        served.proc.wait(timeout=10)  # the target is ~3 s; generous for a loaded machine
        return served.proc, time.monotonic() - sent
    finally:
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.wait()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_over_stdio_saves_and_exits_on(signum, tmp_path, model_cache):
    home = tmp_path / "home"
    proc, seconds = _store_then_stop(home, model_cache, signum)
    stderr = proc.stderr.read().decode()
    assert proc.returncode == 0, stderr
    assert f"{signal.Signals(signum).name} received" in stderr
    print(f"{signal.Signals(signum).name}: exited {seconds:.2f} s after the signal")

    # close() ran: the indexes were written (they exist only once saved) ...
    indexes = home / "indexes"
    assert indexes.is_dir() and any(indexes.iterdir()), stderr
    # ... and a restart sees the memory.
    restart = subprocess.run([str(SCRIPT), "serve"], capture_output=True, text=True, timeout=120,
                             env=_env(home, model_cache), input="\n".join(json.dumps(m) for m in [
                                 {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT},
                                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                 {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": "get_recent_context", "arguments": {"limit": 10}}},
                             ]) + "\n")
    answers = {m.get("id"): m for m in map(json.loads, restart.stdout.splitlines())}
    recent = answers[1]["result"]["structuredContent"]
    assert recent["count"] == 1 and "staging database" in json.dumps(recent)
