"""Fine-tune all-MiniLM-L6-v2 into the code encoder E7 reads, on pairs mined by code_encoder_data.py.

    .venv/bin/python benchmarks/train_code_encoder.py --pairs benchmarks/results/code-pairs.jsonl \
        --out src/contextgraph/embedders/code_model --steps 400

Contrastive, in-batch negatives (a batch of B pairs is B queries against B code bodies, the diagonal right), both
directions, scale 20 (sentence-transformers' MultipleNegativesRankingLoss, symmetric). The shipped model's
sentence embedding is its mean-pooled token states, as the base model's. One pair in five asks with the
function's identifier-split signature instead of its docstring sentence ("fit transform x y" for
`def fit_transform(self, X, y)`), so the model also learns names.

The embedding layer (word, position and token-type tables, 12 M of the 23 M parameters) stays frozen: the
vocabulary is the base model's, and what is shipped is only the six transformer layers, in float16
(`code_model.safetensors`, ~21 MB): `embedders/code_model.py` assembles the full model from the base model's
tables and these layers. Deterministic given the seed and the thread count (torch on CPU).

Model selection reads only the dev packages (code_encoder_data.DEV_PACKAGES, never trained on): their queries
ranked against their code bodies, MRR@10 and recall@10, before training and after every --eval-every steps;
the last step is kept unless dev fell (then the run says so and writes nothing).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

import numpy as np

SCALE = 20.0
SEED = 37
SIGNATURE_SHARE = 0.2
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\((.*?)\)", re.DOTALL)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def signature_query(code: str) -> str | None:
    """'fit transform x y' for `def fit_transform(self, X, y):`; None when the name says nothing (one word)."""
    match = _DEF.match(code)
    if not match:
        return None
    name, args = match.groups()
    words = [w.lower() for w in _WORDS.findall(name)]
    arg_names = [a.split(":")[0].split("=")[0].strip(" *") for a in args.split(",")]
    words += [w.lower() for a in arg_names if a and a not in ("self", "cls") for w in _WORDS.findall(a)]
    return " ".join(words) if len(_WORDS.findall(name)) >= 2 else None


def load_pairs(path: Path) -> tuple[list[dict], list[dict]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r["split"] == "train"], [r for r in rows if r["split"] == "dev"]


class Encoder:
    """The transformer with mean pooling over the attention mask (the base model's sentence embedding)."""

    def __init__(self, model_dir: Path, max_query: int, max_code: int) -> None:
        from transformers import AutoModel, AutoTokenizer

        from contextgraph.embedders.model_info import ModelInfo

        info = ModelInfo.read(model_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(str(info.transformer_dir))
        self.model = AutoModel.from_pretrained(str(info.transformer_dir))
        self.max_query, self.max_code = max_query, max_code

    def __call__(self, texts: list[str], max_len: int):
        import torch

        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        states = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return torch.nn.functional.normalize(pooled, dim=-1)


def evaluate(encoder: Encoder, dev: list[dict], batch: int = 64) -> dict:
    """Dev queries against all dev code bodies: MRR@10 and recall@10 (one relevant body per query)."""
    import torch

    encoder.model.eval()
    with torch.inference_mode():
        q = torch.cat([encoder([r["query"] for r in dev[i:i + batch]], encoder.max_query)
                       for i in range(0, len(dev), batch)])
        d = torch.cat([encoder([r["code"] for r in dev[i:i + batch]], encoder.max_code)
                       for i in range(0, len(dev), batch)])
    scores = (q @ d.T).numpy()
    gold = scores[np.arange(len(dev)), np.arange(len(dev))]
    rank = (scores > gold[:, None]).sum(axis=1)  # 0-based rank of the right body
    return {"mrr@10": float(np.where(rank < 10, 1.0 / (rank + 1), 0.0).mean()),
            "recall@10": float((rank < 10).mean())}


def training_batches(train: list[dict], size: int, steps: int, seed: int):
    """`steps` batches of (queries, codes). A batch comes from one package (packages of fewer than `size` pairs
    share one pool), chosen in proportion to its pairs: a batch's other bodies are then the same library's code,
    harder negatives than a random mix, where the base model already ranks the right body first (loss ~0.1).
    Within a package the pairs are shuffled and gone through in turn; one query in five is the signature."""
    rng = random.Random(seed)
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(train):
        groups.setdefault(row["package"], []).append(i)
    pools = [g for g in groups.values() if len(g) >= size]
    pools.append([i for g in groups.values() if len(g) < size for i in g])
    queues: list[list[int]] = [[] for _ in pools]
    weights = [len(pool) for pool in pools]
    for _ in range(steps):
        k = rng.choices(range(len(pools)), weights)[0]
        if len(queues[k]) < size:
            fresh = list(pools[k])
            rng.shuffle(fresh)
            queues[k] += fresh
        chosen, queues[k] = queues[k][:size], queues[k][size:]
        queries = []
        for i in chosen:
            sig = signature_query(train[i]["code"]) if rng.random() < SIGNATURE_SHARE else None
            queries.append(sig or train[i]["query"])
        yield queries, [train[i]["code"] for i in chosen]


def train(args: argparse.Namespace) -> None:
    import torch

    from contextgraph.embedders.backbone import default_model_dir

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    train_rows, dev = load_pairs(args.pairs)
    dev = random.Random(args.seed).sample(dev, min(args.dev_size, len(dev)))
    encoder = Encoder(default_model_dir(), args.max_query, args.max_code)
    for param in encoder.model.embeddings.parameters():
        param.requires_grad = False
    params = [p for p in encoder.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (args.steps - s) / (args.steps - warmup))))
    before = evaluate(encoder, dev)
    print(f"dev before: {before}", flush=True)
    history = [{"step": 0, **before}]
    labels = torch.arange(args.batch)
    started = time.perf_counter()
    for step, (queries, codes) in enumerate(training_batches(train_rows, args.batch, args.steps, args.seed), 1):
        encoder.model.train()
        q, d = encoder(queries, args.max_query), encoder(codes, args.max_code)
        logits = SCALE * q @ d.T
        loss = (torch.nn.functional.cross_entropy(logits, labels)
                + torch.nn.functional.cross_entropy(logits.T, labels)) / 2
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 10 == 0:
            rate = (time.perf_counter() - started) / step
            print(f"step {step}/{args.steps} loss {loss.item():.4f} {rate:.2f} s/step", flush=True)
        if step % args.eval_every == 0 or step == args.steps:
            history.append({"step": step, **evaluate(encoder, dev)})
            print(f"dev at {step}: {history[-1]}", flush=True)
    if history[-1]["mrr@10"] <= before["mrr@10"]:
        raise SystemExit(f"dev MRR@10 did not improve ({before['mrr@10']:.4f} -> {history[-1]['mrr@10']:.4f})")
    save(encoder, args, history, time.perf_counter() - started, len(train_rows))


