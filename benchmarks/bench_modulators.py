"""Modulators with a job (docs/engine.md#what-each-modulator-does): each neuromodulator's effect on a case built
for it (benchmarks/modulators_corpus.py), before (the modulators at rest) and after (moved by the event that moves
them in a session), through the real MemoryService and the real listeners. Each case is split in halves by index
(even: tune, where the gain or bound in the constitution was chosen; odd: test, reported).

noradrenaline   per topic: `query` at rest; then the session's earlier `weak` search (nothing relevant: the
                results listener raises noradrenaline), then `query` again. Recall@5 of {hit, linked}, and
                how many linked notes (worded without the query's words, reachable through link_to) are in the top 5.
                Control: the dopamine case's `then` queries at rest vs aroused (MRR of their target).
dopamine        per topic: `then` at rest (dopamine at its baseline, nothing used); then `first` is searched and
                the agent cites `used` (the relevance-evidence listener: a use), then `then` again. MRR of the
                target, for topics whose target is the used note and for controls whose target is another note;
                whether the top 5's set ever changed (it must not).
Every level is read with a frozen clock, so nothing decays between the events and the searches that follow.

Run:  .venv/bin/python benchmarks/bench_modulators.py [--gains 0.5,1,2,4] [--bounds 0.1,0.2,0.3,0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import write_result
from _workload import bench_settings
from modulators_corpus import DISTRACTORS, LINKED, USED

from contextgraph.app import build_app
from contextgraph.services.feedback.neuromod_wiring import on_tool_call as dopamine_on_use
from contextgraph.services.memory.memory_payloads import NewMemory

K = 5
WHY = "planted for the modulators benchmark"


async def fill(app: Any) -> tuple[list[tuple[str, str]], list[tuple[str, list[str]]]]:
    """The store: distractors, the linked pairs (the follow-up stored with link_to its hit), the used triples.
    Returns (hit id, linked id) per linked topic and (used id, [other ids]) per used topic."""
    memory = app.services.memory

    async def put(text: str, link_to: tuple[str, ...] = ()) -> str:
        return (await memory.store(NewMemory(text, WHY, link_to=link_to))).record.id

    for text in DISTRACTORS:
        await put(text)
    pairs = []
    for case in LINKED:
        hit = await put(case.hit)
        pairs.append((hit, await put(case.linked, (hit,))))
    triples = []
    for case in USED:
        triples.append((await put(case.used), [await put(other) for other in case.others]))
    await memory.settled()
    return pairs, triples


async def ranked(app: Any, query: str) -> tuple[list[str], dict[str, Any]]:
    out = await app.services.memory.search(query, top_k=K, min_similarity=0.0, modality=None, breakdown=False)
    await app.services.memory.settled()  # the results listeners (noradrenaline's) have heard it
    payload = out.payload()
    return [r["id"] for r in payload["results"]], payload


def rest(neuro: Any) -> None:
    """Every modulator back at its baseline and nothing remembered as used."""
    for name in ("dopamine", "serotonin", "noradrenaline"):
        neuro.adjust(name, neuro.bounds[name].baseline - neuro.level(name), "bench: rest")
    for key, _ in list(neuro._uses):  # the bench's reset between topics
        neuro.refuted(key)


def reciprocal(ids: list[str], target: str) -> float:
    return 1.0 / (ids.index(target) + 1) if target in ids else 0.0


async def noradrenaline_case(app: Any, pairs: list[tuple[str, str]], half: int) -> dict[str, Any]:
    """Per topic: `query` at rest; with noradrenaline where one weak search puts it (aroused); and in the session
    (rest, the `weak` search itself, then `query`: moved only when the store flags `weak` as nothing relevant)."""
    neuro = app.services.neuromodulation
    one_weak = neuro.bounds["noradrenaline"].baseline + neuro.on_weak_search
    rows = []
    for index in range(half, len(LINKED), 2):
        case, (hit, linked) = LINKED[index], pairs[index]
        rest(neuro)
        before, plain = await ranked(app, case.query)
        neuro.adjust("noradrenaline", one_weak - neuro.level("noradrenaline"), "bench: one weak search")
        after, payload = await ranked(app, case.query)
        rest(neuro)
        _, weak = await ranked(app, case.weak)
        session, _ = await ranked(app, case.query)
        rows.append({"weak_flagged": weak["nothing_relevant"],
                     "weak_best": max((r["similarity"] for r in weak["results"]), default=0.0),
                     "query_best": max((r["similarity"] for r in plain["results"]), default=0.0),
                     "recall_before": (hit in before) / 2 + (linked in before) / 2,
                     "recall_after": (hit in after) / 2 + (linked in after) / 2,
                     "linked_rr_before": reciprocal(before, linked), "linked_rr_after": reciprocal(after, linked),
                     "hit_rr_before": reciprocal(before, hit), "hit_rr_after": reciprocal(after, hit),
                     "linked_before": linked in before, "linked_after": linked in after,
                     "linked_session": linked in session, "note": payload.get("modulation_note", "")})
    n = len(rows)
    return summarise(rows, ("recall", "linked_rr", "hit_rr")) | {
        "linked_at_5": f"{sum(r['linked_before'] for r in rows)} → {sum(r['linked_after'] for r in rows)} of {n}",
        "session": f"{sum(r['weak_flagged'] for r in rows)} of {n} weak searches flagged; linked at 5 after them "
                   f"{sum(r['linked_session'] for r in rows)} of {n}",
        "rows": rows}


def used_cases(triples: list[tuple[str, list[str]]], half: int) -> Iterator[tuple[Any, str, str]]:
    """The dopamine cases of one half (every second from `half`): (case, the used memory, the memory the later
    question should find: the used one, or another of its topic for the controls)."""
    for index in range(half, len(USED), 2):
        case, (used, others) = USED[index], triples[index]
        yield case, used, used if case.target == "used" else others[0]


async def aroused_control(app: Any, triples: list[tuple[str, list[str]]], half: int, level: float) -> dict[str, Any]:
    """The dopamine case's later questions, at rest and with noradrenaline at `level` (nothing used)."""
    neuro = app.services.neuromodulation
    rows = []
    for case, _used, target in used_cases(triples, half):
        rest(neuro)
        before, _ = await ranked(app, case.then)
        neuro.adjust("noradrenaline", level - neuro.level("noradrenaline"), "bench: aroused")
        after, _ = await ranked(app, case.then)
        rows.append({"rr_before": reciprocal(before, target), "rr_after": reciprocal(after, target)})
    return summarise(rows, ("rr",))


