"""Core memory tools: store, inject with UTL, search, and the graph manifest. Handlers are thin: one
service call each, the payload shaped here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.errors import InvalidParams
from contextgraph.fingerprint import MODALITIES
from contextgraph.security.free_text import FREE_TEXT, IDENTIFIER, REDACTED_ON_STORE
from contextgraph.security.session_label import is_session_label
from contextgraph.services.diagnostics.manifest import build_manifest
from contextgraph.services.engine.cognition import utl_status as utl_status_view
from contextgraph.services.introspection.memetic import memetic_status
from contextgraph.services.memory.memory_payloads import NewMemory
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec
from contextgraph.tools.validation import MAX_TAGS, NOT_BLANK, MemoryId, Tag

_V = constitution()["validation"]
# The allowed values come from data (fingerprint.MODALITIES): pydantic validates against the Literal at run
# time; a type checker, which cannot read a Literal built at run time, sees str.
if TYPE_CHECKING:
    Modality = str
else:
    Modality = Literal[MODALITIES]


class _MemoryArgs(Args):
    content: Annotated[str, REDACTED_ON_STORE, NOT_BLANK] = Field(
        min_length=_V["content"]["min_length"], max_length=_V["content"]["max_length"],
        description="The memory's text; secrets and PII are redacted before storing.")
    rationale: Annotated[str, REDACTED_ON_STORE, NOT_BLANK] = Field(
        min_length=_V["rationale"]["min_length"], max_length=_V["rationale"]["max_length"],
        description="Why this is worth remembering.")
    modality: Modality = Field("text", description="What kind of content this is.")
    importance: float = Field(0.5, ge=_V["importance"]["min"], le=_V["importance"]["max"],
                              description="How much this matters, 0-1.")
    tags: Annotated[list[Tag], FREE_TEXT] = Field(default_factory=list, max_length=MAX_TAGS,
                                                 description="Labels for filtering and grouping.")
    link_to: list[MemoryId] = Field(default_factory=list, max_length=32,
                               description="Ids of existing memories this one relates to.")
    session_id: Annotated[str | None, IDENTIFIER] = Field(None, min_length=1, max_length=_V["session_id"]["max_length"],
                                   description="Working session it belongs to; defaults to the connection's.")

    def to_new_memory(self, ctx: ToolContext) -> NewMemory:
        return NewMemory(
            content=self.content,
            rationale=self.rationale,
            modality=self.modality,
            importance=self.importance,
            tags=tuple(dict.fromkeys(t.strip() for t in self.tags if t.strip())),
            link_to=tuple(dict.fromkeys(self.link_to)),
            session=self._session(ctx),
        )

    def _session(self, ctx: ToolContext) -> str:
        """The session to file the memory under: a name of the client's choosing, or its own session; never
        another client's session label (records show them), which would put the memory in that client's
        session-only context."""
        if self.session_id is None:
            return ctx.session
        if is_session_label(self.session_id) and self.session_id != ctx.session:
            raise InvalidParams("session_id names another client's session; omit it to use your own, or choose "
                                "a name of your own for a working session.", field="session_id")
        return self.session_id


class StoreArgs(_MemoryArgs):
    pass


async def _await_model(ctx: ToolContext, steps: int, next_step: str) -> None:
    """A call that needs the transformer while it is still loading (seconds; an export on a cold cache) says
    so first, then waits for it, so a client that sent a progressToken sees why the call takes long."""
    if ctx.services.perception.model_status() != "ready":
        await ctx.report_progress(0, steps, "loading the embedding model")
        await ctx.services.perception.pipeline()
    await ctx.report_progress(1, steps, next_step)


async def store_memory(ctx: ToolContext, args: StoreArgs) -> dict[str, Any]:
    memory = args.to_new_memory(ctx)  # refused arguments are refused before any wait for the model
    await _await_model(ctx, 2, "embedding (13 spaces) and storing")
    stored = await ctx.services.memory.store(memory)
    await ctx.report_progress(2, 2, "stored")
    return stored.payload()


class InjectArgs(_MemoryArgs):
    related_k: int = Field(5, ge=0, le=20, description="How many related memories to return (0 for none).")


async def inject_context(ctx: ToolContext, args: InjectArgs) -> dict[str, Any]:
    memory = args.to_new_memory(ctx)
    await _await_model(ctx, 2, "embedding (13 spaces), storing and measuring UTL")
    injected = await ctx.services.memory.inject(memory, related_k=args.related_k)
    await ctx.report_progress(2, 2, "stored")
    return injected.payload()


class SearchArgs(Args):
    spellings: ClassVar[dict[str, str]] = {"topK": "top_k", "minSimilarity": "min_similarity"}
    query: Annotated[str, FREE_TEXT, NOT_BLANK] = Field(min_length=_V["query"]["min_length"],
                                             max_length=_V["query"]["max_length"],
                                             description="What to look for, in your own words.")
    top_k: int = Field(10, ge=_V["top_k"]["min"], le=_V["top_k"]["max"], description="Most results to return.")
    min_similarity: float = Field(0.0, ge=_V["min_similarity"]["min"], le=_V["min_similarity"]["max"],
                                  description="Drop results whose semantic (E1) similarity is below this.")
    modality: Modality | None = Field(None, description="Only memories of this modality.")
    include_breakdown: bool = Field(False, description="Add per-space ranks and per-stage timings to each result.")
    stage4: bool | Literal["rerank", "filter"] = Field(
        True, description="With a north star: true re-ranks toward the query's theme, hiding none; \"filter\" "
                          "drops results aligned below the threshold; false ignores it.")


_SEARCH_STEPS = 2


async def search_graph(ctx: ToolContext, args: SearchArgs) -> dict[str, Any]:
    # Progress (when the client sent a progressToken) at the boundaries the handler can see: the model is
    # ready, the query is embedded and retrieved (one service call: embedding and the five stages), done.
    memory = ctx.services.memory
    if ctx.services.perception.model_status() != "ready":
        await ctx.report_progress(0, _SEARCH_STEPS, "loading the embedding model")
        await ctx.services.perception.pipeline()
    await ctx.report_progress(1, _SEARCH_STEPS, "embedding the query and retrieving (5 stages)")
    result = await memory.search(args.query, top_k=args.top_k, min_similarity=args.min_similarity,
                                 modality=args.modality, breakdown=args.include_breakdown, stage4=args.stage4)
    payload = result.payload()
    stages = {"embed_query": result.embed_ms, **result.retrieval.stages_ms}
    await ctx.report_progress(_SEARCH_STEPS, _SEARCH_STEPS,
                              f"done: {payload['count']} results; stage ms " +
                              ", ".join(f"{k}={v:g}" for k, v in stages.items()))
    return payload


class ManifestArgs(Args):
    pass


async def get_graph_manifest(ctx: ToolContext, args: ManifestArgs) -> dict[str, Any]:
    return await build_manifest(ctx.services, len(ctx.registry.specs), len(ctx.registry.active))


class UtlStatusArgs(Args):
    pass


async def utl_status(ctx: ToolContext, args: UtlStatusArgs) -> dict[str, Any]:
    count = await ctx.services.storage.read(lambda store: store.count())
    return utl_status_view(ctx.services.cognition, count)


class MemeticArgs(Args):
    pass


async def get_memetic_status(ctx: ToolContext, args: MemeticArgs) -> dict[str, Any]:
    s = ctx.services
    return await memetic_status(s.storage, s.perception, s.cognition, s.workspace, s.constitution,
                                  lambda domain: s.thresholds.value("theta_dup", domain))


TOOLS = (
    ToolSpec(
        "store_memory",
        "core",
        "Store a memory (content plus why it matters); durable when this returns. Search first to avoid "
        "duplicates; inject_context also returns its novelty and the related memories. A retry (same content and "
        "session within 2 min) returns the stored memory, deduplicated: true.",
        StoreArgs,
        store_memory,
        keywords=("remember", "save", "write", "add", "note", "persist"),
    ),
    ToolSpec(
        "inject_context",
        "core",
        "Store a memory and get feedback: its novelty (entropy) and fit (coherence) per embedding space, the "
        "learning score, and the most related memories.",
        InjectArgs,
        inject_context,
        keywords=("learn", "ingest", "context", "novelty", "related", "utl"),
    ),
    ToolSpec(
        "search_graph",
        "core",
        "Search memories by meaning: fuses 13 embedding spaces (sparse keywords, dense semantics, time, causality, "
        "code, entities, token-level matching) and returns the best matches with scores.",
        SearchArgs,
        search_graph,
        keywords=("find", "recall", "lookup", "query", "retrieve", "semantic"),
    ),
    ToolSpec(
        "get_graph_manifest",
        "core",
        "Describe the memory system: its five layers and their live status, each embedding space with the model "
        "or method in use and its dimension, and the size of every index.",
        ManifestArgs,
        get_graph_manifest,
        keywords=("manifest", "architecture", "embedders", "status", "indexes", "models"),
    ),
    ToolSpec(
        "utl_status",
        "core",
        "Get the learning engine's live state: lifecycle stage and its lambda weights, entropy, coherence, "
        "learning score, Johari quadrant with the suggested action, memory count and per-space novelty/coherence.",
        UtlStatusArgs,
        utl_status,
        keywords=("utl", "learning", "entropy", "coherence", "lifecycle", "status", "johari"),
    ),
    ToolSpec(
        "get_memetic_status",
        "core",
        "Get the whole system at a glance: memory count, live UTL metrics and suggested action, the five layers' "
        "status, and curation tasks among recent memories (near-duplicates to merge, orphans, conflicts).",
        MemeticArgs,
        get_memetic_status,
        keywords=("status", "overview", "memetic", "health", "curation", "duplicates", "orphans"),
    ),
)
