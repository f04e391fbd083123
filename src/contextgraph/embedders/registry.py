"""The default set of 13 embedders (docs/spaces.md), in space order, all fed by one backbone."""

from __future__ import annotations

from typing import Any

from contextgraph.embedders.base import Backbone, Embedder
from contextgraph.embedders.e01_semantic import SemanticEmbedder
from contextgraph.embedders.e02_temporal_recent import TemporalRecentEmbedder
from contextgraph.embedders.e03_temporal_periodic import TemporalPeriodicEmbedder
from contextgraph.embedders.e04_temporal_positional import TemporalPositionalEmbedder
from contextgraph.embedders.e05_causal import CausalEmbedder
from contextgraph.embedders.e06_sparse import SparseEmbedder
from contextgraph.embedders.e07_code import CodeEmbedder
from contextgraph.embedders.e08_graph import GraphEmbedder
from contextgraph.embedders.e09_hdc import HdcEmbedder
from contextgraph.embedders.e09_hdc_torch import DeviceHdcEmbedder
from contextgraph.embedders.e10_multimodal import MultimodalEmbedder
from contextgraph.embedders.e11_entity import EntityEmbedder
from contextgraph.embedders.e12_late_interaction import LateInteractionEmbedder
from contextgraph.embedders.e13_splade import SpladeEmbedder


def default_embedders(backbone: Backbone, code_encoder: Backbone | None = None) -> tuple[Embedder[Any], ...]:
    """E1..E13 with this project's offline defaults; index i holds space i + 1. Embedders with a device path (E9)
    compute on the backbone's GPU when it has one. E7 runs `code_encoder` when given (embedders.code_model),
    else pools the shared forward."""
    return (
        SemanticEmbedder(backbone),
        TemporalRecentEmbedder(),
        TemporalPeriodicEmbedder(),
        TemporalPositionalEmbedder(),
        CausalEmbedder(backbone),
        SparseEmbedder(),
        CodeEmbedder(backbone, code_encoder),
        GraphEmbedder(backbone),
        _hdc(backbone),
        MultimodalEmbedder(backbone),
        EntityEmbedder(backbone),
        LateInteractionEmbedder(backbone),
        SpladeEmbedder(backbone),
    )


def _hdc(backbone: Backbone) -> Embedder[Any]:
    """E9 on the backbone's GPU when it has one (the same bits, computed in torch), else in numpy."""
    device = str(getattr(backbone, "device", "cpu"))
    return DeviceHdcEmbedder(device) if device.startswith("cuda") else HdcEmbedder()
