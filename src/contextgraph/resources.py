"""MCP resources, prompts and argument completion: the read-only face of the memory for hosts that browse and
attach context (the Inspector, Claude Code's @-mentions and slash commands) rather than call tools.

Protocol adapters only, like server.py: every read goes through the Services bundle (graph, memory, the memetic
status), never the store; server.py registers the handlers.

* resources: `contextgraph://status` (the memetic status and the pulse) and `contextgraph://recent` (the most
  recent memories), both subscribable, and the template `contextgraph://memory/{id}` (one memory, by id or id prefix);
* prompts: `recall` (what we know about a topic, with the matching memories), `curate_duplicates` (the
  near-duplicate pairs to merge), `session_summary` (summarise a session's memories and store the summary);
* completion: memory ids by prefix for the template, tags for `recall`'s topic, sessions for `session_summary`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import mcp.types as types
from mcp.shared.exceptions import MCPError

from contextgraph.errors import ContextGraphError
from contextgraph.security.pii import redact_identifier

if TYPE_CHECKING:  # the server imports this module to answer the handshake, before the services load
    from contextgraph.services.container import Services

SCHEME = "contextgraph://"
STATUS_URI = SCHEME + "status"
RECENT_URI = SCHEME + "recent"
MEMORY_TEMPLATE = SCHEME + "memory/{id}"
_MEMORY_URI = re.compile(r"^contextgraph://memory/([0-9a-fA-F-]{1,36})$")
JSON = "application/json"
RECENT_LIMIT = 20  # memories in contextgraph://recent and in a session summary
COMPLETION_POOL = 200  # recent memories that completion draws ids, tags and sessions from
COMPLETION_MAX = 100  # MCP caps a completion at 100 values
RECALL_TOP_K = 8


def _invalid(message: str, **data: Any) -> MCPError:
    return MCPError(types.INVALID_PARAMS, message, data or None)


def _text(uri: str, payload: Any) -> types.ReadResourceResult:
    return types.ReadResourceResult(contents=[types.TextResourceContents(
        uri=uri, mime_type=JSON, text=json.dumps(payload, ensure_ascii=False, default=str))])


# -- resources ---------------------------------------------------------------------------------------------------

def list_resources() -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[
        types.Resource(uri=STATUS_URI, name="status", title="Memory status", mime_type=JSON,
                       description="Memory count, UTL metrics, the pulse and curation tasks (subscribable)."),
        types.Resource(uri=RECENT_URI, name="recent", title="Recent memories", mime_type=JSON,
                       description=f"The {RECENT_LIMIT} most recently stored memories."),
    ])


def list_resource_templates() -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[
        types.ResourceTemplate(uri_template=MEMORY_TEMPLATE, name="memory", title="A memory", mime_type=JSON,
                               description="One memory by id (32 hex characters) or a unique id prefix."),
    ])


async def status(services: Services) -> dict[str, Any]:
    from contextgraph.services.introspection.memetic import memetic_status  # loaded with the services by now

    s = services
    payload = await memetic_status(s.storage, s.perception, s.cognition, s.workspace, s.constitution,
                                  lambda domain: s.thresholds.value("theta_dup", domain))
    return {**payload, "_cognitive_pulse": s.cognition.pulse()}


async def read_resource(services: Services, uri: str) -> types.ReadResourceResult:
    try:
        if uri == STATUS_URI:
            return _text(uri, await status(services))
        if uri == RECENT_URI:
            return _text(uri, await services.graph.recent(RECENT_LIMIT, None, None))
        match = _MEMORY_URI.match(uri)
        if match:
            return _text(uri, await services.graph.hydrate(f"[node_{match.group(1).replace('-', '').lower()}]"))
    except ContextGraphError as exc:  # e.g. no such memory: the message says what to do
        raise _invalid(f"Resource not found: {uri}. {exc.message}", uri=uri) from None
    raise _invalid(f"Resource not found: {uri}. Readable: {STATUS_URI}, {RECENT_URI}, {MEMORY_TEMPLATE}.", uri=uri)


CHANGING = (STATUS_URI, RECENT_URI)  # what a memory operation changes; subscribers of these are notified


class Subscribers:
    """resources/subscribe (handshake-era sessions; 2026-07-28 clients listen on subscriptions/listen instead).
    Any URI is honoured, as the SDK's listen handler honours one (a subscription to a resource that never changes
    simply never fires); contextgraph://status and contextgraph://recent change with every memory operation, and
    their subscribers then get `notifications/resources/updated`. A subscriber is remembered by its session key
    with the request's session proxy, whose standalone channel outlives the request; one whose connection is gone
    is dropped on the first failed send."""

    def __init__(self, remembered: int) -> None:
        self.sessions: dict[str, tuple[Any, set[str]]] = {}
        self.remembered = remembered

    def subscribe(self, key: str, session: Any, uri: str) -> None:
        _, uris = self.sessions.pop(key, (None, set()))
        self.sessions[key] = (session, uris | {uri})
        while len(self.sessions) > self.remembered:
            self.sessions.pop(next(iter(self.sessions)))

    def unsubscribe(self, key: str, uri: str) -> None:
        _, uris = self.sessions.get(key, (None, set()))
        uris.discard(uri)
        if not uris:
            self.sessions.pop(key, None)

    async def notify(self, changed: tuple[str, ...] = CHANGING) -> None:
        for key, (session, uris) in list(self.sessions.items()):
            try:
                for uri in (u for u in changed if u in uris):
                    with anyio.fail_after(1.0):  # a stalled client never holds up the call that changed it
                        await session.send_resource_updated(uri)
            except Exception:
                self.sessions.pop(key, None)


# -- prompts -----------------------------------------------------------------------------------------------------

PROMPTS = (
    types.Prompt(name="recall", title="Recall what we know",
                 description="What the memory holds about a topic: the best-matching memories, to answer from "
                             "and cite.",
                 arguments=[types.PromptArgument(name="topic", description="What to recall.", required=True)]),
    types.Prompt(name="curate_duplicates", title="Curate duplicates",
                 description="The near-duplicate memory pairs among recent memories, to merge or keep apart."),
    types.Prompt(name="session_summary", title="Summarise a session",
                 description="A session's memories, to summarise and store the summary as one memory.",
                 arguments=[types.PromptArgument(name="session_id", required=False,
                                                 description="The session to summarise; all recent memories if "
                                                             "omitted.")]),
)


def _user(text: str) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))


def _memory_lines(memories: list[dict[str, Any]]) -> str:
    return "\n".join(f"- [node_{m['id'][:8]}] {' '.join(str(m['content']).split())}"
                     + (f" (tags: {', '.join(m['tags'])})" if m.get("tags") else "") for m in memories)


async def _recall(services: Services, args: dict[str, str]) -> types.GetPromptResult:
    topic = (args.get("topic") or "").strip()
    if not topic:
        raise _invalid("The recall prompt needs a topic: what should be recalled?", field="topic")
    found = await services.memory.search(topic, top_k=RECALL_TOP_K, min_similarity=0.0, modality=None,
                                         breakdown=False)
    results = found.payload()["results"]
    if results:
        body = (f"What do we know about {topic}? These are the stored memories that match best, best first:\n\n"
                f"{_memory_lines(results)}\n\nAnswer from them and cite each one you use by its tag "
                "([node_…]; hydrate_citation expands one). Say plainly what they do not cover.")
    else:
        body = (f"What do we know about {topic}? The memory holds nothing that matches. Say so, and store what "
                "we learn about it with store_memory (with a rationale).")
    return types.GetPromptResult(description=f"Recall: {topic}", messages=[_user(body)])


async def _curate_duplicates(services: Services, args: dict[str, str]) -> types.GetPromptResult:
    tasks = (await status(services))["curation_tasks"]
    pairs = tasks["duplicates"]
    if not pairs:
        return types.GetPromptResult(description="Curate duplicates", messages=[_user(
            f"No near-duplicate pairs among the {tasks['window']} most recent memories (similarity threshold "
            f"{tasks['duplicate_threshold']}). Nothing to merge.")])
    lines = "\n".join(f"- {p['memories'][0]} and {p['memories'][1]} (similarity {p['similarity']:.3f})"
                      for p in pairs)
    return types.GetPromptResult(description="Curate duplicates", messages=[_user(
        f"These memory pairs are near-duplicates:\n\n{lines}\n\nFor each pair, read both (the resource "
        "contextgraph://memory/{id}, or hydrate_citation). If they say the same thing, merge them with "
        "merge_concepts (source_node_ids, target_name, a rationale); if they differ in a way that matters, "
        "keep both and say why.")])


async def _session_summary(services: Services, args: dict[str, str]) -> types.GetPromptResult:
    session = (args.get("session_id") or "").strip() or None
    if session is not None:  # stored sessions were redacted so: the same name finds them, and is not echoed
        session = redact_identifier(session)[0]
    recent = await services.graph.recent(RECENT_LIMIT, None, session)
    memories = recent["memories"]
    scope = f"session {session}" if session else "the recent memories"
    if not memories:
        return types.GetPromptResult(description=f"Summarise {scope}", messages=[_user(
            f"There are no memories in {scope} to summarise.")])
    return types.GetPromptResult(description=f"Summarise {scope}", messages=[_user(
        f"Summarise {scope} ({len(memories)} memories, most recent first):\n\n{_memory_lines(memories)}\n\n"
        "Write a short summary of what was decided, learned and left open, then store it with store_memory "
        "(tags: session-summary; rationale: why this summary is worth keeping).")])


_PROMPTS: dict[str, Callable[[Services, dict[str, str]], Awaitable[types.GetPromptResult]]] = {
    "recall": _recall, "curate_duplicates": _curate_duplicates, "session_summary": _session_summary}


def list_prompts() -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=list(PROMPTS))


async def get_prompt(services: Services, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    build = _PROMPTS.get(name)
    if build is None:
        raise _invalid(f"Unknown prompt: {name}. Prompts: {', '.join(_PROMPTS)}.", name=name)
    try:
        return await build(services, arguments or {})
    except ContextGraphError as exc:
        raise _invalid(exc.message, **exc.data) from None


# -- completion --------------------------------------------------------------------------------------------------

def _values(candidates: list[str], prefix: str) -> types.Completion:
    wanted = prefix.lower()
    matches = list(dict.fromkeys(c for c in candidates if c.lower().startswith(wanted)))
    return types.Completion(values=matches[:COMPLETION_MAX], total=len(matches),
                            has_more=len(matches) > COMPLETION_MAX)


async def complete(services: Services, ref: types.PromptReference | types.ResourceTemplateReference,
                   argument: str, value: str) -> types.CompleteResult:
    """Completion from the most recent memories (a bounded read through the graph service)."""
    empty = types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))
    if isinstance(ref, types.ResourceTemplateReference):
        if ref.uri != MEMORY_TEMPLATE or argument != "id":
            return empty
        kind = "id"
    else:
        kind = {("recall", "topic"): "tag", ("session_summary", "session_id"): "session"}.get((ref.name, argument))
        if kind is None:
            return empty
    memories = (await services.graph.recent(COMPLETION_POOL, None, None))["memories"]
    if kind == "id":
        candidates = [m["id"] for m in memories]
        prefix = value.replace("-", "")
    elif kind == "tag":
        candidates = [t for m in memories for t in m["tags"]]
        prefix = value
    else:
        candidates = [m["session"] for m in memories if m.get("session")]
        prefix = value
    return types.CompleteResult(completion=_values(candidates, prefix))
