"""Prose training pairs for E7's encoder: Debian package descriptions that no benchmark reads.

    .venv/bin/python benchmarks/prose_encoder_data.py --out benchmarks/results/prose-pairs.jsonl

Each pair is (one-line synopsis, long description) from apt's English translation index, the shape of the prose
corpus (`_corpora.prose_corpus`), so a query that names what a thing is learns to find the text that explains it.
Kept by the corpus's own rules (25..250 words, synopses of >= 3 words, no transitional/dummy/debug packages, one
package per distinct synopsis and first paragraph), and then, so that no benchmark's text is trained on:
- every package of the prose corpus's sample (all of it, tune and test halves), and every package whose synopsis
  or first paragraph equals one of theirs (the -dev/-doc/-data siblings repeat it);
- every package installed on this machine: the held-out `man` corpus reads the manual pages they brought, so a
  model that had read their descriptions would be judged on programs it had been told about;
- never the manual pages or the Python standard library themselves (they are not in this index).

A pair's `package` is its family (the name's first segment: python3, golang, r, node, ...), so that a training
batch, drawn from one family as the code encoder's batches are drawn from one package, holds near siblings:
harder negatives than a random mix. `DEV_SHARE` of the families' pairs (seeded) are kept for model selection.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
from collections import Counter
from pathlib import Path

from _corpora import _SKIP, _translation_records, prose_corpus

SEED = 38
DEV_SHARE = 0.04


def _key(text: str) -> str:
    return " ".join(text.split()).lower()


def installed_packages() -> set[str]:
    listed = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\n"], capture_output=True, text=True, check=True)
    return {name.split(":")[0] for name in listed.stdout.split()}


def family(package: str) -> str:
    return package.split("-")[0] if "-" in package else "misc"


def mine(seed: int = SEED) -> list[dict]:
    corpus = prose_corpus()
    banned = {item.where for item in corpus.items} | installed_packages()
    banned_q = {_key(item.query) for item in corpus.items}
    banned_first = {item.document.split("\n\n")[0].lower()[:300] for item in corpus.items}
    seen_q: set[str] = set()
    seen_first: set[str] = set()
    out: list[dict] = []
    for package, synopsis, long in _translation_records():
        first = long.split("\n\n")[0].lower()[:300]
        q = _key(synopsis)
        if first in seen_first or q in seen_q:
            continue
        seen_first.add(first)
        seen_q.add(q)
        words = len(long.split())
        if (package in banned or q in banned_q or first in banned_first or not 25 <= words <= 250
                or len(synopsis.split()) < 3 or _SKIP.search(synopsis)):
            continue
        out.append({"query": synopsis, "document": long, "package": family(package), "where": package})
    rng = random.Random(seed)
    for row in out:
        row["split"] = "dev" if rng.random() < DEV_SHARE else "train"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "prose-pairs.jsonl")
    args = parser.parse_args()
    pairs = mine()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for pair in pairs:
            f.write(json.dumps(pair, ensure_ascii=False) + "\n")
    n_dev = sum(p["split"] == "dev" for p in pairs)
    families = Counter(p["package"] for p in pairs)
    print(f"{len(pairs)} pairs ({len(pairs) - n_dev} train, {n_dev} dev), {len(families)} families, the largest "
          f"{families.most_common(8)} -> {args.out}")


if __name__ == "__main__":
    main()
