"""What a local sentence-transformers (or plain Hugging Face) model directory says about itself: where the
transformer lives, its dimensions, its pooling, its sequence limit. Read from the directory's JSON files only,
so any such model works without naming it in code."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

# The weights formats the export can read, in order of preference.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str  # a human name for get_graph_manifest, e.g. "all-MiniLM-L6-v2"
    model_dir: Path  # the directory the caller gave
    transformer_dir: Path  # where config.json, the weights and tokenizer.json live (may be a sub-folder)
    model_type: str  # config.json model_type, e.g. "bert"
    hidden_size: int
    num_heads: int
    vocab_size: int
    max_positions: int  # max_position_embeddings: the longest input the model can take at all
    max_seq_length: int | None  # sentence-transformers' own truncation, when it declares one
    pooling: str  # "mean" or "cls": how sentence-transformers pools this model

    @property
    def config_path(self) -> Path:
        return self.transformer_dir / "config.json"

    @property
    def tokenizer_path(self) -> Path:
        return self.transformer_dir / "tokenizer.json"

    @property
    def weights_path(self) -> Path:
        for name in WEIGHT_FILES:
            if (self.transformer_dir / name).is_file():
                return self.transformer_dir / name
        raise FileNotFoundError(f"no weights ({' or '.join(WEIGHT_FILES)}) in {self.transformer_dir}")

    @classmethod
    def read(cls, model_dir: Path) -> ModelInfo:
        model_dir = Path(model_dir).resolve()
        modules: list[dict] = _read_json(model_dir / "modules.json", default=[]) or []
        transformer_dir = model_dir / (_module_path(modules, "Transformer", default="") or "")
        config: dict | None = _read_json(transformer_dir / "config.json")
        if config is None:
            raise FileNotFoundError(f"{transformer_dir / 'config.json'} not found: not a model directory")
        st_config: dict = (_read_json(transformer_dir / "sentence_bert_config.json", default=None)
                           or _read_json(model_dir / "sentence_bert_config.json", default={}) or {})
        pooling_dir = _module_path(modules, "Pooling", default=None)
        pooling_config: dict = {}
        if pooling_dir:
            pooling_config = _read_json(model_dir / pooling_dir / "config.json", default={}) or {}
        return cls(
            name=_model_name(model_dir),
            model_dir=model_dir,
            transformer_dir=transformer_dir,
            model_type=str(config.get("model_type", "bert")),
            hidden_size=int(config.get("hidden_size") or config["dim"]),
            num_heads=int(config.get("num_attention_heads") or config.get("n_heads") or 12),
            vocab_size=int(config["vocab_size"]),
            max_positions=int(config.get("max_position_embeddings", 512)),
            max_seq_length=st_config.get("max_seq_length"),
            # sentence-transformers' default pooling is mean; CLS when the model's pooling config says so.
            pooling="cls" if pooling_config.get("pooling_mode_cls_token") else "mean",
        )


def _read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


def _module_path(modules: list[dict], kind: str, default: str | None) -> str | None:
    for module in modules:
        if str(module.get("type", "")).endswith(f".{kind}"):
            return module.get("path", "")
    return default


def _model_name(model_dir: Path) -> str:
    """The model card's title ("# all-MiniLM-L6-v2") when it has one, else the directory's name. Packaged
    models live in a directory called just "model", which would say nothing."""
    readme = model_dir / "README.md"
    if readme.is_file():
        match = re.search(r"^# (\S.*)$", readme.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
        if match:
            return match.group(1).strip()
    return model_dir.name
