"""E3 temporal_periodic: where a moment falls in the day, the week and the year (UTC), as sin/cos harmonics.

Each cycle is a block of harmonics k = 1..K of its phase θ, with amplitudes √wₖ, so one block's dot product is
Σₖ wₖ cos(kΔθ): a smooth periodic kernel in the phase difference. The weights are an equal mixture of Fejér
kernels of several widths (coarse to fine), so similarity falls off gradually with the distance around the cycle
instead of vanishing after the finest resolution (equal weights would give a Dirichlet kernel with ringing
side-lobes). Every harmonic carries weight; nothing is padding.

    cycle         harmonics  Fejér levels L   widths (period / (L+1))
    time of day       96     4, 24, 96        ~4.8 h, ~58 min, ~15 min
    day of week       28     7, 28            ~21 h, ~5.8 h
    day of year      132     12, 52, 132      ~28 d, ~6.9 d, ~2.7 d
    total 256 harmonics × (cos, sin) = 512 dimensions.

Blocks are scaled so the whole vector has unit norm and the cosine is the mean of the three block kernels."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from contextgraph.embedders.axes import Axis, tabulated
from contextgraph.embedders.base import MemoryInput
from contextgraph.fingerprint import SPACES, Kind
from contextgraph.vectors import cosine_scores, sinusoid_features, sinusoid_phases

DAY_S = 86_400.0
# (name, harmonics, Fejér levels)
CYCLES: tuple[tuple[str, int, tuple[int, ...]], ...] = (
    ("time_of_day", 96, (4, 24, 96)),
    ("day_of_week", 28, (7, 28)),
    ("day_of_year", 132, (12, 52, 132)),
)


def harmonic_weights(harmonics: int, levels: tuple[int, ...]) -> np.ndarray:
    """wₖ for k = 1..harmonics, summing to 1: the equal mixture of Fejér kernels (1 − k/(L+1))₊, each normalised
    to total weight 1 so a fine level does not drown the coarse ones."""
    k = np.arange(1, harmonics + 1, dtype=np.float64)
    mixture = np.zeros(harmonics)
    for level in levels:
        fejer = np.clip(1.0 - k / (level + 1), 0.0, None)
        mixture += fejer / fejer.sum()
    return mixture / mixture.sum()


def cycle_phases(timestamp: float) -> tuple[float, float, float]:
    """(time of day, day of week from Monday, day of year) as angles in [0, 2π), all in UTC."""
    t = float(timestamp)
    time_of_day = (t % DAY_S) / DAY_S
    day_of_week = ((t / DAY_S + 3.0) % 7.0) / 7.0  # 1970-01-01 was a Thursday: +3 makes Monday 0
    moment = datetime.fromtimestamp(t, tz=UTC)
    year_start = datetime(moment.year, 1, 1, tzinfo=UTC).timestamp()
    year_end = datetime(moment.year + 1, 1, 1, tzinfo=UTC).timestamp()
    day_of_year = (t - year_start) / (year_end - year_start)  # leap years are longer, not wrapped early
    return tuple(2.0 * np.pi * x for x in (time_of_day, day_of_week, day_of_year))  # type: ignore[return-value]


def block_slices() -> dict[str, slice]:
    """Where each cycle's block sits in the vector."""
    out, start = {}, 0
    for name, harmonics, _ in CYCLES:
        out[name] = slice(start, start + 2 * harmonics)
        start += 2 * harmonics
    return out


_ORDERS = [np.arange(1, h + 1, dtype=np.float64) for _, h, _ in CYCLES]
_AMPLITUDES = [np.sqrt(harmonic_weights(h, lv) / len(CYCLES)) for _, h, lv in CYCLES]


def encode_phases(phases: np.ndarray) -> np.ndarray:
    """float32 [n, dim]: the E3 vectors of the cycles' phases [n, 3] (the embedder's own; the timeline index
    re-scores its pools on them, made from the phases decode_phases reads back, instead of reading the stored
    vectors)."""
    theta = np.asarray(phases, dtype=np.float64).reshape(-1, len(CYCLES))
    return np.concatenate([sinusoid_features(theta[:, [c]] * orders, amplitude)
                           for c, (orders, amplitude) in enumerate(zip(_ORDERS, _AMPLITUDES))], axis=1)


def decode_phases(vectors: np.ndarray) -> np.ndarray:
    """float64 [n, 3]: each cycle's phase θ in [0, 2π) read back from E3 vectors ([n, dim] or [dim]): the angle of
    its first harmonic (k = 1, whose phase is θ itself). The timeline index keeps these instead of the vectors."""
    v = np.atleast_2d(np.asarray(vectors))
    return np.stack([sinusoid_phases(v[:, block][:, :2])[:, 0] for block in block_slices().values()],
                    axis=1) % (2.0 * np.pi)


_TABLE_STEPS = 4096  # kernel samples over a half cycle: ~10 s of a day apart, its finest harmonic's period 15 min


def _cycle_axis(cycle: int) -> Axis:
    """Cycle `cycle`'s share of the cosine as a function of the phase gap, Σₖ wₖ cos(kΔθ) / cycles, tabulated."""
    _, harmonics, levels = CYCLES[cycle]
    delta = np.linspace(0.0, np.pi, _TABLE_STEPS + 1)
    # Σₖ wₖ cos(kΔ) = Re Σₖ wₖ zᵏ with z = e^{iΔ}: Horner's rule, ~1 ms; the 4097 × 256 cosines took ~25 ms of every
    # process's start (the same table to 5e-16)
    z, total = np.exp(1j * delta), np.zeros(len(delta), dtype=np.complex128)
    for weight in harmonic_weights(harmonics, levels)[::-1]:  # wₖ from k = K down to 1
        total = (total + weight) * z
    values = total.real / len(CYCLES)
    kernel, bound = tabulated(values, np.pi)
    return Axis(2.0 * np.pi, kernel, bound)


# the cosine is the sum of the three cycles' shares: closeness from decode_phases equals it to ~1e-3
AXES = tuple(_cycle_axis(c) for c in range(len(CYCLES)))


class TemporalPeriodicEmbedder:
    space = 3
    name = SPACES[2].name
    kind: Kind = "dense"
    dim = 2 * sum(h for _, h, _ in CYCLES)
    method = (
        "sin/cos harmonics of time of day (96), day of week (28), day of year (132), UTC, "
        "Fejér-mixture weighted, unit norm"
    )

    def embed_time(self, timestamp: float) -> np.ndarray:
        return encode_phases(np.array([cycle_phases(timestamp)]))[0]

    def embed_batch(self, items: Sequence[MemoryInput]) -> list[np.ndarray]:
        return [self.embed_time(item.timestamp) for item in items]

    def similarity(self, query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
        return cosine_scores(query, docs)