async def dopamine_case(app: Any, triples: list[tuple[str, list[str]]], half: int) -> dict[str, Any]:
    neuro = app.services.neuromodulation
    use = dopamine_on_use(neuro)  # the dispatcher's listener: a successful call's relevance evidence
    rows = []
    for case, used, target in used_cases(triples, half):
        rest(neuro)
        before, _ = await ranked(app, case.then)
        await ranked(app, case.first)
        use("hydrate_citation", {"citation_tag": f"[node_{used[:8]}]"})
        after, payload = await ranked(app, case.then)
        rows.append({"target": case.target, "rr_before": reciprocal(before, target),
                     "rr_after": reciprocal(after, target), "same_set": set(before) == set(after),
                     "note": payload.get("modulation_note", "")})
    out: dict[str, Any] = {}
    for kind in ("used", "other"):
        out[f"target_{kind}"] = summarise([r for r in rows if r["target"] == kind], ("rr",))
    out["answer_sets_unchanged"] = all(r["same_set"] for r in rows)
    out["rows"] = rows
    return out


def summarise(rows: list[dict[str, Any]], metrics: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for m in metrics:
        b = statistics.fmean(r[f"{m}_before"] for r in rows) if rows else 0.0
        a = statistics.fmean(r[f"{m}_after"] for r in rows) if rows else 0.0
        out[m] = f"{b:.3f} → {a:.3f}"
    return out


async def run(gains: list[float], bounds: list[float]) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="cg-modulators-"))
    app = build_app(bench_settings(home, CONTEXTGRAPH_AUTO_DREAM="0"), configure_logging=False)
    neuro = app.services.neuromodulation
    frozen = neuro._clock()
    neuro._clock = lambda: frozen  # no decay between an event and the search after it
    result: dict[str, Any] = {"k": K}
    try:
        pairs, triples = await fill(app)
        chosen_gain, chosen_bound = neuro.explore_gain, neuro.use_bound
        result["noradrenaline_tune"] = {}
        level = neuro.bounds["noradrenaline"].baseline + neuro.on_weak_search
        for gain in gains:
            neuro.explore_gain = gain
            result["noradrenaline_tune"][f"gain {gain:g}"] = await noradrenaline_case(app, pairs, 0)
            result["noradrenaline_tune"][f"gain {gain:g}, control"] = await aroused_control(app, triples, 0, level)
        neuro.explore_gain = chosen_gain
        result["noradrenaline_test"] = await noradrenaline_case(app, pairs, 1)
        result["noradrenaline_control_test"] = await aroused_control(app, triples, 1, level)
        result["dopamine_tune"] = {}
        for bound in bounds:
            neuro.use_bound = bound
            result["dopamine_tune"][f"bound {bound:g}"] = await dopamine_case(app, triples, 0)
        neuro.use_bound = chosen_bound
        result["dopamine_test"] = await dopamine_case(app, triples, 1)
        result["chosen"] = {"noradrenaline_explore_gain": chosen_gain, "dopamine_use_boost": chosen_bound}
    finally:
        app.close()
    return result


def show(result: dict[str, Any]) -> None:
    def line(name: str, r: dict[str, Any]) -> None:
        print(f"  {name:<28} " + ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("rows",)))

    print(f"noradrenaline (top {result['k']}), tune half:")
    for name, r in result["noradrenaline_tune"].items():
        line(name, r)
    line("test half (chosen gain)", result["noradrenaline_test"])
    line("control, test (aroused)", result["noradrenaline_control_test"])
    for r in result["noradrenaline_test"]["rows"]:
        if r["note"]:
            print(f"    note: {r['note']}")
            break
    def dopamine(r: dict[str, Any]) -> dict[str, Any]:
        used, other = r["target_used"], r["target_other"]
        return {f"MRR of the cited note ({used['n']})": used["rr"],
                f"MRR where another note answers ({other['n']})": other["rr"],
                "answer sets unchanged": r["answer_sets_unchanged"]}

    print("dopamine, tune half:")
    for name, r in result["dopamine_tune"].items():
        line(name, dopamine(r))
    line("test half (chosen bound)", dopamine(result["dopamine_test"]))
    r = result["dopamine_test"]
    for row in r["rows"]:
        if row["note"]:
            print(f"    note: {row['note']}")
            break


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gains", default="0.5,1,2,4", help="noradrenaline explore gains tried on the tune half")
    ap.add_argument("--bounds", default="0.1,0.2,0.3,0.5", help="dopamine use boosts tried on the tune half")
    args = ap.parse_args()
    result = asyncio.run(run([float(g) for g in args.gains.split(",")], [float(b) for b in args.bounds.split(",")]))
    show(result)
    write_result("modulators", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
