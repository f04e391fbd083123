"""reflect_on_memory and generate_search_plan.

reflect_on_memory orders tools for a goal from what the goal asks (intents read from its words), what the system
says now (the pulse's suggested action, an empty store, curation waiting, no north star yet) and the registry's
own TF-IDF match of the goal against every tool's description; only registered tools are named, each step with
the reason it is there.

generate_search_plan writes three queries, each aimed at a different space (semantic, causal, code, temporal,
entity: focus_spaces first, then what the goal contains), with the fusion weights the pipeline would give that
query (retrieval.query_kind) and the memories it finds now in its primary space alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from contextgraph.constitution import Constitution
from contextgraph.embedders.code_lexer import IDENTIFIER
from contextgraph.embedders.e05_causal import query_direction
from contextgraph.embedders.entities import entities
from contextgraph.fingerprint import SPACE_BY_ID
from contextgraph.retrieval.query_kind import classify
from contextgraph.services.engine.atc import domain_of
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.memory.memory import MemoryService
from contextgraph.services.memory.memory_payloads import record_summary
from contextgraph.services.purpose.autonomous_status import STAR_CHANGES
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle
from contextgraph.storage.base import MemoryStore

# intent → (words that show it, the tools it calls for in order, why)
INTENTS: dict[str, tuple[re.Pattern[str], tuple[str, ...], str]] = {
    "store": (re.compile(r"\b(?:remember|store|save|record|keep|note down|memori[sz]e|log)\b", re.I),
              ("store_memory", "inject_context"), "the goal keeps something for later"),
    "recall": (re.compile(r"\b(?:find|search|recall|look\s*up|retrieve|what\s+do\s+(?:i|we)\s+know|remind|context)\b",
                          re.I), ("search_graph", "get_recent_context", "hydrate_citation"),
               "the goal needs what is stored"),
    "causal": (re.compile(r"\b(?:why|cause[sd]?|because|effects?|consequences?|leads?\s+to|root\s+cause|what\s+if"
                          r"|impact)\b", re.I), ("query_causal", "omni_infer", "find_causal_path"),
               "the goal asks about causes or effects"),
    "curate": (re.compile(r"\b(?:clean|dedup\w*|duplicates?|merge|curate|tidy|organi[sz]e|prune|obsolete|outdated"
                          r"|conflict\w*|contradict\w*)\b", re.I),
               ("get_memetic_status", "critique_context", "merge_concepts", "forget_concept"),
               "the goal improves the memory's quality"),
    "debug": (re.compile(r"\b(?:debug|diagnos\w*|not\s+found|missing|miss(?:es|ed)?|recall\s+accuracy|ranking|why\s+"
                         r"(?:isn't|doesn't|didn't|don't))\b", re.I),
              ("test_recall_accuracy", "debug_compare_retrieval", "get_system_logs"),
              "the goal is about retrieval quality"),
    "security": (re.compile(r"\b(?:inject\w*|adversarial|attack|suspicious|malicious|poison\w*|secur\w*|quarantine)\b",
                            re.I), ("check_adversarial", "homeostatic_status"), "the goal is about trust in content"),
    "explore": (re.compile(r"\b(?:explore|neighbo\w*|related|connect\w*|hierarch\w*|broader|narrower|map|overview)\b",
                           re.I), ("get_neighborhood", "entailment_query", "get_memetic_status"),
                "the goal explores the graph's structure"),
}

# space → (primary space id, what it is good at)
PLAN_SPACES: dict[str, tuple[int, str]] = {
    "semantic": (1, "meaning, whatever the wording"),
    "causal": (5, "cause and effect, asymmetric (why / what happens)"),
    "code": (7, "identifiers and code structure"),
    "temporal": (2, "when it happened (recency)"),
    "entity": (11, "the named things: identifiers, paths, versions, proper names"),
}
_FILLER = re.compile(r"^\s*(?:i\s+(?:want|need|would\s+like)\s+to|help\s+me|please|let's|we\s+need\s+to"
                     r"|how\s+(?:do|can)\s+(?:i|we))\s+", re.I)
_STOP = frozenset("a an the to of for in on at by with and or is are was were be it this that what how why when "
                  "which who i we you my our me us do does did can could should would will about from into".split())


def intents_of(goal: str) -> list[str]:
    return [name for name, (pattern, _, _) in INTENTS.items() if pattern.search(goal)]


class Reflection:
    def __init__(self, storage: StoreHandle, perception: Perception, memory: MemoryService,
                 cognition: CognitiveState, constitution: Constitution,
                 duplicate_threshold: Callable[[str], float] | None = None) -> None:
        self.storage = storage
        self.perception = perception
        self.memory = memory
        self.cognition = cognition
        self.preview = int(constitution["reflection"]["plan_preview"])
        prior = float(constitution["atc"]["priors"]["theta_dup"])
        # θ_dup per domain: ATC's learned value (tools/metacog.py passes it), the constitution's prior without it
        self.theta_dup_of = duplicate_threshold or (lambda _domain: prior)
        self.window = int(constitution["memetic"]["curation_window"])

    async def reflect(self, goal: str, registered: set[str], matched: Sequence[tuple[str, float]],
                      summary: Callable[[str], str], north_star: bool | None) -> dict[str, Any]:
        """`matched`: the registry's TF-IDF match of the goal; `north_star`: whether one exists (None: the
        teleology service is not there to ask)."""
        count, duplicates, orphans = await self.storage.read(self._curation_state)
        pulse = self.cognition.pulse()
        steps: list[dict[str, Any]] = []

        def add(tool: str, why: str, source: str) -> None:
            if tool in registered and all(s["tool"] != tool for s in steps):
                steps.append({"tool": tool, "why": why, "source": source, "does": summary(tool)})

        action = str(pulse.get("suggested_action") or "none")
        found = intents_of(goal)
        self._state_steps(add, count, pulse, action)
        for name in found:
            _, tools, why = INTENTS[name]
            for tool in tools:
                add(tool, why, f"goal: {name}")
        self._curation_steps(add, found, count, duplicates, orphans, north_star)
        for tool, score in matched:
            if len(steps) >= 8:
                break
            add(tool, f"its description matches the goal's words (TF-IDF {score:.2f})", "tool_find")
        if not any(s["tool"] == "search_graph" for s in steps) and count:
            add("search_graph", "the usual first look at what is stored", "default")
        return {"goal": goal, "steps": [{"step": i, **s} for i, s in enumerate(steps, start=1)], "intents": found,
                "state": {"memories": count, "suggested_action": action, "quadrant": pulse.get("quadrant"),
                          "pending_duplicates": duplicates, "recent_orphans": orphans,
                          "north_star": ("not available yet" if north_star is None else
                                         ("set" if north_star else "none yet"))},
                "method": "intents from the goal's words, then the live state (pulse, store size, curation "
                          "waiting, north star), then the registry's TF-IDF match; registered tools only"}

    def _curation_state(self, store: MemoryStore) -> tuple[int, int, int]:
        """(memories, near-duplicate pairs, memories with no edge) among the `window` most recent: one snapshot."""

        def read(g: Any) -> tuple[int, int]:
            duplicates, orphans = set(), 0
            for record in g.recent(self.window, None, None):
                edges = g.edges(record.id)
                orphans += not edges
                theta_dup = self.theta_dup_of(domain_of(record))
                duplicates |= {tuple(sorted((e.source, e.target))) for e in edges
                               if e.type == "Semantic" and e.weight >= theta_dup}
            return len(duplicates), orphans

        return store.count(), *store.graph_read(read)

    @staticmethod
    def _state_steps(add: Callable[[str, str, str], None], count: int, pulse: dict[str, Any], action: str) -> None:
        """What the store's emptiness and the pulse ask for before anything else."""
        if count == 0:
            add("get_system_instructions", "nothing is stored yet: learn how this memory works first", "state")
            add("store_memory", "the memory is empty: store what the goal is about before anything can be found",
                "state")
        if action not in ("none", "direct_recall"):
            add(action, f"the cognitive pulse suggests it now (quadrant {pulse.get('quadrant')}, entropy "
                        f"{pulse.get('entropy')}, coherence {pulse.get('coherence')})", "pulse")

    def _curation_steps(self, add: Callable[[str, str, str], None], found: list[str], count: int, duplicates: int,
                        orphans: int, north_star: bool | None) -> None:
        """What waits in the store: duplicates to merge, orphans to link, a north star to bootstrap."""
        if duplicates and ("curate" in found or not found):
            add("merge_concepts", f"{duplicates} near-duplicate pair(s) wait among the {self.window} most recent "
                                  "memories", "state: curation")
        if orphans and "curate" in found:
            add("annotate_node", f"{orphans} recent memory(ies) have no edge at all", "state: curation")
        if north_star is False and count >= 50:
            add("auto_bootstrap_north_star", f"{count} memories and no north star yet: {STAR_CHANGES}",
                "state: teleology")

    async def plan(self, goal: str, focus: list[str]) -> dict[str, Any]:
        topic = _topic(goal)
        chosen = list(dict.fromkeys(focus))
        for space, present in (("code", bool(IDENTIFIER.search(goal)) or classify(goal).code),
                               ("causal", query_direction(goal) != "both"),
                               ("entity", bool(_entities(goal))), ("temporal", classify(goal).temporal),
                               ("semantic", True), ("causal", True), ("entity", True), ("code", True)):
            if present and space not in chosen:
                chosen.append(space)
        chosen = chosen[:3]
        queries = [{"space": space, "query": _query_for(space, goal, topic)} for space in chosen]
        settings = self.memory.retrieval_settings
        storage = await self.storage.ready()
        texts = [q["query"] for q in queries]
        fps, _ = await self.perception.fingerprints(lambda: [self.perception.draft(t, "text", None) for t in texts])

        def preview() -> list[list[dict[str, Any]]]:
            out = []
            for q, fp in zip(queries, fps):
                space = PLAN_SPACES[q["space"]][0]
                hits = storage.indexes.search(space, fp[space], self.preview)
                records = storage.store.get_by_seq([seq for seq, _ in hits])
                out.append([{**record_summary(r, preview=120), "score": round(float(s), 4)}
                            for r, (_, s) in zip(records, hits) if r is not None])
            return out

        found = await anyio.to_thread.run_sync(preview, limiter=self.perception.reads)
        plan = []
        for q, hits in zip(queries, found):
            space_id, good_at = PLAN_SPACES[q["space"]]
            weights = settings.weights_for(q["query"])
            top = sorted(((s, w) for s, w in weights.items() if w > 0), key=lambda sw: -sw[1])[:5]
            plan.append({**q, "primary": f"E{space_id} ({SPACE_BY_ID[space_id].name})", "good_at": good_at,
                         "tool": "query_causal" if q["space"] == "causal" else "search_graph",
                         "fusion_profile": {"query_kind": list(classify(q["query"]).labels()) or ["topical"],
                                            "causal_direction": query_direction(q["query"]),
                                            "top_weights": {f"E{s}": round(w, 3) for s, w in top},
                                            "rrf_k": settings.rrf_k},
                         "finds_now": hits})
        return {"goal": goal, "queries": plan, "focus_spaces": focus,
                "method": "focus_spaces first, then spaces the goal's words call for (identifiers → code, a causal "
                          "question → causal, names → entity, a time → temporal), then semantic; fusion_profile is "
                          "what search_graph's stage 3 would weigh for that query; finds_now: its primary space "
                          "alone, now"}


def _entities(text: str) -> list[str]:
    return [e.text for e in entities(text) if e.kind != "phrase" or len(e.text) > 2]


def _topic(goal: str) -> str:
    """The goal without its opening filler ("I want to …", "help me …") and final punctuation."""
    text = _FILLER.sub("", goal.strip()).rstrip(" .?!")
    return text or goal.strip()


def _keywords(text: str) -> list[str]:
    return [w for w in re.findall(r"[\w.\-/]+", text) if w.lower() not in _STOP and len(w) > 2]


def _query_for(space: str, goal: str, topic: str) -> str:
    if space == "causal":
        direction = query_direction(goal)
        return (f"what happens if {topic}" if direction == "forward" else
                topic if direction == "backward" else f"why {topic}")
    if space == "code":
        names = [m.group(0).rstrip("(") for m in IDENTIFIER.finditer(goal)]
        return " ".join(dict.fromkeys(names + _keywords(topic)))[:400] or topic
    if space == "entity":
        return " ".join(dict.fromkeys(_entities(goal))) or " ".join(_keywords(topic)[:6]) or topic
    if space == "temporal":
        return topic if classify(topic).temporal else f"{topic} recently"
    return topic
