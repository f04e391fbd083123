"""Meta-UTL tools: the λ weights the engine learns from its own prediction errors (services.meta_learning)."""

from __future__ import annotations

from typing import Any, Literal

import anyio
from pydantic import Field

from contextgraph.constitution import constitution
from contextgraph.tools.context import ToolContext
from contextgraph.tools.spec import Args, ToolSpec

_M = constitution()["meta_utl"]
_LO, _HI = float(_M["lambda_bounds"]["min"]), float(_M["lambda_bounds"]["max"])
_PAGE = _M["log_page"]


class StatusArgs(Args):
    pass


async def get_meta_learning_status(ctx: ToolContext, args: StatusArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()  # the saved λ and window load with the store
    return ctx.services.meta_learning.status()


class RecalibrateArgs(Args):
    lambda_s: float | None = Field(None, ge=_LO, le=_HI, allow_inf_nan=False,
                                   description=f"Start the search from this λ_S in [{_LO}, {_HI}] (λ_C = 1 − λ_S); "
                                               "default: the current one.")


async def trigger_lambda_recalibration(ctx: ToolContext, args: RecalibrateArgs) -> dict[str, Any]:
    storage = await ctx.services.storage.ready()
    meta = ctx.services.meta_learning
    result = await anyio.to_thread.run_sync(lambda: meta.search("manual", "trigger_lambda_recalibration",
                                                                args.lambda_s))
    await storage.save_engine()  # durable when the call returns
    return result


class LogArgs(Args):
    offset: int = Field(0, ge=0, description="Entries to skip, newest first.")
    limit: int = Field(int(_PAGE["default"]), ge=1, le=int(_PAGE["max"]), description="Entries to return.")
    kind: Literal["error", "escalation", "manual"] | None = Field(
        None, description="Only adjustments of this kind: error (a prediction error moved λ), escalation (the "
                          "Bayesian search after low accuracy), manual (trigger_lambda_recalibration).")


async def get_meta_learning_log(ctx: ToolContext, args: LogArgs) -> dict[str, Any]:
    await ctx.services.storage.ready()
    return ctx.services.meta_learning.page(args.offset, args.limit, args.kind)


TOOLS = (
    ToolSpec(
        "get_meta_learning_status",
        "meta_utl",
        "Get the learned UTL weights lambda_s and lambda_c (lambda_s + lambda_c = 1), the lifecycle prior they "
        "started from, the prediction accuracy of the learning score, the learning rate alpha and its source, and "
        "the escalation state.",
        StatusArgs,
        get_meta_learning_status,
        keywords=("meta", "lambda", "learning rate", "accuracy", "prediction", "utl"),
    ),
    ToolSpec(
        "trigger_lambda_recalibration",
        "meta_utl",
        "Run the Bayesian search for lambda_s now on the recent operations' learning scores and predictions; "
        "reports lambda and accuracy before and after.",
        RecalibrateArgs,
        trigger_lambda_recalibration,
        keywords=("lambda", "recalibrate", "bayesian", "meta", "utl", "weights"),
    ),
    ToolSpec(
        "get_meta_learning_log",
        "meta_utl",
        "Page through the lambda adjustments, newest first: each with its reason, the prediction error or search "
        "result behind it, and lambda before and after.",
        LogArgs,
        get_meta_learning_log,
        keywords=("meta", "lambda", "log", "history", "adjustments"),
    ),
)
