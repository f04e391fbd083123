"""Registry → mcp low-level Server. Everything protocol-shaped lives here: tools/list with aliases, tools/call
through the dispatcher, and the middleware that puts the pulse where every host can see it (docs/tools.md):

* `result._cognitive_pulse` (the original contract) and `result._meta["contextgraph/pulse"]` (kept by SDK clients),
  added after the SDK's result sieve, which drops unknown members;
* `_cognitive_pulse` inside the payload itself (text and structuredContent), which is all Claude Code hands
  its model; put there by the dispatcher;
* `error.data._cognitive_pulse` on every tools/call error, including the SDK's own parameter errors.
"""

from __future__ import annotations

import json
import time
import warnings
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import allowed_log_levels
from mcp.server.lowlevel import NotificationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated, ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from contextgraph import __version__, resources
from contextgraph.constitution import Constitution
from contextgraph.deferred_app import DeferredApp
from contextgraph.errors import ContextGraphError
from contextgraph.instructions import system_instructions
from contextgraph.log import get_logger
from contextgraph.security.session_label import LABELS
from contextgraph.tools.outcome import PULSE_KEY, ToolCallFailed

if TYPE_CHECKING:
    from contextgraph.app import App

PULSE_META_KEY = "contextgraph/pulse"
_log = get_logger("server")


class ContextGraphServer(Server):
    """Advertises tools.listChanged on every transport: the Streamable HTTP manager builds its initialization
    options with no arguments, so the default has to carry it."""

    def create_initialization_options(self, notification_options=None, experimental_capabilities=None,
                                      extensions=None):
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


# Where transports/client_identity.py puts a discover-era HTTP request's client identity in the ASGI scope, and
# transports/session_owner.py the digest of who sent a /mcp request (its principal and peer).
CLIENT_SCOPE_KEY = "contextgraph.client"
OWNER_SCOPE_KEY = "contextgraph.owner"


def session_key(ctx: ServerRequestContext) -> str:
    """The opaque label of the session a call belongs to (temporary_scratchpad, get_recent_context(session_only),
    and the `session` memory records carry): a keyed hash of the session's handle (security/session_label.py),
    never the handle itself, which is a bearer secret and the records are readable by every client.

    The SDK builds a fresh ServerSession (and, in the 2026 discover era, a fresh Connection) for every request,
    so neither identifies a client. In order: the client identity of a discover-era HTTP request (its cookie,
    bound to who presents it); the HTTP session id of a handshake-era /mcp request (the SDK checked it belongs
    to this requestor before the handler runs; a header on any other request, e.g. a legacy SSE POST or a
    discover-era request, names nothing); else what lives as long as the client's stream, the connection's
    outbound channel (stdio, TCP, SSE). (mcp 2.3 exposes the connection only as the private
    `ServerSession._connection`; the last fallback keeps a request working if that ever moves.)"""
    scope = getattr(ctx.request, "scope", None)
    if isinstance(scope, dict):
        owner = scope.get(OWNER_SCOPE_KEY)
        if scope.get(CLIENT_SCOPE_KEY):
            return LABELS.label("client", f"{scope[CLIENT_SCOPE_KEY]}\0{owner or ''}")
        headers = getattr(ctx.request, "headers", None)
        if owner and headers is not None and headers.get("mcp-session-id"):
            return LABELS.label("http", headers["mcp-session-id"])
    connection = getattr(ctx.session, "_connection", None)
    channel = getattr(connection, "outbound", None)
    return LABELS.label("conn", f"{id(channel if channel is not None else ctx.session):x}")


