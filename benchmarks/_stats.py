"""Shared helpers for the benchmarks: summary statistics and result files.

Not a test module; nothing here is collected by pytest (testpaths = ["tests"])."""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
# CONTEXTGRAPH_BENCH_RESULTS: another folder for the result files (a lent device's $OUT, whose files come back)
RESULTS_DIR = Path(os.environ.get("CONTEXTGRAPH_BENCH_RESULTS") or Path(__file__).resolve().parent / "results")


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (same as numpy's default) over already sorted values; q in [0, 100]."""
    if not sorted_values:
        return math.nan
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return float(sorted_values[lo])
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


def summarize(values: Sequence[float]) -> dict[str, float | int]:
    """n, median, p95, p99, min, max of a sample (units are whatever the caller passed in). p99 of fewer than
    ~100 samples is close to the maximum; read it as such."""
    s = sorted(float(v) for v in values)
    return {
        "n": len(s),
        "median": _percentile(s, 50),
        "p95": _percentile(s, 95),
        "p99": _percentile(s, 99),
        "min": s[0] if s else math.nan,
        "max": s[-1] if s else math.nan,
    }


def git_info() -> dict[str, Any]:
    """The commit measured, and whether src/ or constitution.yaml had uncommitted changes (the code moves fast)."""
    import subprocess

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10,
                                  check=False).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    head = git("rev-parse", "--short", "HEAD").strip() or None
    dirty = git("status", "--porcelain", "--", "src", "constitution.yaml").strip()
    return {"commit": head, "src_dirty": bool(dirty)}


def machine_info() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "nproc": os.cpu_count(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "git": git_info(),
        "loadavg": list(os.getloadavg()),
    }


def _fmt(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if value != value:  # nan
        return "nan"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def format_summary(label: str, stats: dict[str, Any], unit: str, budget: float | None = None,
                   p99: bool = False) -> str:
    line = (
        f"{label:<44} median {_fmt(stats['median']):>8} {unit}  p95 {_fmt(stats['p95']):>8} {unit}  "
        + (f"p99 {_fmt(stats['p99']):>8} {unit}  " if p99 else "")
        + f"min {_fmt(stats['min'])}  max {_fmt(stats['max'])}  (n={stats['n']})"
    )
    if budget is not None:
        verdict = "OK" if stats["p95"] < budget else "OVER"
        line += f"  budget < {_fmt(budget)} {unit}: {verdict}"
    return line


def write_result(name: str, data: dict[str, Any]) -> Path:
    """Write benchmarks/results/<name>.json (with machine info) and print where it went."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    payload = {"benchmark": name, "machine": machine_info(), **data}
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    m = payload["machine"]
    shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    print(f"[{name}] wrote {shown}  "
          f"({m['platform']}, {m['nproc']} CPUs, Python {m['python']}, {m['date']})")
    return path


def time_method(owner: Any, name: str, label: str, times: dict[str, list[float]],
                on_result: Callable[[Any], None] | None = None) -> Callable[[], None]:
    """Wrap owner.name (sync or async) so that each call's milliseconds are appended to times[label], and its
    result handed to `on_result` when given; whichever thread it runs in. Returns what puts the original back."""
    original = getattr(owner, name)
    if inspect.iscoroutinefunction(original):
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                result = await original(*args, **kwargs)
            finally:
                times.setdefault(label, []).append((time.perf_counter() - started) * 1000)
            if on_result is not None:
                on_result(result)
            return result
    else:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                result = original(*args, **kwargs)
            finally:
                times.setdefault(label, []).append((time.perf_counter() - started) * 1000)
            if on_result is not None:
                on_result(result)
            return result
    setattr(owner, name, functools.update_wrapper(wrapper, original))
    return lambda: setattr(owner, name, original)
