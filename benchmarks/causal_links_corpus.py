"""A labelled set for the explicit-causal-link rule (docs/storage.md#explicit-causal-links): small incidents, each
a few notes stored in order in one session, with the Causal edges a reader would draw between them (cause →
effect, by note index). Written for this benchmark, in six domains; every kind of case appears in several:

    cause first    a plain note, then one that names it as its cause ("Y because X", "X caused Y")
    effect first   a plain note, then one that names it as its effect ("X led to Y")
    continuation   a note that opens with "So …" / "Therefore …" after its session's previous note
    chain          three or four notes, each naming the one before
    negated        "did not cause", "not because", hedged ("may have"): no edge
    distractor     a note on the same topic that is neither side of the link: no edge to it (HARD: the same
                   thing, another event: "the migration added an index" for "because the migration timed out")
    no link        two related notes without any cue: no edge

Not a test module; `split` gives the tune and test halves (fixed seed) that bench_causal_links.py measures."""

from __future__ import annotations

import random
from dataclasses import dataclass

SEED = 35


@dataclass(frozen=True, slots=True)
class Case:
    domain: str
    notes: tuple[str, ...]
    edges: frozenset[tuple[int, int]]  # (cause note, effect note)


def _case(domain: str, notes: list[str], edges: list[tuple[int, int]]) -> Case:
    return Case(domain, tuple(notes), frozenset(edges))