_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class _ClientLogs:
    """MCP logging: after every tool call the server sends one `notifications/message` (logger `contextgraph`:
    tool, alias, latency, outcome, code) on the call's own stream. Handshake-era clients opt in with
    `logging/setLevel` (per session; nothing is sent before it); 2026-07-28 clients opt in per request through
    `_meta`, which the SDK enforces. Successful calls log at info, refused ones at warning, crashes at error."""

    def __init__(self, remembered: int) -> None:
        self.levels: OrderedDict[str, str] = OrderedDict()
        self.remembered = remembered

    async def set_level(self, ctx: ServerRequestContext, params: types.SetLevelRequestParams) -> types.EmptyResult:
        key = session_key(ctx)
        self.levels[key] = params.level
        self.levels.move_to_end(key)
        while len(self.levels) > self.remembered:
            self.levels.popitem(last=False)
        return types.EmptyResult()

    async def report(self, ctx: ServerRequestContext, level: types.LoggingLevel, data: dict[str, Any]) -> None:
        if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if level not in allowed_log_levels(ctx.session.protocol_version, ctx.meta):
                return
        else:
            wanted = self.levels.get(session_key(ctx))
            if wanted is None or _LOG_LEVELS.index(level) < _LOG_LEVELS.index(wanted):
                return
        message = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level=level, data=data, logger="contextgraph"))
        try:  # on the call's own stream, as 2026-07-28 requires and Streamable HTTP prefers
            await ctx.session.send_notification(message, related_request_id=ctx.request_id)
        except Exception:  # advisory: a log line never fails the call it describes
            _log.debug("log notification not delivered", exc_info=True)


def _tool_caller(deferred: DeferredApp, bus: InMemorySubscriptionBus, error_results: ErrorResults,
                 client_logs: _ClientLogs, memory_changed: Callable[[], Awaitable[None]]):
    """The tools/call handler: the dispatcher's outcome as a CallToolResult (the pulse in _meta), a failure as an
    error result or a JSON-RPC error by the session's protocol era, each call logged to the client."""

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams):
        app = await deferred.get()

        async def notify_tools_changed() -> bool:
            await ctx.session.send_tool_list_changed()  # handshake-era sessions
            await bus.publish(ToolsListChanged())  # discover-era listeners
            return True

        tool_ctx = app.tool_context(session_key(ctx), notify_tools_changed, ctx.session.report_progress)
        started = time.perf_counter()
        entry: dict[str, Any] = {"tool": app.dispatcher.shown_name(params.name)}  # the client may send anything
        try:
            outcome = await app.dispatcher.call(params.name, params.arguments, tool_ctx, request_id=ctx.request_id)
        except ToolCallFailed as failure:
            entry.update(outcome="error", code=failure.code, error=failure.data.get("error"),
                         latency_ms=round((time.perf_counter() - started) * 1000, 3))
            internal = failure.code == app.constitution.error("INTERNAL_ERROR").code
            await client_logs.report(ctx, "error" if internal else "warning", entry)
            message = readable_message(failure.message, failure.data)
            if failure.code in error_results.codes and error_results.applies(ctx.session.protocol_version):
                return error_result(failure.code, message, failure.data)
            raise MCPError(code=failure.code, message=message, data=failure.data) from None
        entry.update(tool=outcome.tool, alias=outcome.alias, outcome="ok",
                     latency_ms=round((time.perf_counter() - started) * 1000, 3))
        await client_logs.report(ctx, "info", entry)
        if app.registry.specs[outcome.tool].category != "discovery":
            await memory_changed()
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(outcome.payload, ensure_ascii=False))],
            structured_content=outcome.payload,
            is_error=False,
            _meta={PULSE_META_KEY: outcome.pulse},
        )

    return call_tool


