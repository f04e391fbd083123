"""What the neuromodulators did to one answer, after stages 3-5 chose it
(docs/retrieval.md#neuromodulation-of-retrieval): dopamine's reorder of the answer toward what the agent just used,
and the one line per modulator that the answer carries when it changed the set or the order."""

from __future__ import annotations

from contextgraph.retrieval.modulation import Modulation, boost_of, favoured
from contextgraph.storage.base import MemoryRecord


def explored_note(mod: Modulation, plain: list[int], chosen: list[int]) -> list[str]:
    """One line when noradrenaline's exploration changed the answer (its set or its order)."""
    if plain == chosen:
        return []
    joined = len(set(chosen) - set(plain))
    what = f"{joined} linked memor{'y' if joined == 1 else 'ies'} joined the answer" if joined else "reordered it"
    return [f"noradrenaline (attention {mod.temperature:.2f}, after weak searches) explored the graph links of the "
            f"first hits: {what}"]


def favour(mod: Modulation, chosen: list[int], records: list[MemoryRecord | None],
            final: dict[int, float]) -> tuple[list[int], list[MemoryRecord | None], dict[int, float], list[str]]:
    """Dopamine's boosts applied to the answer: its rows reordered by their boosted final scores (the same set),
    and one line when the order moved."""
    ids = [record.id if record is not None else "" for record in records]
    order, boosted = favoured(ids, [final[i] for i in chosen], mod.boosts)
    rows = [chosen[k] for k in order]
    final = {**final, **dict(zip(rows, boosted))}
    if order == list(range(len(chosen))):
        return rows, records, final, []
    raised = sum(1 for new, old in enumerate(order) if new < old and boost_of(ids[old], mod.boosts) > 0)
    line = (f"dopamine ranked {raised} memor{'y' if raised == 1 else 'ies'} you just used higher in this answer "
            "(nothing was left out)")
    return rows, [records[k] for k in order], final, [line]
