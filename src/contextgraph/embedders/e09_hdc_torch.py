"""E9's hypervectors computed in torch, for a pipeline whose backbone runs on a CUDA device: the same folded bits
as `fold(hypervectors(texts))` in e09_hdc, bit for bit (integer XOR, sums and comparisons only), for the whole
batch at once on the device.

Why: on an H100's host E9 was the largest embedder, ~0.9 ms a memory of 100-200 tokens (one gather-XOR-unpack-sum
per run of trigrams per text, holding the GIL), 3.7 s of the 11 s a 4,096-memory batch took; on the device (0.4 s)
every trigram of the batch is bound, unpacked and added to its text's counts in a few large steps.

The letter table is e09_hdc's (`_letter`, made on the host and cached), uploaded once per batch ([U, 3, 1,250]
bytes for U distinct characters); only the folded bits ([B, 1,024] bools) come back. torch is imported on the
first batch, never with this module: the registry imports it on every machine, and importing torch costs seconds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextgraph.embedders.e09_hdc import (
    _FOLD_ROWS,
    _FOLD_VOTES,
    _TIE_FOLDED,
    _TIE_FULL,
    FOLDED_BITS,
    HYPER_BITS,
    N_GRAM,
    HdcEmbedder,
    _letter,
    _normalised,
)

CHUNK = 1 << 15  # trigrams per step: [CHUNK, 10,000] unpacked bits, ~1.6 GB of device memory as int32 at most


def folded_bits(texts: Sequence[str], device: str, chunk: int = CHUNK) -> np.ndarray:
    """bool [len(texts), FOLDED_BITS]: each text's bundled trigram code folded to 1,024 bits, computed on
    `device` (any torch device; "cpu" gives the same answer, which the tests use)."""
    import torch

    dev = torch.device(device)
    chars = [_normalised(t) for t in texts]
    lengths = np.array([len(c) for c in chars], dtype=np.int64)
    n = np.maximum(lengths - N_GRAM + 1, 0)  # trigrams per text
    counts = torch.zeros((len(texts), HYPER_BITS), dtype=torch.int32, device=dev)
    if n.any():
        points = np.frombuffer("".join(chars).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        alphabet, codes = np.unique(points, return_inverse=True)
        table = torch.from_numpy(np.stack([_letter(chr(int(c))) for c in alphabet])).to(dev)  # [U, 3, B/8]
        rho2, rho1, rho0 = table[:, 2], table[:, 1], table[:, 0]
        # trigram j of text t starts at character starts[t] + j of the concatenation; owner says which text
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        owner = np.repeat(np.arange(len(texts)), n)
        within = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        first = torch.from_numpy(starts[owner] + within).to(dev)
        owners = torch.from_numpy(owner).to(dev)
        code = torch.from_numpy(codes.reshape(-1).astype(np.int64)).to(dev)
        shifts = torch.arange(7, -1, -1, dtype=torch.uint8, device=dev)  # np.unpackbits' order: high bit first
        for lo in range(0, len(first), chunk):
            at = first[lo : lo + chunk]
            bound = rho2[code[at]] ^ rho1[code[at + 1]] ^ rho0[code[at + 2]]  # [m, B/8] uint8
            bits = (bound.unsqueeze(-1) >> shifts) & 1  # [m, B/8, 8]
            counts.index_add_(0, owners[lo : lo + chunk], bits.reshape(len(at), HYPER_BITS).to(torch.int32))
    votes = torch.from_numpy(n).to(dev)[:, None]
    full = _majority(counts, votes, torch.from_numpy(_TIE_FULL).to(dev))
    padded = torch.zeros((len(texts), _FOLD_ROWS * FOLDED_BITS), dtype=torch.int32, device=dev)
    padded[:, :HYPER_BITS] = full.to(torch.int32)
    folded_counts = padded.reshape(len(texts), _FOLD_ROWS, FOLDED_BITS).sum(dim=1)
    folded = _majority(folded_counts, torch.from_numpy(_FOLD_VOTES).to(dev), torch.from_numpy(_TIE_FOLDED).to(dev))
    return folded.cpu().numpy()


class DeviceHdcEmbedder(HdcEmbedder):
    """E9 computed on `device` (the registry's choice when the backbone runs on a GPU); the same vectors. A single
    text (a store's, a query) stays on the host: its ~20 small device steps cost more than the numpy path (H100,
    one ~100-token memory: 1.43 ms on the device, 1.00 on its host; a 12-token query 1.22 ms on the device)."""

    def __init__(self, device: str) -> None:
        self.device = device

    def embed_texts(self, texts: Sequence[str]) -> list[np.ndarray]:
        if len(texts) <= 1:
            return super().embed_texts(texts)
        return list(np.packbits(folded_bits(texts, self.device), axis=1))


def _majority(counts, votes, tie):  # torch tensors, as e09_hdc._majority on numpy arrays
    import torch

    twice = 2 * counts.to(torch.int64)
    return torch.where(twice == votes, tie, twice > votes)