CASES: tuple[Case, ...] = (
    # --- software operations
    _case("ops", ["The migration timed out after 30 s.", "The deploy failed because the migration timed out.",
                  "The failed deploy led to a rollback.", "So the on-call raised the timeout."],
          [(0, 1), (1, 2), (2, 3)]),
    _case("ops", ["The TLS certificate on the API gateway expired at midnight.",
                  "Mobile clients could not log in because the gateway certificate had expired."], [(0, 1)]),
    _case("ops", ["Disk usage on the log volume reached 100 percent.",
                  "The full log volume caused the ingestion workers to crash."], [(0, 1)]),
    _case("ops", ["The nightly backup job was skipped on Sunday.",
                  "A cron typo led to the skipped nightly backup."], [(1, 0)]),
    _case("ops", ["Memory on the cache nodes grew steadily for three days.",
                  "The memory growth was not caused by the new serializer."], []),
    _case("ops", ["The search cluster rebalanced its shards on Tuesday.",
                  "Query latency doubled because the connection pool was exhausted."], []),
    _case("ops", ["A bad feature flag was rolled out to all users.",
                  "Checkout errors spiked because of the bad feature flag.",
                  "So we added a staged rollout for flags."], [(0, 1), (1, 2)]),
    _case("ops", ["The DNS provider had a regional outage.",
                  "The outage may have been caused by the DNS provider."], []),
    _case("ops", ["The load balancer health checks were misconfigured.",
                  "Half the pods were marked unhealthy due to the misconfigured health checks.",
                  "Marking the pods unhealthy resulted in dropped requests."], [(0, 1), (1, 2)]),
    _case("ops", ["We upgraded the database driver to version 5.", "The new dashboard uses dark colours."], []),
    # --- health
    _case("health", ["Maria skipped her insulin dose on Monday morning.",
                     "Her blood sugar spiked because she skipped the insulin dose."], [(0, 1)]),
    _case("health", ["The patient started taking a new blood pressure pill.",
                     "The new blood pressure pill caused a persistent dry cough.",
                     "So the doctor switched her to a different medication."], [(0, 1), (1, 2)]),
    _case("health", ["Tom developed a rash on both arms.",
                     "Eating shellfish at the wedding led to Tom's rash."], [(1, 0)]),
    _case("health", ["Anna sprained her ankle during the trail run.",
                     "The swelling was not caused by the sprained ankle."], []),
    _case("health", ["The clinic ran out of flu vaccines in October.",
                     "Several staff members caught a cold after the team dinner."], []),
    _case("health", ["Ben has been sleeping only five hours a night.",
                     "His headaches are due to the lack of sleep."], [(0, 1)]),
    _case("health", ["The child had a high fever for two days.",
                     "Dehydration resulted from the high fever.",
                     "Therefore the nurse started an IV drip."], [(0, 1), (1, 2)]),
    _case("health", ["Grandpa stopped his physiotherapy exercises.",
                     "His knee stiffness might be due to stopping the exercises."], []),
    _case("health", ["Lena switched to a standing desk at work.",
                     "Her back pain eased thanks to the standing desk."], [(0, 1)]),
    _case("health", ["The pharmacy changed the generic brand of the statin.", "The waiting room got new chairs."],
          []),
    # --- home
    _case("home", ["A pipe burst in the upstairs bathroom.",
                   "Water stains appeared on the kitchen ceiling because the pipe burst."], [(0, 1)]),
    _case("home", ["The basement flooded after the storm.",
                   "The flooded basement led to mould on the walls.",
                   "So we hired a company to dry out the basement."], [(0, 1), (1, 2)]),
    _case("home", ["The fridge stopped cooling overnight.",
                   "A failed compressor caused the fridge to stop cooling."], [(1, 0)]),
    _case("home", ["The living room lights flicker every evening.",
                   "The flickering is not because of the old dimmer switch."], []),
    _case("home", ["The smoke alarm went off while we were cooking.",
                   "The boiler pressure dropped because of a leaking valve."], []),
    _case("home", ["The gutters were clogged with autumn leaves.",
                   "Rainwater overflowed onto the porch due to the clogged gutters."], [(0, 1)]),
    _case("home", ["The dog chewed through the garden hose.",
                   "The tomatoes may have wilted because of the chewed hose."], []),
    _case("home", ["The heating bill doubled in January.",
                   "Leaving the windows open all winter resulted in the doubled heating bill."], [(1, 0)]),
    _case("home", ["The washing machine door seal is torn.", "We painted the hallway light grey."], []),
    _case("home", ["The cat knocked the vase off the shelf.",
                   "The vase shattered on the tiles because the cat knocked it off the shelf.",
                   "Therefore we moved the plants to a higher shelf."], [(0, 1), (1, 2)]),
    _case("home", ["The power went out during the thunderstorm.",
                   "The freezer thawed, so the ice cream melted."], []),
    # --- finance and business
    _case("finance", ["The supplier raised its prices by 12 percent.",
                      "Our margins shrank because the supplier raised its prices."], [(0, 1)]),
    _case("finance", ["The marketing campaign launched in March.",
                      "The campaign led to a surge in sign-ups.",
                      "So we hired two more support agents."], [(0, 1), (1, 2)]),
    _case("finance", ["Quarterly revenue fell short of the forecast.",
                      "The loss of the largest client caused the revenue shortfall."], [(1, 0)]),
    _case("finance", ["The company switched payroll providers in June.",
                      "The payroll delay did not result from switching providers."], []),
    _case("finance", ["The office lease renewal is due in May.",
                      "Shipping costs rose because fuel prices went up."], []),
    _case("finance", ["The invoice was sent to the wrong address.",
                      "The client paid late due to the misaddressed invoice."], [(0, 1)]),
    _case("finance", ["The exchange rate dropped sharply last week.",
                      "Import costs might rise because of the exchange rate."], []),
    _case("finance", ["The warehouse ran out of packaging boxes.",
                      "Orders shipped two days late as a result of the box shortage.",
                      "Consequently several customers asked for refunds."], [(0, 1), (1, 2)]),
    _case("finance", ["The sales team adopted a new CRM.", "The cafeteria now serves soup on Fridays."], []),
    _case("finance", ["The bank flagged the transfer as suspicious.",
                      "The payment to the contractor was held because the bank flagged the transfer."], [(0, 1)]),
    # --- farming and weather
    _case("farm", ["A late frost hit the orchard in April.",
                   "The apple blossoms died because of the late frost.",
                   "The dead blossoms led to a poor harvest."], [(0, 1), (1, 2)]),
    _case("farm", ["The irrigation pump broke during the heatwave.",
                   "The broken pump caused the lettuce to wilt."], [(0, 1)]),
    _case("farm", ["Aphids spread across the bean rows.",
                   "Cutting the hedgerow led to the aphid outbreak."], [(1, 0)]),
    _case("farm", ["The cows produced less milk this week.",
                   "The drop in milk was not caused by the new feed."], []),
    _case("farm", ["The river flooded the lower fields.",
                   "The tractor's clutch failed because of worn plates."], []),
    _case("farm", ["It rained every day for three weeks.",
                   "So the wheat harvest was delayed."], [(0, 1)]),
    # --- cars and travel
    _case("travel", ["The car battery was left connected to the dashcam all week.",
                     "The car would not start because the battery was drained.",
                     "So we missed the morning ferry."], [(0, 1), (1, 2)]),
    _case("travel", ["The train was cancelled due to a signal failure.",
                     "The signal failure resulted from a cable theft near the station."], [(1, 0)]),
    _case("travel", ["The flight was delayed by four hours.",
                     "We missed the connecting flight because of the four hour delay."], [(0, 1)]),
    _case("travel", ["A tyre went flat on the motorway.",
                     "The flat tyre was not caused by the pothole."], []),
    _case("travel", ["The hotel booking was made for the wrong month.",
                     "The rental car had a cracked windscreen."], []),
    _case("travel", ["Heavy snow closed the mountain pass.",
                     "The closed pass led to a long detour through the valley."], [(0, 1)]),
)