def save(encoder: Encoder, args: argparse.Namespace, history: list[dict], seconds: float, n_train: int) -> None:
    """The six layers in float16 and what made them (the model card reads training.json)."""
    from safetensors.numpy import save_file

    layers = {name: param.detach().to("cpu").numpy().astype(np.float16)
              for name, param in encoder.model.state_dict().items() if not name.startswith("embeddings.")}
    args.out.mkdir(parents=True, exist_ok=True)
    save_file(layers, str(args.out / "code_model.safetensors"))
    record = {"base": "all-MiniLM-L6-v2", "frozen": "embeddings", "pairs_file": str(args.pairs.name),
              "train_pairs": n_train, "steps": args.steps, "batch": args.batch, "lr": args.lr,
              "max_query_tokens": args.max_query, "max_code_tokens": args.max_code, "scale": SCALE,
              "signature_share": SIGNATURE_SHARE, "seed": args.seed, "threads": args.threads,
              "train_seconds": round(seconds), "dev": history}
    (args.out / "training.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=Path(__file__).resolve().parent / "results" / "code-pairs.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=4e-5)
    parser.add_argument("--max-query", type=int, default=64)
    parser.add_argument("--max-code", type=int, default=128)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--dev-size", type=int, default=800, help="dev pairs ranked against each other")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=SEED)
    train(parser.parse_args())


if __name__ == "__main__":
    main()
