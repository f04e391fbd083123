"""Training pairs for the code encoder (E7), mined from third-party Python packages, never the standard library.

    .venv/bin/python benchmarks/code_encoder_data.py --out benchmarks/results/code-pairs.jsonl

Each pair is (first docstring sentence, the function's source without its docstring), exactly the shape of
`_workload.function_pairs`, which is what the retrieval corpus asks of the standard library. The packages are the
venv's (numpy, scipy, scikit-learn, torch, ...) plus `--extra` (a `pip install --target` directory of pinned
packages: EXTRA_PACKAGES, installed by `--fetch`), so a run on another machine mines the same code.

What is left out, and why:
- the standard library itself and anything copied from it: vendored trees (pip's and setuptools' `_vendor`,
  `_distutils`, black's `blib2to3` = lib2to3, backports), and then every pair whose query or whose code equals one
  of the standard library's own pairs (after whitespace is collapsed). The retrieval benchmark and the independent
  evaluation read the standard library; a model that had seen it would prove nothing.
- tests (directories named test/tests/testing), as the corpus leaves them out.
- at most PER_PACKAGE pairs a package (a seeded sample), so torch or sympy does not outvote the rest.

Packages in DEV_PACKAGES are kept whole for model selection (`split: "dev"`); the rest is `train`.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import sysconfig
from pathlib import Path

from _workload import function_pairs

SITE = Path(sysconfig.get_paths()["purelib"])
EXTRA_DIR = Path(__file__).resolve().parent / "results" / "code-encoder-packages"
EXTRA_PACKAGES = (
    "django==5.1.4", "flask==3.1.0", "werkzeug==3.1.3", "sqlalchemy==2.0.36", "requests==2.32.3", "pandas==2.2.3",
    "matplotlib==3.9.3", "tornado==6.4.2", "aiohttp==3.11.10", "celery==5.4.0", "paramiko==3.5.0",
    "docutils==0.21.2", "sphinx==8.1.3", "pillow==11.0.0", "astroid==3.3.6", "pylint==3.3.2", "ipython==8.30.0",
    "nltk==3.9.1", "kombu==5.4.2", "marshmallow==3.23.1", "alembic==1.14.0",
)
# (import directory, where it lives): the venv's packages that have docstrings worth mining
VENV_PACKAGES = (
    "numpy", "scipy", "sklearn", "torch", "transformers", "sympy", "networkx", "hypothesis", "pydantic", "pygments",
    "rich", "jinja2", "jsonschema", "starlette", "anyio", "click", "typer", "attr", "cryptography", "fsspec",
    "huggingface_hub", "mpmath", "onnx", "psycopg", "sortedcontainers", "structlog", "yaml", "markdown_it",
    "joblib", "narwhals", "uvicorn", "_pytest", "setuptools", "pip", "packaging", "filelock", "tqdm",
    "sentence_transformers", "onnxruntime", "httpx2", "httpcore2", "referencing", "mcp", "pluggy",
)
EXTRA_IMPORTS = (
    "django", "flask", "werkzeug", "sqlalchemy", "requests", "pandas", "matplotlib", "tornado", "aiohttp", "celery",
    "paramiko", "docutils", "sphinx", "PIL", "astroid", "pylint", "IPython", "nltk", "kombu", "marshmallow", "alembic",
)
DEV_PACKAGES = ("networkx", "flask", "paramiko", "marshmallow")
SKIP_DIRS = frozenset({
    "test", "tests", "testing", "idle_test", "__pycache__", "site-packages",
    "_vendor", "vendor", "vendored", "_vendored", "externals", "extern", "_extern", "_distutils", "blib2to3",
    "backports", "_backport", "tomli", "importlib_metadata", "importlib_resources", "zipp",
})
PER_PACKAGE = 2500
SEED = 37


def _key(text: str) -> str:
    return " ".join(text.split()).lower()


def mine(extra_dir: Path = EXTRA_DIR, per_package: int = PER_PACKAGE, seed: int = SEED) -> list[dict]:
    stdlib = function_pairs()
    banned_q = {_key(p.query) for p in stdlib}
    banned_d = {_key(p.document) for p in stdlib}
    roots = [(name, SITE / name) for name in VENV_PACKAGES]
    roots += [(name, extra_dir / name) for name in EXTRA_IMPORTS]
    rng = random.Random(seed)
    seen_q: set[str] = set()
    seen_d: set[str] = set()
    out: list[dict] = []
    for name, root in roots:
        if not root.is_dir():
            print(f"  {name}: not installed, skipped", file=sys.stderr)
            continue
        kept = []
        for pair in function_pairs(root=root, skip=SKIP_DIRS):
            q, d = _key(pair.query), _key(pair.document)
            if q in banned_q or d in banned_d or q in seen_q or d in seen_d:
                continue
            seen_q.add(q)
            seen_d.add(d)
            kept.append(pair)
        chosen = sorted(rng.sample(range(len(kept)), min(per_package, len(kept))))
        split = "dev" if name in DEV_PACKAGES else "train"
        out += [{"query": kept[i].query, "code": kept[i].document, "package": name,
                 "where": kept[i].where, "split": split} for i in chosen]
        print(f"  {name}: {len(kept)} pairs, kept {len(chosen)} ({split})", file=sys.stderr)
    return out


def fetch(extra_dir: Path = EXTRA_DIR) -> None:
    """The pinned extra packages, without their dependencies (only their source is read, never imported)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target",
                    str(extra_dir), *EXTRA_PACKAGES], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "code-pairs.jsonl")
    parser.add_argument("--extra", type=Path, default=EXTRA_DIR)
    parser.add_argument("--fetch", action="store_true", help="pip install the pinned extra packages first")
    parser.add_argument("--per-package", type=int, default=PER_PACKAGE)
    args = parser.parse_args()
    if args.fetch:
        fetch(args.extra)
    pairs = mine(args.extra, args.per_package)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for pair in pairs:
            f.write(json.dumps(pair, ensure_ascii=False) + "\n")
    n_dev = sum(p["split"] == "dev" for p in pairs)
    print(f"{len(pairs)} pairs ({len(pairs) - n_dev} train, {n_dev} dev) -> {args.out}")


if __name__ == "__main__":
    main()