# Hard distractors: the stored note is about the same thing as the link's clause, but a different event. Their
# linking notes are worded apart from CASES' (a note twice in one store would be its own distractor).
HARD: tuple[Case, ...] = (
    _case("ops", ["The migration added an index to the orders table.",
                  "The staging release was blocked because the migration hit its timeout."], []),
    _case("ops", ["The API gateway certificate was renewed last month.",
                  "Logins failed because the gateway certificate had expired."], []),
    _case("ops", ["The cache nodes were resized to 64 GB on Friday.",
                  "Evictions spiked because the cache nodes ran out of memory."], []),
    _case("health", ["Maria takes her insulin dose every morning at eight.",
                     "Her blood sugar crashed because she took a double insulin dose."], []),
    _case("health", ["Ben's sleep tracker shows he goes to bed at eleven.",
                     "His headaches are due to drinking too little water."], []),
    _case("home", ["The upstairs bathroom pipe was replaced in 2019.",
                   "The ceiling stain appeared because the roof leaked."], []),
    _case("home", ["We bought a new fridge with a larger freezer.",
                   "The milk spoiled because the fridge door was left open."], []),
    _case("finance", ["The supplier delivered the order ahead of schedule.",
                      "Profit fell this quarter because the supplier put its prices up."], []),
    _case("finance", ["The marketing campaign budget was approved in January.",
                      "Sign-ups fell because the marketing campaign was paused."], []),
    _case("farm", ["The orchard was planted with new apple varieties.",
                   "The apple harvest was poor because of the late frost."], []),
    _case("farm", ["The irrigation pump was serviced in spring.",
                   "The lettuce wilted because the irrigation pump broke."], []),
    _case("travel", ["We booked the morning ferry a month ago.",
                     "We missed the morning ferry because the car would not start."], []),
)


def split(cases: tuple[Case, ...] = CASES + HARD, seed: int = SEED) -> tuple[list[Case], list[Case]]:
    """(tune, test): the cases shuffled with a fixed seed, halved."""
    order = list(cases)
    random.Random(seed).shuffle(order)
    half = len(order) // 2
    return order[:half], order[half:]
