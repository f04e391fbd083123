"""The cognitive pulse (docs/utl.md#the-pulse): a pure function of the engine's cached state and the clock.

The base suggestion follows the Johari quadrant of the session's entropy and coherence. Two timers override it:
entropy above its threshold for `high_entropy_seconds` suggests `trigger_dream` (consolidate what piled up), and
an empty global workspace for `empty_workspace_seconds` suggests `epistemic_action` (nothing holds attention:
ask). Sustained entropy is the stronger signal and wins when both apply.

A dream is suggested only when one would do something: not while one runs, and not when nothing was stored since
the last one (the caller says so with `dream_blocked`). Then the next rule that applies decides, and where the
quadrant itself asks for a dream (Blind: new and unintegrated), `dream_blocked_action` stands in.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextgraph.utl.johari import Quadrant, classify


@dataclass(frozen=True, slots=True)
class PulseRules:
    johari_threshold: float
    actions: dict[str, str]
    empty_workspace_seconds: float
    high_entropy_threshold: float
    high_entropy_seconds: float
    high_entropy_action: str
    empty_workspace_action: str
    precision: int
    dream_action: str = "trigger_dream"  # the tool that starts a dream, as registered (or its stand-in)
    dream_blocked_action: str = "epistemic_action"  # the quadrant's stand-in while a dream would change nothing

    @classmethod
    def from_constitution(cls, c: Any, tools: Collection[str] | None = None) -> PulseRules:
        """The rules with every action resolved against `tools`, the registered tool names (docs/utl.md: the pulse
        names only a tool that exists); None keeps the ideal names (kernel tests without a registry)."""
        stand_ins = c.get("pulse.action_stand_ins")

        def act(ideal: str) -> str:
            return ideal if tools is None else callable_action(ideal, stand_ins, tools)

        return cls(
            johari_threshold=float(c.get("utl.johari_threshold")),
            actions={q: act(a) for q, a in c.get("utl.johari_actions").items()},
            empty_workspace_seconds=float(c.get("pulse.empty_workspace_seconds")),
            high_entropy_threshold=float(c.get("pulse.high_entropy_threshold")),
            high_entropy_seconds=float(c.get("pulse.high_entropy_seconds")),
            high_entropy_action=act(str(c.get("pulse.high_entropy_action"))),
            empty_workspace_action=act(str(c.get("pulse.empty_workspace_action"))),
            precision=int(c.get("pulse.precision")),
            dream_action=act("trigger_dream"),
            dream_blocked_action=act(str(c.get("pulse.dream_blocked_action"))),
        )


def callable_action(ideal: str, stand_ins: Mapping[str, Sequence[str]], tools: Collection[str]) -> str:
    """`ideal` if it is a registered tool, else the first of its stand-ins that is, else "none"."""
    for name in (ideal, *stand_ins.get(ideal, ())):
        if name in tools:
            return name
    return "none"


def suggested_action(
    quadrant: Quadrant,
    rules: PulseRules,
    now: float,
    workspace_empty_since: float | None,
    high_entropy_since: float | None,
    dream_blocked: bool = False,
) -> str:
    """The first rule that applies: sustained entropy, then an empty workspace, then the quadrant. With
    `dream_blocked` (a dream runs, or would find nothing new), a rule that asks for a dream is passed over."""
    candidates = []
    if high_entropy_since is not None and now - high_entropy_since >= rules.high_entropy_seconds:
        candidates.append(rules.high_entropy_action)
    if workspace_empty_since is not None and now - workspace_empty_since >= rules.empty_workspace_seconds:
        candidates.append(rules.empty_workspace_action)
    candidates.append(rules.actions[quadrant])
    for action in candidates:
        if not (dream_blocked and action == rules.dream_action):
            return action
    return rules.dream_blocked_action


def pulse(
    entropy: float,
    coherence: float,
    learning_score: float,
    rules: PulseRules,
    now: float,
    workspace_empty_since: float | None,
    high_entropy_since: float | None,
    dream_blocked: bool = False,
) -> dict[str, Any]:
    quadrant = classify(entropy, coherence, rules.johari_threshold)
    return {
        "entropy": round(entropy, rules.precision),
        "coherence": round(coherence, rules.precision),
        "learning_score": round(learning_score, rules.precision),
        "quadrant": quadrant,
        "suggested_action": suggested_action(quadrant, rules, now, workspace_empty_since, high_entropy_since,
                                             dream_blocked),
    }
