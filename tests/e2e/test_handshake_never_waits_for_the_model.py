"""A host's handshake never waits for the embedding model (issue 38.5): `contextgraph serve` answers initialize
and tools/list, and then starts loading the model in the background; while that load is stuck, the tool list,
a discovery call and the resources list are still answered. A host that gives a server a few seconds to connect
(Claude Code in `-p` mode gives it none) must never find it busy with the model.

The model directory's modules.json is a named pipe: the background load blocks on reading it until the test
writes to it, so "the load is running" is a fact the test sees (the pipe has a reader), not a guess about time."""

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "contextgraph"
DEADLINE_S = 120  # only so that a regression fails instead of hanging the suite; nothing here is timed


class Session:
    """Raw JSON-RPC lines to a `contextgraph serve` child over stdio."""

    def __init__(self, home: Path, model_dir: Path) -> None:
        env = {**os.environ, "CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_MODEL_DIR": str(model_dir),
               "CONTEXTGRAPH_LOG_LEVEL": "error", "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen([str(SCRIPT), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)

    def send(self, method: str, params: dict | None = None, id_: int | None = None) -> None:
        message: dict = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        if id_ is not None:
            message["id"] = id_
        self.stdin.write((json.dumps(message) + "\n").encode())
        self.stdin.flush()

    def answer(self, id_: int) -> dict:
        while True:
            assert self.selector.select(DEADLINE_S), f"no answer to request {id_}"
            line = self.stdout.readline()
            if not line:
                _, stderr = self.proc.communicate(timeout=DEADLINE_S)
                raise AssertionError(f"the server closed stdout before answering {id_}: {stderr.decode()[-2000:]}")
            message = json.loads(line)
            if message.get("id") == id_:
                return message

    def request(self, id_: int, method: str, params: dict | None = None) -> dict:
        self.send(method, params, id_)
        return self.answer(id_)


def wait_for_a_reader(pipe: Path) -> int:
    """Open the pipe for writing once the background load has opened it for reading (ENXIO until then)."""
    give_up = time.monotonic() + DEADLINE_S
    while True:
        try:
            return os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            assert time.monotonic() < give_up, "the model load never started reading the model directory"
            time.sleep(0.05)


def test_the_tool_list_and_discovery_never_wait_for_the_model(tmp_path: Path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    modules = model_dir / "modules.json"
    os.mkfifo(modules)
    session = Session(tmp_path / "home", model_dir)
    try:
        initialized = session.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                        "clientInfo": {"name": "pytest", "version": "1"}})
        assert initialized["result"]["serverInfo"]["name"] == "contextgraph"
        session.send("notifications/initialized")
        assert session.request(2, "tools/list")["result"]["tools"]  # this starts the model load

        writer = wait_for_a_reader(modules)  # the load is now blocked inside the model directory
        try:
            assert session.request(3, "tools/list")["result"]["tools"]
            found = session.request(4, "tools/call", {"name": "tool_find", "arguments": {"query": "load tools"}})
            assert found["result"]["structuredContent"]["results"], found
            assert session.request(5, "resources/list")["result"]["resources"]
        finally:
            os.write(writer, b"[]")  # let the load go on (it fails: no model here) so that the server can exit
            os.close(writer)
        session.stdin.close()
        assert session.proc.wait(DEADLINE_S) == 0
    finally:
        if session.proc.poll() is None:
            session.proc.kill()
        session.proc.wait()
