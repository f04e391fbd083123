"""Fine-tune all-MiniLM-L6-v2 into the encoder E7 reads, on code pairs (code_encoder_data.py) and prose pairs
(prose_encoder_data.py).

    .venv/bin/python benchmarks/train_code_encoder.py \
        --pairs benchmarks/results/code-pairs.jsonl benchmarks/results/prose-pairs.jsonl \
        --out src/contextgraph/embedders/code_model --steps 2000 --batch 64 --device cuda

Contrastive, in-batch negatives (a batch of B pairs is B queries against B documents, the diagonal right), both
directions, scale 20 (sentence-transformers' MultipleNegativesRankingLoss, symmetric). The shipped model's
sentence embedding is its mean-pooled token states, as the base model's. One code pair in five asks with the
function's identifier-split signature instead of its docstring sentence ("fit transform x y" for
`def fit_transform(self, X, y)`), so the model also learns names. Every text memory and every query gets E7's
forward too, so the prose pairs (a synopsis and the description it heads) teach the same space what a short
question about a thing looks like next to the text that explains it.

The embedding layer (word, position and token-type tables, 12 M of the 23 M parameters) stays frozen: the
vocabulary is the base model's, and what is shipped is only the six transformer layers, in float16
(`code_model.safetensors`, ~21 MB): `embedders/code_model.py` assembles the full model from the base model's
tables and these layers. Deterministic given the seed and the thread count on CPU; on a GPU, to rounding.

Model selection reads only dev pairs, never trained on (the code encoder's dev packages,
code_encoder_data.DEV_PACKAGES, and a seeded share of the prose families): each source's queries ranked against
its documents, MRR@10 and recall@10, before training and after every --eval-every steps; the last step is kept
unless a source's dev did not improve on where it started (then the run says so and writes nothing).
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
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


def _open(path: Path):
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(path.suffix, open)
    return opener(path, "rt", encoding="utf-8")


def load_pairs(paths: list[Path]) -> tuple[list[dict], dict[str, list[dict]]]:
    """Training rows of every file, and each file's dev rows apart (model selection per source). A row's
    document is its "code" or "document"; its batch pool is "<file stem>:<package>"."""
    train: list[dict] = []
    dev: dict[str, list[dict]] = {}
    for path in paths:
        source = path.name.split(".")[0]
        with _open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                row = json.loads(line)
                row = {"query": row["query"], "document": row.get("code") or row["document"],
                       "pool": f"{source}:{row['package']}", "split": row["split"]}
                if row["split"] == "train":
                    train.append(row)
                else:
                    dev.setdefault(source, []).append(row)
    return train, dev


class Encoder:
    """The transformer with mean pooling over the attention mask (the base model's sentence embedding)."""

    def __init__(self, model_dir: Path, max_query: int, max_doc: int, device: str = "cpu") -> None:
        from transformers import AutoModel, AutoTokenizer

        from contextgraph.embedders.model_info import ModelInfo

        info = ModelInfo.read(model_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(str(info.transformer_dir))
        self.model = AutoModel.from_pretrained(str(info.transformer_dir)).to(device)
        self.max_query, self.max_doc, self.device = max_query, max_doc, device

    def __call__(self, texts: list[str], max_len: int):
        import torch

        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        batch = {k: v.to(self.device) for k, v in batch.items()}
        states = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def load_layers(self, path: Path) -> None:
        """Start from trained layers (a shipped code_model.safetensors) instead of the base model's."""
        import torch
        from safetensors.numpy import load_file

        tuned = {k: torch.from_numpy(v.astype(np.float32)) for k, v in load_file(str(path)).items()}
        missing = set(tuned) - set(self.model.state_dict())
        if missing:
            raise ValueError(f"{path} has tensors the base model does not: {sorted(missing)[:3]}")
        self.model.load_state_dict(tuned, strict=False)


def evaluate(encoder: Encoder, dev: list[dict], batch: int = 64) -> dict:
    """Dev queries against all dev documents: MRR@10 and recall@10 (one relevant document per query)."""
    import torch

    encoder.model.eval()
    with torch.inference_mode():
        q = torch.cat([encoder([r["query"] for r in dev[i:i + batch]], encoder.max_query)
                       for i in range(0, len(dev), batch)])
        d = torch.cat([encoder([r["document"] for r in dev[i:i + batch]], encoder.max_doc)
                       for i in range(0, len(dev), batch)])
    scores = (q @ d.T).float().cpu().numpy()
    gold = scores[np.arange(len(dev)), np.arange(len(dev))]
    rank = (scores > gold[:, None]).sum(axis=1)  # 0-based rank of the right document
    return {"mrr@10": float(np.where(rank < 10, 1.0 / (rank + 1), 0.0).mean()),
            "recall@10": float((rank < 10).mean())}


def evaluate_all(encoder: Encoder, dev: dict[str, list[dict]]) -> dict[str, dict]:
    return {source: evaluate(encoder, rows) for source, rows in sorted(dev.items())}


def training_batches(train: list[dict], size: int, steps: int, seed: int):
    """`steps` batches of (queries, documents). A batch comes from one pool (a code package, a prose family;
    pools of fewer than `size` pairs share one), chosen in proportion to its pairs: a batch's other documents are
    then the same library's code or the same family's descriptions, harder negatives than a random mix, where the
    base model already ranks the right one first (loss ~0.1). Within a pool the pairs are shuffled and gone
    through in turn; one code query in five is the signature."""
    rng = random.Random(seed)
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(train):
        groups.setdefault(row["pool"], []).append(i)
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
            sig = signature_query(train[i]["document"]) if rng.random() < SIGNATURE_SHARE else None
            queries.append(sig or train[i]["query"])
        yield queries, [train[i]["document"] for i in chosen]


def _fell(history: list[dict]) -> list[str]:
    first, last = history[0], history[-1]
    return [source for source in first if source != "step" and last[source]["mrr@10"] <= first[source]["mrr@10"]]


def train(args: argparse.Namespace) -> None:
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = False  # the weights CPU serves: fp32 arithmetic on both
    train_rows, dev = load_pairs(args.pairs)
    dev = {s: random.Random(args.seed).sample(rows, min(args.dev_size, len(rows))) for s, rows in dev.items()}
    encoder = Encoder(args.base or _default_base(), args.max_query, args.max_doc, args.device)
    if args.init:
        encoder.load_layers(args.init)
    for param in encoder.model.embeddings.parameters():
        param.requires_grad = False
    params = [p for p in encoder.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (args.steps - s) / (args.steps - warmup))))
    history = [{"step": 0, **evaluate_all(encoder, dev)}]
    print(f"dev before: {history[0]}", flush=True)
    labels = torch.arange(args.batch, device=args.device)
    started = time.perf_counter()
    for step, (queries, docs) in enumerate(training_batches(train_rows, args.batch, args.steps, args.seed), 1):
        encoder.model.train()
        q, d = encoder(queries, args.max_query), encoder(docs, args.max_doc)
        logits = SCALE * q @ d.T
        loss = (torch.nn.functional.cross_entropy(logits, labels)
                + torch.nn.functional.cross_entropy(logits.T, labels)) / 2
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 50 == 0:
            rate = (time.perf_counter() - started) / step
            print(f"step {step}/{args.steps} loss {loss.item():.4f} {rate:.3f} s/step", flush=True)
        if step % args.eval_every == 0 or step == args.steps:
            history.append({"step": step, **evaluate_all(encoder, dev)})
            print(f"dev at {step}: {history[-1]}", flush=True)
    fell = _fell(history)
    if fell:
        raise SystemExit(f"dev MRR@10 did not improve on {fell}: {history[0]} -> {history[-1]}")
    save(encoder, args, history, time.perf_counter() - started, len(train_rows))


