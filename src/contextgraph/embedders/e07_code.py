"""E7 code: a code-aware sentence vector plus a 16-class lexical histogram of code memories (how much is calls,
strings, comments, operators…).

By default the sentence vector comes from a code encoder of its own (`encoder`: all-MiniLM-L6-v2 fine-tuned
here on docstring/code pairs, embedders.code_model), mean-pooled over every attended token as it was trained;
that is a second forward per text. Without one (Settings.code_model "shared"), it is the shared forward's token
states pooled with extra weight where code carries its meaning — identifier-like words (snake_case, camelCase,
dotted names, names before "(") and, for code, language keywords:

Weights per token: 3 inside an identifier, 2 on a keyword (code and mixed modalities only: in prose "if", "for"
and "in" are just English), 1 otherwise, 0 for [CLS]/[SEP]. The spec's model splits identifiers on
camelCase/snake_case before tokenising; with one shared forward the WordPiece tokenizer already splits on "_"
and "." and into sub-words, so no second pass is run.

    vector = [pooled / ‖pooled‖ ; α·h / ‖h‖] / √(1 + α²),  α = 0.25,  h = histogram (zeros unless code/mixed)

The histogram is a small, style-level signal; α keeps it from outvoting the content (at most ~6% of a cosine)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.base import Backbone, MemoryInput
from contextgraph.embedders.code_lexer import CLASSES, identifier_spans, keyword_spans, token_class_histogram
from contextgraph.embedders.token_spans import span_mask
from contextgraph.fingerprint import SPACES, Kind
from contextgraph.vectors import cosine_scores, l2_normalize, weighted_mean

IDENTIFIER_WEIGHT = 3.0
KEYWORD_WEIGHT = 2.0
HISTOGRAM_SCALE = 0.25
CODE_MODALITIES = ("code", "mixed")


class CodeEmbedder:
    space = 7
    name = SPACES[6].name
    kind: Kind = "dense"

    def __init__(self, backbone: Backbone, encoder: Backbone | None = None) -> None:
        if encoder is not None and encoder.hidden_size != backbone.hidden_size:
            # the stored E7 keeps its dimension whichever encoder made it, so a store never needs a reindex
            raise ValueError(f"the code encoder is {encoder.hidden_size}-d, the shared model "
                             f"{backbone.hidden_size}-d: E7 needs both the same")
        self.encoder = encoder
        self.hidden = backbone.hidden_size
        self.dim = self.hidden + len(CLASSES)
        if encoder is not None:
            int8 = " (int8)" if encoder.runtime.endswith("int8") else ""
            pooled = f"{encoder.model_name}{int8} mean-pooled over ≤ {encoder.max_tokens} tokens"
        else:
            pooled = (f"{backbone.model_name} token states pooled with identifier ×{IDENTIFIER_WEIGHT:g} and keyword "
                      f"×{KEYWORD_WEIGHT:g} weights")
        self.method = f"{pooled} + {len(CLASSES)}-class lexical histogram for code (scale {HISTOGRAM_SCALE})"

    def token_weights(self, item: MemoryInput) -> np.ndarray:
        encoded = item.encoded
        weights = np.where(encoded.special, 0.0, 1.0)
        if item.modality in CODE_MODALITIES:
            weights[span_mask(encoded.offsets, encoded.special, keyword_spans(item.text))] = KEYWORD_WEIGHT
        weights[span_mask(encoded.offsets, encoded.special, identifier_spans(item.text))] = IDENTIFIER_WEIGHT
        return weights

    def embed(self, item: MemoryInput) -> np.ndarray:
        return self.embed_batch([item])[0]

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        """The weighted pools of the whole batch normalised at once; per memory only its lexing (regexes)."""
        if not items:
            return []
        return self.finish(self._pooled(items), [item.text for item in items], [item.modality for item in items])

    def finish(self, pooled: np.ndarray, texts: Sequence[str], modalities: Sequence[str]) -> list[np.ndarray]:
        """E7's vectors from the texts' pooled sentence vectors [n, hidden]: normalised, the histogram appended."""
        histograms = np.zeros((len(texts), len(CLASSES)), dtype=np.float32)
        for row, (text, modality) in enumerate(zip(texts, modalities)):
            if modality in CODE_MODALITIES:
                histograms[row] = token_class_histogram(text)
        histograms = HISTOGRAM_SCALE * l2_normalize(histograms)
        norms = np.sqrt(1.0 + np.einsum("ij,ij->i", histograms, histograms, dtype=np.float64))[:, None]
        return list((np.concatenate([l2_normalize(pooled), histograms], axis=1) / norms).astype(np.float32))

    def embed_texts(self, texts: Sequence[str], modalities: Sequence[str]) -> list[np.ndarray]:
        """E7 straight from texts, without the shared forward: what re-embedding a store's E7 runs (only with a
        code encoder of its own; the shared pooling needs the shared forward's states)."""
        if self.encoder is None:
            raise ValueError("E7 pools the shared forward here: embed whole fingerprints instead")
        return self.finish(self.encoder_pooled(texts), texts, modalities)

    def encoder_pooled(self, texts: Sequence[str]) -> np.ndarray:
        """The code encoder's forward of `texts`, mean-pooled [n, hidden] (the pipeline may run it on a thread
        of its own, beside the shared forward: embedders.side_forward)."""
        assert self.encoder is not None
        pooled = np.empty((len(texts), self.hidden), dtype=np.float32)
        for row, encoded in enumerate(self.encoder.encode(texts)):
            pooled[row] = encoded.states.mean(axis=0)  # every attended token, [CLS]/[SEP] too, as trained
        return pooled

    def _pooled(self, items: Sequence[MemoryInput]) -> np.ndarray:
        if self.encoder is not None:
            return self.encoder_pooled([item.text for item in items])
        pooled = np.empty((len(items), self.hidden), dtype=np.float32)
        for row, item in enumerate(items):
            states = item.encoded.states
            pooled[row] = weighted_mean(states, self.token_weights(item))
            if not pooled[row].any():  # nothing but special tokens (empty text): pool them all
                pooled[row] = states.mean(axis=0)
        return pooled

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return cosine_scores(query, docs)
