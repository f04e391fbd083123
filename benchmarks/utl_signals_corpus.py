"""Labelled probes for benchmarks/utl_signals.py: topics of stored facts, and per topic four probes of known kind.

Two halves, fixed before any tuning: TUNE is the six topics of the property tests (tests/unit/novelty_corpus.py,
what the UTL was tuned on); TEST is four topics written for this benchmark (three share their stored facts with
benchmarks/cognitive_session.py; every probe here is new), only ever reported, never tuned on.

Per topic: `facts` (stored first, interleaved with every other topic's), and the probes `duplicate` (a stored fact
verbatim), `paraphrase` (a stored fact in other words), `new` (a fact on the topic not stated before) and
`unrelated` (a text on no stored topic)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))
import novelty_corpus as nc

KINDS = ("duplicate", "paraphrase", "new", "unrelated")


def _tune() -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for i, (name, t) in enumerate(nc.TOPICS.items()):
        facts = tuple(t["facts"])  # type: ignore[arg-type]
        _of, para = t["paraphrase"]  # type: ignore[misc]
        out[name] = {"facts": facts, "duplicate": facts[4], "paraphrase": para, "new": t["new"],
                     "unrelated": nc.UNRELATED[i]}
    return out


TUNE = _tune()

TEST: dict[str, dict[str, object]] = {
    "ci-cache": {
        "facts": (
            "The CI pipeline restores the pip cache keyed on the hash of requirements.txt before installing packages.",
            "Integration tests in CI run against a Postgres 15 service container started for each job.",
            "The nightly CI workflow rebuilds the Docker base image and pushes it to the registry with a date tag.",
            "A CI job is cancelled automatically when a newer commit is pushed to the same branch.",
        ),
        "duplicate": "A CI job is cancelled automatically when a newer commit is pushed to the same branch.",
        "paraphrase": "Whenever someone pushes a newer commit to a branch, CI stops the job still running for the "
                      "older one.",
        "new": "Flaky CI tests are retried once, and a test that fails twice marks the whole job as failed.",
        "unrelated": "The bakery on the square sells rye loaves with caraway seeds on Saturday mornings.",
    },
    "espresso": {
        "facts": (
            "The espresso grinder is set to step 12 for the medium roast from the corner shop.",
            "A double shot should take 18 grams of coffee and run for about 28 seconds.",
            "The machine is descaled every two months with a citric acid solution.",
            "Milk for a flat white is steamed to about 60 degrees, just before the jug gets too hot to hold.",
        ),
        "duplicate": "The machine is descaled every two months with a citric acid solution.",
        "paraphrase": "For the corner shop's medium roast, the grinder sits at setting 12.",
        "new": "Preheating the cups on top of the machine keeps the espresso from cooling too quickly.",
        "unrelated": "The ferry to the island leaves from pier four at quarter past every hour in summer.",
    },
    "birds": {
        "facts": (
            "On the wetland walk we saw a grey heron standing motionless in the reeds by the second hide.",
            "A pair of great crested grebes performed their head-shaking courtship display on the lake.",
            "The warden said marsh harriers nest in the reed bed on the far side of the reserve.",
            "Swifts arrived over the visitor centre in the first week of May this year.",
        ),
        "duplicate": "Swifts arrived over the visitor centre in the first week of May this year.",
        "paraphrase": "Near the second hide a grey heron stood completely still among the reeds during our walk "
                      "through the wetland.",
        "new": "A kingfisher flashed past the hide twice and perched on the willow branch over the stream.",
        "unrelated": "The spreadsheet's pivot table sums the invoices by customer and by quarter.",
    },
    "sourdough": {
        "facts": (
            "The sourdough starter is fed twice a day with equal weights of rye flour and water.",
            "Bulk fermentation takes about five hours at 24 degrees before the dough is shaped.",
            "The shaped loaves proof overnight in the fridge in linen-lined bannetons.",
            "Loaves bake in a preheated Dutch oven at 250 degrees, lid on for the first twenty minutes.",
        ),
        "duplicate": "The shaped loaves proof overnight in the fridge in linen-lined bannetons.",
        "paraphrase": "The starter gets two meals a day, each of rye flour and water in the same weight.",
        "new": "Adding a spoon of diastatic malt gives the sourdough crust a deeper brown colour.",
        "unrelated": "The city council voted to extend the cycle lane along the river to the football stadium.",
    },
}


def stored() -> list[tuple[str, str]]:
    """(topic, fact) of every topic's facts, interleaved across both halves (as memories arrive)."""
    topics = {**TUNE, **TEST}
    facts = {name: tuple(t["facts"]) for name, t in topics.items()}  # type: ignore[arg-type]
    longest = max(len(f) for f in facts.values())
    return [(name, f[i]) for i in range(longest) for name, f in facts.items() if i < len(f)]


def probes() -> list[tuple[str, str, str, str]]:
    """(half, topic, kind, text) of every probe: topic after topic, alternating halves, kinds in KINDS order."""
    tune, test = list(TUNE), list(TEST)
    order = [("tune", t) for t in tune[: len(test)]]
    order = [x for pair in zip(order, [("test", t) for t in test]) for x in pair] + [("tune", t)
                                                                                     for t in tune[len(test):]]
    topics = {**TUNE, **TEST}
    return [(half, name, kind, str(topics[name][kind])) for half, name in order for kind in KINDS]
