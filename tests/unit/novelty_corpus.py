"""Texts for the novelty/coherence property tests: stored topics, and for each topic the probes of the ordering
SPEC §8 / issue 11 asks for (exact duplicate < light edit < paraphrase < new fact on a stored topic < unrelated).

Six topics of five facts each; each topic has a light edit of one fact (a number or one word changed), a
paraphrase of another (same content, other words) and a new fact (on the topic, not stated before). UNRELATED
holds topics no stored memory touches. benchmarks/cognitive_session.py uses texts of its own, so what is tuned
here is checked there on other sentences."""

TOPICS: dict[str, dict[str, object]] = {
    "migrations": {
        "facts": (
            "The orders table migration timed out during the deploy because ALTER TABLE held an exclusive lock.",
            "Our pipeline runs database migrations before the new pods start, so a slow migration blocks the release.",
            "Create indexes with CREATE INDEX CONCURRENTLY so the migration does not lock writes on the table.",
            "The migration runner's statement_timeout is 60 seconds in production.",
            "Large data backfills run as a background job after the deploy, not inside the schema migration.",
        ),
        "edit": (3, "The migration runner's statement_timeout is 90 seconds in production."),
        "paraphrase": (1, "A slow schema migration holds up the whole release, since our pipeline applies "
                          "migrations before any new pod boots."),
        "new": "Setting lock_timeout to five seconds makes a blocked migration fail fast and retry later.",
    },
    "kubernetes": {
        "facts": (
            "The API pods were OOMKilled because their memory limit of 512 MiB was below the peak heap size.",
            "The horizontal pod autoscaler scales the worker deployment on queue length, not on CPU.",
            "Readiness probes hit /healthz every ten seconds and remove a pod from the service after three failures.",
            "Each node pool runs on spot instances, so pods must tolerate being evicted at short notice.",
            "Secrets are mounted into the pods from the cluster's sealed-secrets controller.",
        ),
        "edit": (2, "Readiness probes hit /healthz every five seconds and remove a pod from the service after "
                    "three failures."),
        "paraphrase": (0, "Peak heap usage exceeded the 512 MiB memory limit, so the kernel killed the API "
                          "containers for running out of memory."),
        "new": "A PodDisruptionBudget keeps at least two API replicas running while nodes are drained.",
    },
    "packaging": {
        "facts": (
            "The project builds its wheel with hatchling and publishes it to PyPI from a tagged release.",
            "Each developer works in a virtual environment created with uv venv in the repository root.",
            "Dependencies are pinned in a lock file that uv regenerates when pyproject.toml changes.",
            "The package supports Python 3.11 and 3.12; CI runs the tests on both versions.",
            "Console scripts are declared under project.scripts in pyproject.toml.",
        ),
        "edit": (3, "The package supports Python 3.11 and 3.13; CI runs the tests on both versions."),
        "paraphrase": (0, "Tagged releases are published to PyPI, with the wheel built by hatchling."),
        "new": "Type stubs ship inside the wheel with a py.typed marker so mypy picks them up.",
    },
    "tomatoes": {
        "facts": (
            "Tomato seedlings go outside only after the last frost, when nights stay above ten degrees.",
            "Indeterminate tomato varieties need tall stakes or cages and regular pruning of side shoots.",
            "Blossom end rot on the tomatoes comes from uneven watering, which limits calcium uptake.",
            "We water the tomato beds deeply twice a week rather than a little every day.",
            "Marigolds planted between the tomato rows keep whiteflies away.",
        ),
        "edit": (3, "We water the tomato beds deeply three times a week rather than a little every day."),
        "paraphrase": (2, "Irregular watering stops the tomato plants from taking up calcium, and the fruit "
                          "then rots at the blossom end."),
        "new": "Yellowing lower leaves on the tomato plants usually mean early blight, so we remove them.",
    },
    "bread": {
        "facts": (
            "The sourdough starter is fed with equal weights of flour and water every morning.",
            "A bread dough at 75 percent hydration is sticky, so it is shaped with wet hands.",
            "Bulk fermentation takes about five hours at room temperature before shaping the loaf.",
            "The loaves bake at 250 degrees in a covered Dutch oven for the first twenty minutes.",
            "Rye flour makes the starter more active because it carries more wild yeast.",
        ),
        "edit": (3, "The loaves bake at 230 degrees in a covered Dutch oven for the first twenty minutes."),
        "paraphrase": (0, "Every morning the sourdough culture gets fresh flour and the same weight of water."),
        "new": "An overnight cold proof in the fridge gives the bread a more sour flavour and a darker crust.",
    },
    "running": {
        "facts": (
            "The marathon training plan builds the weekly long run up to 32 kilometres.",
            "Easy runs are done at a pace where holding a conversation is still possible.",
            "Interval sessions on the track are six repeats of 800 metres with a short jog between them.",
            "Running shoes are replaced after about 700 kilometres because the midsole foam wears out.",
            "A taper in the last three weeks before the marathon cuts the weekly distance by half.",
        ),
        "edit": (2, "Interval sessions on the track are eight repeats of 800 metres with a short jog between them."),
        "paraphrase": (3, "Once the midsole cushioning is worn out, after roughly 700 km, the running shoes get "
                          "swapped for a new pair."),
        "new": "Energy gels every forty minutes during the long run prevent hitting the wall late in the marathon.",
    },
}

UNRELATED = (
    "The violin's E string snapped during the rehearsal of the second movement.",
    "Tide pools at low water hold anemones, hermit crabs and small sculpins.",
    "The medieval castle's keep was rebuilt in stone after a fire in 1190.",
    "Arctic terns migrate from pole to pole every year, the longest journey of any bird.",
    "The tax return is due by the end of April, and late filing costs a penalty.",
    "Knitting a sweater in the round avoids sewing the side seams afterwards.",
    "Basalt columns form when a thick lava flow cools and contracts slowly.",
    "In chess the Sicilian Defence answers 1.e4 with the c-pawn.",
)


def stored() -> list[str]:
    """Every topic's facts, interleaved by topic (as a user's memories arrive, not grouped)."""
    facts = [t["facts"] for t in TOPICS.values()]
    return [f[i] for i in range(max(len(x) for x in facts)) for f in facts if i < len(f)]


def probes(topic: str) -> dict[str, str]:
    """The five probe kinds of one topic, most familiar first."""
    t = TOPICS[topic]
    facts = t["facts"]
    _edit_of, edit = t["edit"]
    _para_of, para = t["paraphrase"]
    return {"duplicate": facts[4], "edit": edit, "paraphrase": para, "new": t["new"]}


ORDER = ("duplicate", "edit", "paraphrase", "new", "unrelated")
