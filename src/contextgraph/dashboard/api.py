"""The dashboard's JSON API (/dashboard/api/...): every panel's data from the same tools MCP clients call, run
through the one dispatcher, so validation (-32602 naming the field), the rationale rule (-32009), the error
codes and hints, the pulse and the call log hold for a click as for a model.

A refused call answers with an HTTP status that says what kind of refusal it was and the dispatcher's error
object as the body: {"error": {"code", "message", "data": {"hint", "field", ...}}}; never a traceback.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from contextgraph.app import App
from contextgraph.tools.dispatch import PULSE_KEY, ToolCallFailed

SESSION = "dashboard"
# What each curation button runs (POST /dashboard/api/curation/{action}); nothing else can be posted.
CURATION_ACTIONS = {"merge": "merge_concepts", "forget": "forget_concept", "restore": "restore_from_hash"}
# Optional subsystems: shown when registered, "not available" otherwise.
OPTIONAL_STATUS = {"neuromodulation": "get_neuromodulation_state", "dream": "get_dream_status"}
_STATUS_FOR_CODE = {-32602: 400, -32009: 400, -32004: 404, -32012: 404, -32011: 410, -32014: 409, -32010: 409,
                    -32015: 409}
NO_STORE = {"cache-control": "no-store"}


class ApiError(Exception):
    def __init__(self, failure: ToolCallFailed) -> None:
        super().__init__(failure.message)
        self.failure = failure

    def response(self) -> JSONResponse:
        f = self.failure
        status = _STATUS_FOR_CODE.get(f.code, 500 if f.code == -32603 else 422)
        data = {k: v for k, v in f.data.items() if k != PULSE_KEY}
        return JSONResponse({"error": {"code": f.code, "message": f.message, "data": data},
                             PULSE_KEY: f.data.get(PULSE_KEY)}, status_code=status, headers=NO_STORE)


class DashboardApi:
    def __init__(self, app: App) -> None:
        self.app = app
        d = app.constitution["dashboard"]
        self.recent_limit = int(d["recent_limit"])
        self.search_top_k = int(d["search_top_k"])
        self.depth = int(d["neighbourhood_depth"])

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One tool call through the dispatcher, as session "dashboard" and not as the agent (a memory the page
        opens is no judgement of its relevance); ApiError carries a refusal."""
        try:
            context = dataclasses.replace(self.app.tool_context(SESSION), agent=False)
            outcome = await self.app.dispatcher.call(name, arguments, context)
        except ToolCallFailed as failure:
            raise ApiError(failure) from None
        return outcome.payload

    async def optional(self, panel: str) -> dict[str, Any]:
        """A subsystem's status tool when the registry has it; otherwise why it is not shown."""
        tool = OPTIONAL_STATUS[panel]
        if tool not in self.app.registry.specs:
            return {"available": False, "reason": f"{tool} is not part of this server yet"}
        try:
            return {"available": True, "tool": tool, **await self.call(tool, {})}
        except ApiError as exc:
            return {"available": False, "reason": exc.failure.message, "code": exc.failure.code}

    # -- panels ------------------------------------------------------------------------------------------------
    async def now(self) -> dict[str, Any]:
        """The Now panel: memetic status (counts, UTL, curation counts), the network, C, the workspace, the
        index sizes and the optional subsystems. The status and the network are read back to back, so the
        numbers the page shows are those the tools return at the moment of rendering."""
        memetic = await self.call("get_memetic_status", {})
        sync = await self.call("get_kuramoto_sync", {})
        consciousness, workspace, utl, manifest, neuromodulation, dream = await asyncio.gather(
            self.call("get_consciousness_state", {}), self.call("get_workspace_status", {}),
            self.call("utl_status", {}), self.call("get_graph_manifest", {}),
            self.optional("neuromodulation"), self.optional("dream"))
        memory_layer = manifest.get("layers", {}).get("memory", {})
        return {
            "at": self.app.services.clock.now(),
            "pulse": memetic[PULSE_KEY],
            "memetic": memetic,
            "metrics": metrics(memetic, sync),
            "kuramoto": sync,
            "consciousness": consciousness,
            "workspace": workspace,
            "lifecycle": utl.get("lifecycle"),
            "per_space": utl.get("per_space"),
            "indexes": memory_layer.get("indexes"),
            "store_bytes": memory_layer.get("store_bytes"),
            "neuromodulation": neuromodulation,
            "dream": dream,
        }

    def history(self) -> dict[str, Any]:
        self.app.services.history.maybe_sample()  # a sample now if the last one is older than the cadence
        return self.app.services.history.view()

    async def recent(self, limit: Any = None) -> dict[str, Any]:
        return await self.call("get_recent_context", {"limit": self.recent_limit if limit is None else limit})

    async def search(self, query: Any, top_k: Any = None, breakdown: bool = False) -> dict[str, Any]:
        return await self.call("search_graph", {"query": query, "top_k": self.search_top_k if top_k is None else top_k,
                                                "include_breakdown": breakdown})

    async def memory(self, memory_id: str) -> dict[str, Any]:
        """A memory's page: the record, its lineage, its neighbours and its Johari window per space."""
        record = await self.call("hydrate_citation", {"citation_tag": f"[node_{memory_id}]"})
        full_id = record["node_id"]
        lineage, neighbours, johari = await asyncio.gather(
            self.call("get_node_lineage", {"node_id": full_id}),
            self.call("get_neighborhood", {"node_id": full_id, "depth": self.depth, "min_weight": 0}),
            self.call("get_johari_classification", {"memory_id": full_id}))
        return {"memory": record, "lineage": lineage, "neighbourhood": neighbours, "johari": johari}

    async def neighbourhood(self, memory_id: str, depth: Any = None) -> dict[str, Any]:
        return await self.call("get_neighborhood", {"node_id": memory_id, "depth": self.depth if depth is None
                                                    else depth, "min_weight": 0})

    async def curation(self) -> dict[str, Any]:
        """The Curation panel: the memetic status's tasks with the memories they name, and the tombstones."""
        memetic, tombstones = await asyncio.gather(self.call("get_memetic_status", {}),
                                                   self.call("search_tombstones", {}))
        tasks = memetic["curation_tasks"]
        named = {i for pair in tasks["duplicates"] for i in pair["memories"]} | set(tasks["orphans"])
        named |= {i for group in tasks["conflicts"] for i in group}  # each conflict: the memories competing
        memories: dict[str, Any] = {}
        for memory_id in sorted(i for i in named if i):
            try:
                memories[memory_id] = await self.call("hydrate_citation", {"citation_tag": f"[node_{memory_id}]"})
            except ApiError:  # gone since the status was read (merged or forgotten meanwhile)
                continue
        return {"tasks": tasks, "memories": memories, "tombstones": tombstones}

    async def curate(self, action: str, arguments: Any) -> dict[str, Any]:
        tool = CURATION_ACTIONS[action]
        return {"tool": tool, **await self.call(tool, arguments)}


def metrics(memetic: dict[str, Any], sync: dict[str, Any]) -> dict[str, Any]:
    """The testability contract's numbers (data-metric / data-oscillator), as the tools return them."""
    utl = memetic["utl"]
    return {
        "memory_count": memetic["fingerprintCount"],
        "edge_count": memetic["layers"]["memory"]["edges"],
        "kuramoto_r": sync["r"],
        "entropy": utl["entropy"],
        "coherence": utl["coherence"],
        "learning_score": utl["learningScore"],
        "oscillators": list(sync["phases"]),
    }


async def read_json(request: Request) -> Any:
    """A POST body as JSON, or BodyError (answered like the dispatcher answers bad arguments)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise BodyError("a JSON body (Content-Type: application/json) is required")
    try:
        return await request.json()
    except ValueError as exc:
        raise BodyError(f"the body is not valid JSON ({exc})") from None


class BodyError(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why

    def response(self, code: int) -> JSONResponse:
        return JSONResponse({"error": {"code": code, "message": f"Invalid request: {self.why}.",
                                       "data": {"field": "body", "hint": "POST a JSON object of the tool's "
                                                                         "arguments."}}},
                            status_code=400, headers=NO_STORE)