def build_server(app: App | DeferredApp) -> ContextGraphServer:
    """`app` may still be building (deferred_app.py): initialize and tools/list are answered without it, and
    every other request that needs it waits for it."""
    deferred = app if isinstance(app, DeferredApp) else DeferredApp.ready(app)
    c = deferred.constitution
    bus = InMemorySubscriptionBus()  # 2026-07-28 clients receive list_changed only on subscriptions/listen
    error_results = ErrorResults.from_constitution(c)
    subscribers = resources.Subscribers(int(c.get("transport.log_levels_remembered")))

    async def memory_changed() -> None:
        """After a memory operation: the status and recent resources changed, for their subscribers (both eras)."""
        for uri in resources.CHANGING:
            await bus.publish(ResourceUpdated(uri))
        await subscribers.notify()
    client_logs = _ClientLogs(int(c.get("transport.log_levels_remembered")))

    async def list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None):
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    output_schema=tool.output_schema,
                    _meta={"aliases": list(tool.aliases)} if tool.aliases else None,
                )
                for tool in await deferred.listed_tools()
            ]
        )

    call_tool = _tool_caller(deferred, bus, error_results, client_logs, memory_changed)

    # Resources, prompts and completion (resources.py): thin registrations; the reads go through the services.
    async def list_resources(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None):
        return resources.list_resources()

    async def list_resource_templates(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None):
        return resources.list_resource_templates()

    async def read_resource(ctx: ServerRequestContext, params: types.ReadResourceRequestParams):
        return await resources.read_resource((await deferred.get()).services, str(params.uri))

    async def subscribe(ctx: ServerRequestContext, params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscribers.subscribe(session_key(ctx), ctx.session, str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: ServerRequestContext, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subscribers.unsubscribe(session_key(ctx), str(params.uri))
        return types.EmptyResult()

    async def list_prompts(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None):
        return resources.list_prompts()

    async def get_prompt(ctx: ServerRequestContext, params: types.GetPromptRequestParams):
        return await resources.get_prompt((await deferred.get()).services, params.name, params.arguments)

    async def complete(ctx: ServerRequestContext, params: types.CompleteRequestParams):
        services = (await deferred.get()).services
        return await resources.complete(services, params.ref, params.argument.name, params.argument.value)

    with warnings.catch_warnings():  # logging is deprecated from 2026-07-28; handshake-era clients still use it
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server = ContextGraphServer(
            "contextgraph",
            version=__version__,
            title="ContextGraph",
            instructions=system_instructions(),
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_subscriptions_listen=ListenHandler(bus),
            on_list_resources=list_resources,
            on_list_resource_templates=list_resource_templates,
            on_read_resource=read_resource,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_completion=complete,
            on_set_logging_level=client_logs.set_level,
        )
    server.add_request_handler(IDENTITY_METHOD, types.RequestParams, _identity(deferred))
    server.middleware.append(_envelope_middleware(deferred))
    server.middleware.append(_handshake_gate(c))  # inside the envelope, so a refused tools/call gets its pulse
    return server


IDENTITY_METHOD = "contextgraph/identity"


def _identity(deferred: DeferredApp):
    """`contextgraph/identity`, after the handshake: which store this server serves (StoreHandle.identity), so
    that `contextgraph call` and the hooks use a server only when it serves the store they were asked for."""

    async def identity(ctx: ServerRequestContext, params: types.RequestParams) -> dict[str, Any]:
        app = await deferred.get()
        try:
            found = await app.services.storage.identity()
        except ContextGraphError as exc:  # a store that does not open: the client cannot match it
            raise MCPError(app.constitution.error(exc.code_name).code, exc.message) from None
        return {"server": "contextgraph", "version": __version__, **found}

    return identity


@dataclass(frozen=True, slots=True)
class ErrorResults:
    """docs/tools.md (SEP-1303): which failures of a tool call come back as a tool result with `isError: true`, and
    from which protocol version on. Protocol versions are ISO dates, so they compare as strings."""

    since_protocol: str
    codes: frozenset[int]

    @classmethod
    def from_constitution(cls, c: Any) -> ErrorResults:
        table = c.get("server.error_results")
        return cls(str(table["since_protocol"]), frozenset(c.error(name).code for name in table["codes"]))

    def applies(self, protocol_version: str | None) -> bool:
        return protocol_version is not None and protocol_version >= self.since_protocol


def readable_message(message: str, data: dict[str, Any]) -> str:
    """The error message with its recovery hint and suggestions in it: hosts (Claude Code, the Inspector) show
    the message and drop `error.data`, so what the model needs to self-correct must be in the message."""
    text = message.rstrip()
    hint = data.get("hint")
    if isinstance(hint, str) and hint and hint not in text:
        text += f" Hint: {hint}"
    suggestions = [str(s) for s in data.get("suggestions") or ()]
    if suggestions and not all(s in text for s in suggestions):
        text += " Did you mean: " + ", ".join(suggestions) + "?"
    return text


def error_result(code: int, message: str, data: dict[str, Any]) -> types.CallToolResult:
    """A refused tool call as a tool result the model reads (docs/tools.md): `{code, name, message, hint, field?,
    allowed?, suggestions?, ..., _cognitive_pulse}` as structuredContent and as JSON text."""
    body: dict[str, Any] = {"code": code, "name": data.get("error"), "message": message}
    body.update((k, v) for k, v in data.items() if k not in ("error", PULSE_KEY))
    body[PULSE_KEY] = data.get(PULSE_KEY)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(body, ensure_ascii=False, default=str))],
        structured_content=body,
        is_error=True,
        _meta={PULSE_META_KEY: data.get(PULSE_KEY)},
    )


