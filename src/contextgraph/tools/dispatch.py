"""The one dispatcher (docs/architecture.md). For every call, in this order: alias resolution, lookup (-32004
with suggestions), the rationale rule (-32009), validation (-32602), the handler, pulse injection, error
mapping, and one log line with tool, alias, latency and outcome.

It knows nothing of MCP: the server turns a `ToolCallFailed` into a JSON-RPC error and a payload into a
CallToolResult, and the CLI can run calls in-process through the same path."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from pydantic import ValidationError

from contextgraph.constitution import Constitution
from contextgraph.errors import ContextGraphError, InvalidParams, MissingRationale, ToolNotFound
from contextgraph.log import get_logger
from contextgraph.security.free_text import redact_arguments, report_redactions
from contextgraph.security.pii import shown_identifier
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.tools.context import ToolContext
from contextgraph.tools.outcome import PULSE_KEY, CallOutcome, ToolCallFailed
from contextgraph.tools.registry import Registry
from contextgraph.tools.validation import invalid_params

_log = get_logger("dispatch")
# The tools answered before their cognitive work is done, which neither waits for earlier calls' work: their
# answers do not read the engine state (docs/engine.md#after-the-answer). Every other tool waits for it first.
ENGINE_FOLLOWS = frozenset({"store_memory", "search_graph"})
# Told of every finished call: (canonical tool or the name asked for, latency ms, succeeded, the pulse answered).
CallObserver = Callable[[str, float, bool, Mapping[str, Any] | None], None]


class Dispatcher:
    def __init__(self, registry: Registry, constitution: Constitution, cognition: CognitiveState) -> None:
        self.registry = registry
        self.constitution = constitution
        self.cognition = cognition  # the pulse on every answer
        self._rationale_required = frozenset(constitution.get("validation.rationale_required"))
        self._rationale_min = int(constitution.get("validation.rationale.min_length"))
        self._name_max = int(constitution.get("validation.tool_name.max_length"))
        self.observers: list[CallObserver] = []  # the engine history (services.history) listens here
        # (canonical name, validated arguments) of every call that succeeded: ATC hears which memories were used
        self.argument_observers: list[Callable[[str, dict[str, Any]], None]] = []

    async def call(self, name: Any, arguments: Any, ctx: ToolContext, request_id: Any = None) -> CallOutcome:
        """Run one tool call end to end. Raises ToolCallFailed; never anything else. Every log line written while
        it runs (services and storage included) carries its request id and tool name."""
        tool = self.shown_name(name) if isinstance(name, str) else None
        with structlog.contextvars.bound_contextvars(request_id=request_id, tool=tool):
            return await self._call(name, tool, arguments, ctx, request_id)

    def shown_name(self, name: str) -> str:
        """The tool name as errors, logs and the call history may show it: a registered name or alias as it
        is, any other redacted and cut short (a client may send anything as a name)."""
        return name if self.registry.resolve(name) is not None else shown_identifier(name, self._name_max)

    async def _call(self, name: Any, shown: str | None, arguments: Any, ctx: ToolContext,
                    request_id: Any) -> CallOutcome:
        started = time.perf_counter()
        canonical: str | None = None
        label = shown if shown is not None else name  # what messages, logs and observers name the call by
        try:
            canonical, payload = await self.run(name, arguments, ctx)
        except ContextGraphError as exc:
            failure = self._failure(exc)
            self._log_call(label, canonical, started, "error", code=failure.code)
            self._observe(label, canonical, started, False, failure.data.get(PULSE_KEY))
            raise failure from None
        except Exception:
            error_id = uuid.uuid4().hex[:12]
            _log.exception("tool call crashed", error_id=error_id)
            failure = self._failure(
                ContextGraphError(
                    f"Internal error while running {label} (error id {error_id}). The failure is logged; "
                    f"get_system_logs level=error shows the entry with this id.",
                    error_id=error_id,
                    request_id=request_id,
                )
            )
            self._log_call(label, canonical, started, "crash", code=failure.code)
            self._observe(label, canonical, started, False, failure.data.get(PULSE_KEY))
            raise failure from None
        payload = dict(payload)
        payload[PULSE_KEY] = self.cognition.pulse()
        self._log_call(label, canonical, started, "ok")
        self._observe(label, canonical, started, True, payload[PULSE_KEY])
        return CallOutcome(canonical, name if name != canonical else None, payload)

    async def run(self, name: Any, arguments: Any, ctx: ToolContext) -> tuple[str, dict[str, Any]]:
        """Resolve, check, validate and run; raises ContextGraphError. tool_call nests through here."""
        registry = self.registry
        if not isinstance(name, str):
            raise InvalidParams("Tool name must be a string.", field="name")
        canonical = registry.resolve(name)
        if canonical is None:
            raise self.not_found(name)
        if canonical != name:
            _log.debug("Resolved tool alias to canonical name", alias=name, canonical=canonical)
        spec = registry.specs[canonical]
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise InvalidParams(
                f"Arguments for {canonical} must be a JSON object, got {type(arguments).__name__}.", field="arguments"
            )
        if canonical in self._rationale_required:
            rationale = arguments.get("rationale")
            if rationale is None or (isinstance(rationale, str) and not rationale.strip()):
                raise MissingRationale(
                    f"{canonical} needs a rationale: say in at least {self._rationale_min} characters why.",
                    field="rationale",
                    min_length=self._rationale_min,
                )
        try:
            args = spec.args.model_validate(arguments)
        except ValidationError as exc:
            raise invalid_params(canonical, exc, registry.input_schemas[canonical], arguments) from None
        # PII in every free-text argument, here once, so no handler, store, echo or log ever sees it (docs/tools.md)
        args, redactions = redact_arguments(args)
        if canonical not in ENGINE_FOLLOWS:
            # the engine state every other tool reads (or, as inject_context's UTL, scores with) includes the
            # cognitive work of every call answered before it (docs/engine.md#after-the-answer)
            await ctx.services.storage.settled()
        # counted in flight (no automatic dream starts meanwhile); a memory operation wakes a dream at once
        with ctx.services.activity.running(canonical):
            payload = await spec.handler(ctx, args)
        if self.argument_observers and ctx.agent:
            arguments_seen = args.model_dump()
            for observe in self.argument_observers:
                try:
                    observe(canonical, arguments_seen)
                except Exception:  # an observer's fault must never turn an answered call into a failure
                    _log.exception("argument observer failed")
        return canonical, report_redactions(payload, redactions)

    def not_found(self, name: str) -> ToolNotFound:
        """-32004 for a name no tool has: the name shown redacted and cut short, suggestions from what is left
        of it (they are registered names, so nothing of the client's text comes back through them)."""
        shown = self.shown_name(name)
        return ToolNotFound(self.registry.unknown_tool_message(shown), tool=shown,
                            suggestions=self.registry.suggestions(name[: self._name_max]))

    def _failure(self, exc: ContextGraphError) -> ToolCallFailed:
        entry = self.constitution.error(exc.code_name)
        data = {k: v for k, v in exc.data.items() if v is not None}
        data.setdefault("hint", entry.hint)
        data["error"] = entry.name
        data[PULSE_KEY] = self.cognition.pulse()
        return ToolCallFailed(entry.code, exc.message, data)

    def _observe(self, name: Any, canonical: str | None, started: float, ok: bool,
                 pulse: Mapping[str, Any] | None) -> None:
        latency_ms = (time.perf_counter() - started) * 1000
        for observer in self.observers:
            try:
                observer(canonical or str(name), latency_ms, ok, pulse)
            except Exception:  # an observer's fault must never turn an answered call into a failure
                _log.exception("call observer failed")

    def _log_call(self, name: Any, canonical: str | None, started: float, outcome: str, **extra: Any) -> None:
        latency_ms = round((time.perf_counter() - started) * 1000, 3)
        alias = name if canonical and canonical != name else None
        _log.info("tool call", tool=canonical or name, alias=alias, latency_ms=latency_ms, outcome=outcome, **extra)
