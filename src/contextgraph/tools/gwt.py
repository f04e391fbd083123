"""GWT tools (docs/engine.md): the Kuramoto network, coupling, C(t), the workspace, the ego node,
per-memory Johari and epistemic actions. Thin handlers: the state lives in services.cognition / services.gwt /
services.workspace, the math in gwt/ and utl/."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.security.free_text import IDENTIFIER
from contextgraph.services.engine.gwt import consciousness_state, ego_state, kuramoto_sync
from contextgraph.services.introspection.epistemic import epistemic_action as epistemic_view
from contextgraph.services.introspection.johari import classify_memory
from contextgraph.services.runtime.broadcast import broadcast_memory
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import MemoryId

_C = constitution()
_K = _C["gwt"]["kuramoto"]["coupling"]
SessionId = Field(None, min_length=1, max_length=_C["validation"]["session_id"]["max_length"],
                  description="Ignored (older clients send it): all sessions share one engine.")


class SyncArgs(Args):
    session_id: Annotated[str | None, IDENTIFIER] = SessionId


async def get_kuramoto_sync(ctx: ToolContext, args: SyncArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()  # the engine state is loaded with the store
    return kuramoto_sync(ctx.services.cognition.network)


class CouplingArgs(Args):
    new_K: float = Field(ge=float(_K["min"]), le=float(_K["max"]), allow_inf_nan=False,
                         description=f"New coupling strength K in [{_K['min']}, {_K['max']}]. Higher K "
                                     "synchronises the 13 oscillators faster.")


async def adjust_coupling(ctx: ToolContext, args: CouplingArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()  # load the saved K first, or saving would write the change over nothing
    network = ctx.services.cognition.network
    old, new, predicted = network.set_coupling(args.new_K)
    await ctx.services.storage.save_engine()  # K survives a restart
    return {"old_K": old, "new_K": new, "predicted_r": round(predicted, 6),
            "bounds": {"min": network.k_min, "max": network.k_max},
            "method": f"predicted_r: mean r over the second half of a {network.predict_seconds:g} s simulation "
                      f"(dt {network.dt:g} s) from the current phases at the new K"}


class ConsciousnessArgs(Args):
    session_id: Annotated[str | None, IDENTIFIER] = SessionId


async def get_consciousness_state(ctx: ToolContext, args: ConsciousnessArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()
    return consciousness_state(ctx.services.cognition, dict(_C["gwt"]["consciousness_states"]), ctx.services.workspace)


class JohariArgs(Args):
    memory_id: MemoryId = Field(description="Id of the stored memory to classify.")
    spellings: ClassVar[dict[str, str]] = {"node_id": "memory_id"}  # older clients' name for it


async def get_johari_classification(ctx: ToolContext, args: JohariArgs) -> dict[str, Any]:
    s = ctx.services
    return await classify_memory(s.storage, s.perception, s.cognition, s.constitution, args.memory_id)


class WorkspaceArgs(Args):
    session_id: Annotated[str | None, IDENTIFIER] = SessionId


async def get_workspace_status(ctx: ToolContext, args: WorkspaceArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()
    return ctx.services.workspace.status()


class EgoArgs(Args):
    session_id: Annotated[str | None, IDENTIFIER] = SessionId


async def get_ego_state(ctx: ToolContext, args: EgoArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()
    return ego_state(ctx.services.cognition)


class BroadcastArgs(Args):
    memory_id: MemoryId = Field(description="Id of the stored memory to broadcast.")
    importance: float = Field(0.8, ge=0.0, le=1.0, allow_inf_nan=False, description="Importance score [0, 1].")
    alignment: float = Field(0.8, ge=0.0, le=1.0, allow_inf_nan=False,
                             description="North-star alignment score [0, 1].")
    force: bool = Field(False, description="Broadcast even if the memory's r_m is below the workspace threshold.")


async def trigger_workspace_broadcast(ctx: ToolContext, args: BroadcastArgs) -> dict[str, Any]:
    s = ctx.services
    result = await broadcast_memory(s.storage, s.perception, s.workspace, args.memory_id, args.importance,
                                    args.alignment, args.force)
    if result["broadcast"]:
        await ctx.services.storage.save_engine()  # the entry and its events survive a restart
    return result


class EpistemicArgs(Args):
    session_id: Annotated[str | None, IDENTIFIER] = SessionId
    force: bool = Field(False, description="Generate a question regardless of the coherence state.")


async def epistemic_action(ctx: ToolContext, args: EpistemicArgs) -> dict[str, Any]:
    s = ctx.services
    return await epistemic_view(s.storage, s.perception, s.cognition, s.constitution, args.force)


TOOLS = (
    ToolSpec(
        "get_kuramoto_sync",
        "gwt",
        "Get the Kuramoto oscillator network's synchronisation: order parameter r (0-1, 1 = synchronised), mean "
        "phase psi, the 13 oscillator phases (one per embedding space), natural frequencies and coupling K. Memory "
        "operations move the network; it holds between them.",
        SyncArgs,
        get_kuramoto_sync,
        keywords=("kuramoto", "sync", "oscillators", "phase", "order parameter", "coupling"),
    ),
    ToolSpec(
        "adjust_coupling",
        "gwt",
        "Set the Kuramoto coupling strength K (0-10): higher K synchronises the embedding spaces faster. Returns "
        "old_K, new_K and predicted_r from a short simulation at the new K.",
        CouplingArgs,
        adjust_coupling,
        keywords=("coupling", "kuramoto", "synchronise", "tune", "K"),
    ),
    ToolSpec(
        "get_consciousness_state",
        "gwt",
        "Get the consciousness level C = I x R x D (integration, reflection, differentiation) and its state "
        "(DORMANT, FRAGMENTED, EMERGING, CONSCIOUS, HYPERSYNC), with what each factor is computed from.",
        ConsciousnessArgs,
        get_consciousness_state,
        keywords=("consciousness", "awareness", "integration", "differentiation", "state", "gwt"),
    ),
    ToolSpec(
        "get_johari_classification",
        "gwt",
        "Classify one stored memory in the Johari window (Open, Blind, Hidden, Unknown) per embedding space, "
        "from its novelty and coherence against its neighbours, with confidences and cross-space insights.",
        JohariArgs,
        get_johari_classification,
        keywords=("johari", "quadrant", "novelty", "coherence", "blind spot", "classify"),
    ),
    ToolSpec(
        "get_workspace_status",
        "gwt",
        "Get the global workspace: the active memory (winner-take-all among recent results with binding r_m "
        "over 0.8), the competing candidates, conflicts and recent enter/exit events.",
        WorkspaceArgs,
        get_workspace_status,
        keywords=("workspace", "attention", "broadcast", "winner", "active memory", "gwt"),
    ),
    ToolSpec(
        "get_ego_state",
        "gwt",
        "Get the self-ego node: the 13-d purpose vector, identity continuity (cos of successive purpose vectors "
        "x sync r) and its status, coherence with recent actions, and the trajectory length.",
        EgoArgs,
        get_ego_state,
        keywords=("ego", "identity", "purpose", "trajectory", "self", "continuity"),
    ),
    ToolSpec(
        "trigger_workspace_broadcast",
        "gwt",
        "Put a stored memory into the global workspace: measures its binding r_m with the current context and "
        "broadcasts it if r_m passes the threshold (or always with force=true); otherwise explains the refusal.",
        BroadcastArgs,
        trigger_workspace_broadcast,
        keywords=("broadcast", "workspace", "attention", "focus", "winner-take-all"),
    ),
    ToolSpec(
        "epistemic_action",
        "gwt",
        "Get the clarifying question to ask the user now (the pulse suggests it when coherence is low): built "
        "from the least coherent recent memories, with the expected entropy reduction.",
        EpistemicArgs,
        epistemic_action,
        keywords=("question", "clarify", "ask user", "epistemic", "uncertainty", "coherence"),
    ),
)
