"""ATC tools (docs/engine.md): the adaptive thresholds, their calibration quality, and a recalibration on demand. Thin
handlers: the state is services.atc's ThresholdService, the levels and reports services.atc_levels, the math
calibration/."""

from __future__ import annotations

from typing import Any, Literal

import anyio
from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.errors import InvalidParams
from contextgraph.services.engine import atc_levels
from contextgraph.tools.context import ToolContext
from contextgraph.tools.curation import Domain
from contextgraph.tools.spec import Args, ToolSpec

_A = constitution()["atc"]
ThresholdName = Literal["theta_warn", "theta_dup", "theta_kur", "johari"]
Timeframe = Literal["1h", "24h", "7d", "30d"]


class StatusArgs(Args):
    domain: Domain = Field("General", description="Domain whose thresholds to show.")
    embedder_id: int | None = Field(None, ge=1, le=13, description="Embedding space 1-13: which thresholds "
                                                                    "compare a score computed in it.")


async def get_threshold_status(ctx: ToolContext, args: StatusArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()  # the saved thresholds load with the store
    thresholds = ctx.services.thresholds
    thresholds.expire()
    return atc_levels.status(thresholds, args.domain, args.embedder_id)


class MetricsArgs(Args):
    timeframe: Timeframe = Field("24h", description="Only outcomes observed within this window.")


async def get_calibration_metrics(ctx: ToolContext, args: MetricsArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()
    thresholds = ctx.services.thresholds
    thresholds.expire()
    return atc_levels.metrics(thresholds, args.timeframe)


class RecalibrateArgs(Args):
    level: int = Field(ge=1, le=4, description="1 EWMA drift, 2 temperature scaling, 3 Thompson sampling, "
                                               "4 Bayesian optimisation.")
    domain: Domain = Field("General", description="Domain to recalibrate.")
    threshold: ThresholdName | None = Field(None, description="Only this threshold (default: every one with "
                                                              "enough recorded outcomes).")
    start: float | None = Field(None, allow_inf_nan=False, description="Start from this value of `threshold` "
                                "(within its bounds, see get_threshold_status); default: its current value.")


async def trigger_recalibration(ctx: ToolContext, args: RecalibrateArgs) -> dict[str, Any]:
    if args.start is not None and args.threshold is None:
        raise InvalidParams("`start` sets one threshold's starting value: name it in `threshold` "
                            f"(one of {', '.join(_A['thresholds'])}).", field="threshold",
                            allowed=list(_A["thresholds"]))
    storage = await ctx.services.storage.ready()
    thresholds = ctx.services.thresholds
    thresholds.expire()
    result = await anyio.to_thread.run_sync(atc_levels.recalibrate, thresholds, args.level, args.domain,
                                            args.threshold, args.start)
    await storage.save_engine()  # durable when the call returns
    return result


TOOLS = (
    ToolSpec(
        "get_threshold_status",
        "atc",
        "Get the adaptive thresholds of a domain (theta_warn, theta_dup, theta_kur, johari): "
        "each one's value with its min/max bounds, temperature, drift, outcome counts, and the latest changes "
        "with their reasons.",
        StatusArgs,
        get_threshold_status,
        keywords=("threshold", "atc", "calibration", "adaptive", "bounds", "drift"),
    ),
    ToolSpec(
        "get_calibration_metrics",
        "atc",
        "Get calibration quality per threshold and domain from the observed (score, outcome) pairs: ECE, MCE, "
        "Brier score, pair counts, decision cost and status (ECE < 0.05 excellent, < 0.10 good).",
        MetricsArgs,
        get_calibration_metrics,
        keywords=("calibration", "ece", "mce", "brier", "metrics", "threshold"),
    ),
    ToolSpec(
        "trigger_recalibration",
        "atc",
        "Recalibrate a domain's thresholds now at one ATC level (1 EWMA drift, 2 temperature scaling, 3 Thompson "
        "sampling, 4 Bayesian optimisation) from the recorded outcomes; reports before/after ECE and thresholds.",
        RecalibrateArgs,
        trigger_recalibration,
        keywords=("recalibrate", "calibration", "threshold", "temperature", "thompson", "bayesian"),
    ),
)
