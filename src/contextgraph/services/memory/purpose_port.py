"""What the memory core needs of purpose, as Protocols: the purpose layer (services.purpose.teleology) sits above
memory and implements them, so that memory never imports upward. Stage 4 of retrieval reads a star's alignments;
the store path asks for each new memory's purpose vector and what its record carries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from contextgraph.embedders.base import Embedder
from contextgraph.fingerprint import Fingerprint
from contextgraph.teleology.goals import GoalSet


class StarAlignment(Protocol):
    """The current north star as stage 4 sees it."""

    @property
    def id(self) -> str: ...

    @property
    def threshold(self) -> float: ...

    @property
    def goals(self) -> GoalSet | None: ...

    def alignments_of_seqs(self, by_space: dict[int, Embedder], seqs: Sequence[int],
                           docs: Sequence[Fingerprint]) -> np.ndarray: ...


class PurposeSource(Protocol):
    """The north star's owner: purpose vectors for new memories and the star that stage 4 ranks by."""

    def use_embedders(self, embedders: Sequence[Embedder]) -> dict[int, Embedder]: ...

    def refresh(self) -> None: ...

    def star_view(self) -> StarAlignment | None: ...

    def purpose_of(self, fingerprint: Fingerprint) -> tuple[str, np.ndarray, float] | None: ...

    def extra_for(self, found: tuple[str, np.ndarray, float] | None) -> dict[str, Any]: ...

    def record_extra(self, fingerprint: Fingerprint) -> dict[str, Any]: ...
