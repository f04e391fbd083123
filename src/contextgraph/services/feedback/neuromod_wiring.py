"""Relevance evidence to dopamine (docs/engine.md#what-each-modulator-does): a tool call that judges a memory
relevant (hydrated, cited, linked, boosted, merged; services.feedback.relevance_evidence) tells neuromodulation that
the agent used it; one that judges it not relevant or wrong withdraws that. Finding a memory again, or leaving it
unused, says nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contextgraph.services.engine.neuromodulation import NeuromodulationService
from contextgraph.services.feedback.relevance_evidence import judgements


def on_tool_call(neuromodulation: NeuromodulationService) -> Callable[[str, dict[str, Any]], None]:
    """Dispatcher listener: above one half a judgement is a use, below it a refutation (a partial one is neither)."""

    def listener(tool: str, arguments: dict[str, Any]) -> None:
        for j in judgements(tool, arguments):
            if j.outcome > 0.5:
                neuromodulation.used(j.memory)
            elif j.outcome < 0.5:
                neuromodulation.refuted(j.memory)

    return listener
