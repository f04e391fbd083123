"""The ContextGraphError tree. Each class names its entry in the constitution's error registry;
the dispatcher turns the name into the numeric code and the recovery hint. Imports nothing internal."""

from __future__ import annotations

from typing import Any


class ContextGraphError(Exception):
    """A failure a client can act on: a registry code name, a model-readable message and structured data."""

    code_name = "INTERNAL_ERROR"

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidParams(ContextGraphError):
    code_name = "INVALID_PARAMS"


class MissingRationale(ContextGraphError):
    code_name = "MISSING_RATIONALE"


class ToolNotFound(ContextGraphError):
    code_name = "TOOL_NOT_FOUND"


class NodeNotFound(ContextGraphError):
    code_name = "NODE_NOT_FOUND"


class StorageError(ContextGraphError):
    code_name = "STORAGE_ERROR"


class EmbeddingError(ContextGraphError):
    code_name = "EMBEDDING_ERROR"


class InvalidFingerprint(ContextGraphError):
    code_name = "INVALID_FINGERPRINT"


class DimensionMismatch(ContextGraphError):
    code_name = "DIMENSION_MISMATCH"


class PriorsIncompatible(ContextGraphError):
    code_name = "PRIORS_INCOMPATIBLE"


class RecoveryWindowExpired(ContextGraphError):
    code_name = "RECOVERY_WINDOW_EXPIRED"


class TombstoneExists(ContextGraphError):
    code_name = "TOMBSTONE_EXISTS"


class SemanticCancerDetected(ContextGraphError):
    code_name = "SEMANTIC_CANCER_DETECTED"


class CircularDependency(ContextGraphError):
    code_name = "CIRCULAR_DEPENDENCY"


class DreamError(ContextGraphError):
    code_name = "DREAM_ERROR"


class NeuromodError(ContextGraphError):
    code_name = "NEUROMOD_ERROR"


class ThresholdError(ContextGraphError):
    code_name = "THRESHOLD_ERROR"


# The autonomous services' codes (-32110..-32116, docs/tools.md#errors)
class BootstrapError(ContextGraphError):
    code_name = "BOOTSTRAP_ERROR"


class DriftDetectorError(ContextGraphError):
    code_name = "DRIFT_DETECTOR_ERROR"


class DriftCorrectorError(ContextGraphError):
    code_name = "DRIFT_CORRECTOR_ERROR"


class PruningError(ContextGraphError):
    code_name = "PRUNING_ERROR"


class ConsolidationError(ContextGraphError):
    code_name = "CONSOLIDATION_ERROR"


class SubgoalDiscoveryError(ContextGraphError):
    code_name = "SUBGOAL_DISCOVERY_ERROR"


class StatusAggregationError(ContextGraphError):
    code_name = "STATUS_AGGREGATION_ERROR"


class UtlError(ContextGraphError):
    code_name = "UTL_ERROR"
