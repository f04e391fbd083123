"""A corpus with known themes for the purpose benchmark: 4 topics of different sizes (the largest is the one a
north star should land on), unrelated noise, and planted near-duplicates (a stored memory restated with a word or
two changed). Deterministic: sentences are built from per-topic subjects, verbs and details by a seeded RNG."""

from __future__ import annotations

import random

TOPICS: dict[str, dict[str, list[str]]] = {
    "kubernetes": {
        "subjects": ["The Kubernetes deployment", "Our Helm chart", "The ingress controller", "The pod autoscaler",
                     "The kubelet on the worker node", "The service mesh sidecar", "The cluster's etcd quorum",
                     "The container image registry", "The readiness probe", "The CronJob in the staging namespace"],
        "verbs": ["failed to roll out because", "was restarted after", "needs a fix since", "kept crashing when",
                  "was rescheduled because", "ran out of memory when"],
        "details": ["the container exceeded its memory limit", "the liveness probe timed out",
                    "the persistent volume claim was not bound", "the node pool was drained for an upgrade",
                    "the image pull secret had expired", "the replica count was scaled to zero",
                    "the resource quota of the namespace was reached", "the pods were evicted under disk pressure"],
    },
    "cooking": {
        "subjects": ["The sourdough starter", "My risotto", "The braised short ribs", "The pizza dough",
                     "The tomato sauce", "The roast chicken", "The lemon tart", "The vegetable curry",
                     "The homemade pasta", "The caramel"],
        "verbs": ["turned out better when", "tasted flat until", "needs more time if", "comes out crisp when",
                  "burned because", "became silky after"],
        "details": ["the oven was preheated to 250 degrees", "a pinch of salt went in early",
                    "the butter was browned first", "the dough rested overnight in the fridge",
                    "fresh basil was added at the end", "the onions were caramelised slowly",
                    "the stock was simmered for three hours", "the flour was sifted twice"],
    },
    "astronomy": {
        "subjects": ["The Andromeda galaxy", "The telescope's mirror", "Jupiter's moon Europa", "The Crab nebula",
                     "A red dwarf star", "The comet's tail", "The solar corona", "Saturn's rings",
                     "The exoplanet transit", "The neutron star"],
        "verbs": ["was observed clearly when", "appears brighter because", "was photographed after",
                  "is studied since", "looked dim when", "was measured while"],
        "details": ["the night sky was free of light pollution", "the spectrograph recorded hydrogen lines",
                    "the orbit brought it closer to the sun", "the seeing conditions improved after midnight",
                    "the infrared camera was cooled", "the planet passed in front of its star",
                    "the gravitational lensing magnified it", "the eclipse blocked the solar disk"],
    },
    "finance": {
        "subjects": ["The quarterly budget", "Our invoice backlog", "The tax filing", "The expense report",
                     "The pension contribution", "The mortgage payment", "The savings account", "The stock portfolio",
                     "The payroll run", "The annual audit"],
        "verbs": ["was delayed because", "went over plan since", "needs review after", "was approved once",
                  "looked healthier when", "was corrected after"],
        "details": ["the interest rate rose by half a percent", "the accountant found a duplicated payment",
                    "the currency exchange rate moved against us", "the dividends were reinvested",
                    "the deductible receipts were missing", "the vendor sent the invoice twice",
                    "the fiscal year closed early", "the depreciation schedule was updated"],
    },
}
NOISE = [
    "The cat sleeps on the windowsill every afternoon.", "Remember to call grandma on Sunday.",
    "The train to Berlin leaves at seven.", "I started reading a novel about sailors.",
    "The garden hose has a leak near the tap.", "Buy new running shoes before the marathon.",
    "The museum is closed on Mondays.", "My bicycle chain squeaks in the rain.",
    "The concert tickets sold out in an hour.", "A chess opening called the Sicilian defence.",
    "The printer on the third floor jams often.", "The neighbour's dog barks at the mailman.",
    "Learn ten new Spanish words every week.", "The library extended its opening hours.",
    "Paint the fence before the autumn rains.",
]
SIZES = {"kubernetes": 45, "cooking": 30, "astronomy": 30, "finance": 25}
SWAPS = [("failed to", "did not"), ("because", "as"), ("when", "whenever"), ("The ", "Our "), ("after", "following"),
         ("needs", "requires"), ("was", "got")]


def build(seed: int = 7, duplicates: int = 6) -> tuple[list[tuple[str, str]], list[tuple[int, int]]]:
    """([(topic or 'noise', text)], planted duplicate pairs as (original index, duplicate index))."""
    rng = random.Random(seed)
    items: list[tuple[str, str]] = []
    for topic, size in SIZES.items():
        t = TOPICS[topic]
        seen: set[str] = set()
        while len([1 for top, _ in items if top == topic]) < size:
            text = f"{rng.choice(t['subjects'])} {rng.choice(t['verbs'])} {rng.choice(t['details'])}."
            if text not in seen:
                seen.add(text)
                items.append((topic, text))
    items += [("noise", n) for n in NOISE]
    rng.shuffle(items)
    pairs: list[tuple[int, int]] = []
    originals = rng.sample([i for i, (top, _) in enumerate(items) if top != "noise"], duplicates)
    for i in originals:
        topic, text = items[i]
        for old, new in SWAPS:
            if old in text:
                text = text.replace(old, new, 1)
                break
        items.append((topic, text + " (noted again)"))
        pairs.append((i, len(items) - 1))
    return items, pairs