def _default_base() -> Path:
    from contextgraph.embedders.backbone import default_model_dir

    return default_model_dir()


def save(encoder: Encoder, args: argparse.Namespace, history: list[dict], seconds: float, n_train: int) -> None:
    """The six layers in float16 and what made them (the model card reads training.json)."""
    import torch
    from safetensors.numpy import save_file

    layers = {name: param.detach().to("cpu", torch.float32).numpy().astype(np.float16)
              for name, param in encoder.model.state_dict().items() if not name.startswith("embeddings.")}
    args.out.mkdir(parents=True, exist_ok=True)
    save_file(layers, str(args.out / "code_model.safetensors"))
    record = {"base": "all-MiniLM-L6-v2", "frozen": "embeddings", "pairs_files": [p.name for p in args.pairs],
              "init": args.init.name if args.init else None, "train_pairs": n_train, "steps": args.steps,
              "batch": args.batch, "lr": args.lr, "max_query_tokens": args.max_query,
              "max_document_tokens": args.max_doc, "scale": SCALE, "signature_share": SIGNATURE_SHARE,
              "seed": args.seed, "device": _device_name(args.device), "threads": args.threads,
              "train_seconds": round(seconds), "dev": history}
    (args.out / "training.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


def _device_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"


def main() -> None:
    results = Path(__file__).resolve().parent / "results"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, nargs="+",
                        default=[results / "code-pairs.jsonl", results / "prose-pairs.jsonl"],
                        help="jsonl files (or .jsonl.xz / .jsonl.gz) of pairs; each file's dev rows judged apart")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--base", type=Path, help="the base model's directory (default: the packaged one)")
    parser.add_argument("--init", type=Path, help="start from these layers (a code_model.safetensors)")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--max-query", type=int, default=64)
    parser.add_argument("--max-doc", type=int, default=128)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--dev-size", type=int, default=800, help="dev pairs of each source ranked against each other")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=SEED)
    train(parser.parse_args())


if __name__ == "__main__":
    main()