_BEFORE_HANDSHAKE = frozenset({"initialize", "ping"})  # what MCP lets a client send before the handshake


def _handshake_done(ctx: ServerRequestContext) -> bool:
    connection = getattr(ctx.session, "_connection", None)  # private in mcp 2.3, as in session_key
    return connection is None or bool(getattr(connection, "initialize_accepted", True))


def _handshake_gate(c: Constitution):
    """A request sent before `initialize` is refused by the SDK with -32602 "Invalid request parameters",
    which sends a client hunting for a bad argument. MCP (lifecycle) says only ping may precede the
    handshake and fixes no code; this keeps the refusal and says what is wrong, as -32600 (the request is
    out of place; its parameters are fine). Unknown methods keep the SDK's -32601."""

    async def gate(ctx: ServerRequestContext, call_next):
        if ctx.method in _BEFORE_HANDSHAKE or _handshake_done(ctx):
            return await call_next(ctx)
        try:
            return await call_next(ctx)
        except MCPError as exc:
            if exc.error.code != types.INVALID_PARAMS:
                raise
            entry = c.error("INVALID_REQUEST")
            raise MCPError(
                entry.code,
                f"Not initialized: {ctx.method} was sent before the MCP handshake. Send `initialize`, then the "
                f"`notifications/initialized` notification, then {ctx.method}; only ping may come first.",
                {"hint": "Complete the initialize handshake first (MCP lifecycle).", "method": ctx.method},
            ) from None

    return gate


def _envelope_middleware(deferred: DeferredApp):
    async def envelope(ctx: ServerRequestContext, call_next):
        if ctx.method == "tools/call":
            app = await deferred.get()  # the pulse of every answer, refusals included, comes from its services
            try:
                result = await call_next(ctx)
            except MCPError as exc:
                raise _with_pulse(exc, app) from None
            except ValidationError as exc:  # the SDK's own check of tools/call params (e.g. arguments not an object)
                problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
                                     for e in exc.errors(include_url=False))
                invalid = app.constitution.error("INVALID_PARAMS")
                raise _with_pulse(MCPError(invalid.code, f"Invalid tools/call params: {problems}",
                                           {"hint": invalid.hint}), app) from None
            if isinstance(result, dict):
                structured = result.get("structuredContent") or {}
                result["_cognitive_pulse"] = structured.get(PULSE_KEY) or app.services.cognition.pulse()
            return result
        result = await call_next(ctx)
        if ctx.method == "tools/list":
            # The host has what it needs to start; now build the App, then warm the store and the model, in the
            # background.
            deferred.when_built(lambda app: app.services.perception.start_model_load())
            deferred.start()
        if ctx.method == "tools/list" and isinstance(result, dict):
            # The SDK's Tool model drops unknown fields; `aliases` belong on the tool itself (docs/tools.md).
            for tool in result.get("tools", []):
                aliases = (tool.get("_meta") or {}).get("aliases")
                if aliases:
                    tool["aliases"] = list(aliases)
        return result

    return envelope


def _with_pulse(exc: MCPError, app: App) -> MCPError:
    error = exc.error
    data: Any = error.data
    if isinstance(data, dict) and PULSE_KEY in data:
        return exc
    if data is None:
        data = {}
    elif not isinstance(data, dict):
        data = {"detail": data}
    return MCPError(code=error.code, message=error.message, data={**data, PULSE_KEY: app.services.cognition.pulse()})
