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

from _corpora import eligible_prose, first_paragraph_key, prose_corpus
from code_encoder_data import _key

SEED = 38
DEV_SHARE = 0.04


def installed_packages() -> set[str]:
    listed = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\n"], capture_output=True, text=True, check=True)
    return {name.split(":")[0] for name in listed.stdout.split()}


def family(package: str) -> str:
    return package.split("-")[0] if "-" in package else "misc"


def mine(seed: int = SEED) -> list[dict]:
    corpus = prose_corpus()
    banned = {item.where for item in corpus.items} | installed_packages()
    banned_q = {_key(item.query) for item in corpus.items}
    banned_first = {first_paragraph_key(item.document) for item in corpus.items}
    out = [{"query": item.query, "document": item.document, "package": family(item.where), "where": item.where}
           for item in eligible_prose()
           if not (item.where in banned or _key(item.query) in banned_q
                   or first_paragraph_key(item.document) in banned_first)]
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
