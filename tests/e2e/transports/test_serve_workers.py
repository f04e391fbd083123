"""`contextgraph serve --workers 2` as real processes: a front process and two workers on one store.

What must hold (README, "Several workers"): a memory stored through one worker is found by a search through the
other (one store, each worker's indexes catching up from its log); every connection of a Streamable HTTP
session reaches the worker holding the session, even when the client opens a new connection for every request;
new sessions go to both workers; a worker killed with SIGKILL is reported and started again; SIGTERM to the
front stops the workers and the front exits 0. No timing is asserted: every wait has a generous bound only."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from transport_helpers import RawLines, SseEvents, open_http_session, request, tool_call

import contextgraph

pytestmark = pytest.mark.anyio
SRC = str(Path(contextgraph.__file__).resolve().parents[1])
STORED = "The staging database is rebuilt every Sunday night by the ops cron job."


class Pool:
    """A spawned `contextgraph serve --transport all --workers 2` on ephemeral ports; its log, parsed."""

    def __init__(self, home: Path, model_cache: Path) -> None:
        env = {**os.environ, "CONTEXTGRAPH_HOME": str(home), "CONTEXTGRAPH_MODEL_CACHE": str(model_cache),
               "HF_HUB_OFFLINE": "1", "CONTEXTGRAPH_AUTO_DREAM": "0", "PYTHONPATH": SRC}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "contextgraph", "serve", "--transport", "all", "--port", "0", "--http-port", "0",
             "--workers", "2", "--log-level", "info"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, env=env, process_group=0)  # as a shell starts it: a group of its own
        self.events: queue.Queue[dict] = queue.Queue()
        self.seen: list[dict] = []
        threading.Thread(target=self._pump, daemon=True).start()
        listening = self.wait_for(lambda e: e.get("event") == "listening" and "workers" in e)
        tcp, http = (part.split("://")[1] for part in listening["endpoints"].split("; "))
        self.tcp_port, self.http = int(tcp.rsplit(":", 1)[1]), f"http://{http}"
        self.pids = {}
        while len(self.pids) < 2:
            started = self.wait_for(lambda e: e.get("event") == "worker started")
            self.pids[started["worker"]] = started["pid"]
        for _ in range(2):  # each has built its server and reads its inbox
            self.wait_for(lambda e: e.get("event") == "worker ready")

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                self.events.put({"text": line.decode(errors="replace")})

    def wait_for(self, matches, timeout: float = 120) -> dict:
        for event in self.seen:
            if matches(event):
                self.seen.remove(event)
                return event
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(0.1, deadline - time.monotonic()))
            if matches(event):
                return event
            self.seen.append(event)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=90)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def pool(tmp_path_factory, model_cache):
    served = Pool(tmp_path_factory.mktemp("pool"), model_cache)
    yield served
    served.stop()


def _fresh_connections(base: str) -> httpx2.AsyncClient:
    """An HTTP client that opens a new connection for every request, as a client behind a proxy may: the
    hardest case for session affinity."""
    return httpx2.AsyncClient(base_url=base, timeout=120, limits=httpx2.Limits(max_keepalive_connections=0))


async def _session_on(http: httpx2.AsyncClient, worker: int) -> dict[str, str]:
    for _ in range(10):  # new sessions go round-robin: one on each worker comes within a few
        headers = await open_http_session(http)
        if headers["mcp-session-id"].endswith(f"-w{worker}"):
            return headers
    raise AssertionError(f"no session opened on worker {worker}")


async def _call(http: httpx2.AsyncClient, headers: dict[str, str], id_: int, name: str, arguments: dict) -> dict:
    async with http.stream("POST", "/mcp", headers=headers, json=tool_call(id_, name, arguments)) as response:
        assert response.status_code == 200, await response.aread()
        if response.headers["content-type"].startswith("application/json"):
            return json.loads(await response.aread())
        _id, message = await SseEvents(response).next_message(timeout=120)
        return message


async def test_a_memory_stored_through_one_worker_is_found_through_the_other(pool):
    async with _fresh_connections(pool.http) as http:
        first, second = await _session_on(http, 0), await _session_on(http, 1)
        stored = await _call(http, first, 1, "store_memory",
                             {"content": STORED, "rationale": "operations fact the team relies on"})
        memory_id = stored["result"]["structuredContent"]["id"]
        found = await _call(http, second, 2, "search_graph", {"query": "when is the staging database rebuilt"})
        assert memory_id in {hit["id"] for hit in found["result"]["structuredContent"]["results"]}


async def test_a_real_client_keeps_its_session_across_fresh_connections_and_sessions_spread(pool):
    workers = set()
    async with _fresh_connections(pool.http) as http:
        for _ in range(4):
            workers.add((await http.get("/health")).json()["worker"])
        for _ in range(3):
            async with Client(streamable_http_client(f"{pool.http}/mcp", http_client=http), mode="legacy") as client:
                for _ in range(3):  # each request on a new connection, each reaching the session's worker
                    assert not (await client.call_tool("get_memetic_status", {})).is_error
    assert workers == {0, 1}


async def test_a_discover_era_client_keeps_its_scratchpad_across_fresh_connections(pool):
    async with _fresh_connections(pool.http) as http:  # the cookie it was given names its worker
        async with Client(streamable_http_client(f"{pool.http}/mcp", http_client=http), mode="2026-07-28") as client:
            for round_ in range(4):
                await client.call_tool("temporary_scratchpad", {"action": "write", "key": "plan", "value": str(round_)})
                read = await client.call_tool("temporary_scratchpad", {"action": "read"})
                assert read.structured_content["entries"] == {"plan": str(round_)}


async def test_tcp_connections_are_served_by_both_workers(pool):
    for _ in range(2):
        async with RawLines.connect("127.0.0.1", pool.tcp_port) as lines:
            await lines.send(request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                       "clientInfo": {"name": "pytest", "version": "1"}}))
            assert "result" in (await lines.receive(timeout=120) or {})


async def test_a_killed_worker_is_restarted_and_sigterm_stops_the_pool(tmp_path, model_cache):
    served = Pool(tmp_path / "home", model_cache)
    try:
        os.kill(served.pids[1], signal.SIGKILL)
        restarted = served.wait_for(lambda e: e.get("event") == "worker exited; starting another")
        assert restarted["worker"] == 1 and restarted["code"] == -signal.SIGKILL
        replacement = served.wait_for(lambda e: e.get("event") == "worker started")["pid"]
        async with _fresh_connections(served.http) as http:
            with anyio.fail_after(120):
                for worker in (0, 1):  # both slots serve sessions again
                    await _session_on(http, worker)
        assert served.stop() == 0
        for pid in (served.pids[0], replacement):
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        served.stop()



def test_ctrl_c_in_a_terminal_stops_every_worker_cleanly(tmp_path, model_cache):
    served = Pool(tmp_path / "home", model_cache)
    try:
        os.killpg(served.proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole foreground group
        assert served.proc.wait(timeout=90) == 0
        # each worker got one signal (from the front) and finished its save: its own "stopped" line
        stopped = {served.wait_for(lambda e: e.get("event") == "worker stopped", timeout=10)["worker"]
                   for _ in range(2)}
        assert stopped == {0, 1}
    finally:
        served.stop()


async def test_a_pool_whose_workers_die_as_they_start_gives_up(monkeypatch):
    from contextgraph.transports.worker_inbox import TCP
    from contextgraph.transports.worker_pool import Pool, run_pool

    monkeypatch.setenv("PYTHONPATH", SRC)
    failing = Pool(["no-such-command"], 1, head_limit=16384, head_seconds=1, grace_seconds=5)  # argparse exits 2
    with anyio.fail_after(120):
        await run_pool(failing, "127.0.0.1", {TCP: 0})
    assert failing.failure is not None and "exited 3 times in a row" in failing.failure
