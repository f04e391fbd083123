"""Labelled probes for benchmarks/utl_signals.py: topics of stored facts, and per topic four probes of known kind.

Two halves, fixed before any tuning: TUNE is the six topics of the property tests (tests/unit/novelty_corpus.py,
what the UTL was tuned on); TEST is eight topics written for this benchmark, only ever reported, never tuned on:
four from the first version (three share their stored facts with benchmarks/cognitive_session.py; every probe
here is new) and four added on 2026-11-27 in domains no other topic touches (beekeeping, a home network, film
photography, an aquarium), written before any run on them, so that "≥ 80 % of topics" is at least 7 of 8, not 4 of 4.

Per topic: `facts` (stored first, interleaved with every other topic's), and the probes `duplicate` (a stored fact
verbatim), `paraphrase` (a stored fact in other words), `new` (a fact on the topic not stated before) and
`unrelated` (a text on no stored topic). Two unrelated probes of the first version were on a stored topic once
both halves shared one store, and were replaced on 2026-11-27: ci-cache's rye loaves with caraway (the bread and
sourdough topics store rye-flour facts) and tomatoes' Arctic terns, "the longest journey of any bird" (the birds
topic stores bird sightings); HISTORY.md gives the numbers with the old probes too."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "unit"))
import novelty_corpus as nc

KINDS = ("duplicate", "paraphrase", "new", "unrelated")


# tomatoes' own unrelated text (Arctic terns, the longest journey of any bird) is on the birds topic of TEST
_UNRELATED_OF = {"tomatoes": 6}


def _tune() -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for i, (name, t) in enumerate(nc.TOPICS.items()):
        facts = tuple(t["facts"])  # type: ignore[arg-type]
        _of, para = t["paraphrase"]  # type: ignore[misc]
        out[name] = {"facts": facts, "duplicate": facts[4], "paraphrase": para, "new": t["new"],
                     "unrelated": nc.UNRELATED[_UNRELATED_OF.get(name, i)]}
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
        "unrelated": "The museum's Roman coin collection moved to the east wing after the roof was repaired.",
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
    "beekeeping": {
        "facts": (
            "The hives are inspected every nine days in spring to look for queen cells before the colony swarms.",
            "Each brood box holds eleven frames, and a queen excluder keeps the queen out of the honey supers.",
            "Varroa mites are treated with oxalic acid in December, when the colony has no capped brood.",
            "The spring honey from the oilseed rape fields is extracted quickly because it sets hard within weeks.",
        ),
        "duplicate": "Varroa mites are treated with oxalic acid in December, when the colony has no capped brood.",
        "paraphrase": "Above the brood chamber with its eleven frames sits a grid that lets the workers through but "
                      "keeps the laying queen below, away from the honey.",
        "new": "The bees are fed thick sugar syrup in early autumn if the hive feels light when lifted at the back.",
        "unrelated": "The dentist recommends replacing a toothbrush every three months or after an illness.",
    },
    "home-network": {
        "facts": (
            "The router hands out addresses from 192.168.1.100 to 192.168.1.200 by DHCP.",
            "The NAS in the hall cupboard backs up both laptops every night at two o'clock.",
            "The upstairs mesh node is wired to the router with a Cat6 cable through the floor.",
            "Guest devices join a separate Wi-Fi network that cannot reach the printer or the NAS.",
        ),
        "duplicate": "Guest devices join a separate Wi-Fi network that cannot reach the printer or the NAS.",
        "paraphrase": "Every night at 2 a.m. the storage box in the hallway cupboard copies the files of both "
                      "laptops.",
        "new": "The router's firmware updates itself on Sunday nights, so the internet drops for a few minutes then.",
        "unrelated": "Origami cranes are folded from a single square sheet of paper without cuts or glue.",
    },
    "film-photography": {
        "facts": (
            "The black-and-white film is developed in the bathroom with the developer at exactly 20 degrees.",
            "Portra 400 colour negatives are sent to the lab in town and scanned at high resolution.",
            "The old rangefinder's light meter reads about one stop too bright, so exposures are adjusted by hand.",
            "Developed negatives are cut into strips of six and stored in archival sleeves in a ring binder.",
        ),
        "duplicate": "The black-and-white film is developed in the bathroom with the developer at exactly 20 degrees.",
        "paraphrase": "Because the rangefinder's built-in meter overestimates the light by roughly a stop, each "
                      "exposure gets corrected manually.",
        "new": "Fixer can be reused for about fifteen rolls before the negatives start to show a milky residue.",
        "unrelated": "Lighthouse keepers once trimmed the lamp's wick every few hours through the night.",
    },
    "aquarium": {
        "facts": (
            "The freshwater aquarium holds 120 litres and is kept at 25 degrees with a small heater.",
            "A quarter of the tank's water is changed every Sunday with dechlorinated tap water.",
            "The neon tetras school near the plants, while the corydoras search the sand for food.",
            "The canister filter's sponges are rinsed in old tank water so the beneficial bacteria survive.",
        ),
        "duplicate": "A quarter of the tank's water is changed every Sunday with dechlorinated tap water.",
        "paraphrase": "To keep the helpful bacteria alive, the filter media are only ever washed in water taken "
                      "from the aquarium itself.",
        "new": "New fish wait two weeks in a quarantine tank before they join the main aquarium.",
        "unrelated": "The parliament's budget debate ran past midnight before the final vote.",
    },
}

# A third check, only with `utl_signals.py --fresh`: two topics written on 2026-11-27 (issue 34, the ΔC gap) before
# any run on them, in domains no other topic or unrelated probe touches. Never tuned on; adding them changes the
# store every other probe is scored against, so their run is reported apart from the tune/test runs. Found on the
# first run and left as written: tax-paperwork is the topic of bread's unrelated probe (tune: "The tax return is due
# by the end of April"), which in a --fresh session is no longer unrelated (bread's ΔC gap 0.36 → −0.05 there).
FRESH: dict[str, dict[str, object]] = {
    "bicycle": {
        "facts": (
            "The chain on the commuter bike is cleaned and re-oiled every two weeks in winter because of the road "
            "salt.",
            "The rear tyre is pumped to 80 psi and the front to 75 psi for the ride to work.",
            "Disc brake pads are replaced once the friction material is thinner than one and a half millimetres.",
            "The bike is locked to the steel rack behind the office with a D-lock through the frame and the rear "
            "wheel.",
        ),
        "duplicate": "The rear tyre is pumped to 80 psi and the front to 75 psi for the ride to work.",
        "paraphrase": "Every fortnight during the winter months the chain gets degreased and lubricated again, since "
                      "salt from the roads eats into it.",
        "new": "The front derailleur needs its cable tension adjusted whenever the chain starts rubbing in the "
               "largest gear.",
        "unrelated": "The choir rehearses the second movement of the requiem on Thursday evenings in the church hall.",
    },
    "tax-paperwork": {
        "facts": (
            "Receipts for deductible work expenses are scanned and filed in a folder named after the tax year.",
            "The tax return is due on the last day of July, and the accountant needs the documents by mid-May.",
            "Quarterly advance payments for the freelance income are transferred on the tenth of March, June, "
            "September and December.",
            "Bank statements are kept for ten years, as the tax office may audit the self-employed for that long.",
        ),
        "duplicate": "Quarterly advance payments for the freelance income are transferred on the tenth of March, "
                     "June, September and December.",
        "paraphrase": "The accountant asks for every document by the middle of May so the return can be filed "
                      "before the end of July.",
        "new": "The home office counts as a deduction only for the share of the flat's floor area that is used for "
               "work alone.",
        "unrelated": "Glaciers in the Alps have lost more than half of their volume since the middle of the "
                     "nineteenth century.",
    },
}


def _halves(fresh: bool) -> list[tuple[str, dict[str, dict[str, object]]]]:
    return [("tune", TUNE), ("test", TEST)] + ([("fresh", FRESH)] if fresh else [])


def stored(fresh: bool = False) -> list[tuple[str, str]]:
    """(topic, fact) of every topic's facts, interleaved across the halves (as memories arrive)."""
    topics = {name: t for _, half in _halves(fresh) for name, t in half.items()}
    facts = {name: tuple(t["facts"]) for name, t in topics.items()}  # type: ignore[arg-type]
    longest = max(len(f) for f in facts.values())
    return [(name, f[i]) for i in range(longest) for name, f in facts.items() if i < len(f)]


def probes(fresh: bool = False) -> list[tuple[str, str, str, str]]:
    """(half, topic, kind, text) of every probe: topic after topic, alternating halves while each has topics
    left, kinds in KINDS order."""
    halves = [[(name, t) for t in half] for name, half in _halves(fresh)]
    order = [h[i] for i in range(max(map(len, halves))) for h in halves if i < len(h)]
    topics = {name: t for _, half in _halves(fresh) for name, t in half.items()}
    return [(half, name, kind, str(topics[name][kind])) for half, name in order for kind in KINDS]
