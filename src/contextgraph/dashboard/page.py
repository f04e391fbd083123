"""The dashboard page: static/index.html with the first snapshot inside it.

The numbers of the testability contract (data-metric, data-oscillator) are written into the HTML here, so a
script without JavaScript (curl, a printer) reads the same values the page shows; the page's script then draws
every panel from the embedded snapshot without a request, and (live) keeps them current from the stream.
"""

from __future__ import annotations

import html
import json
from functools import cache
from importlib import resources
from typing import Any

from contextgraph import __version__
from contextgraph.fingerprint import SPACES

METRICS = (  # (data-metric, label)
    ("memory_count", "Memories"),
    ("edge_count", "Edges"),
    ("entropy", "Entropy"),
    ("coherence", "Coherence"),
    ("learning_score", "Learning score"),
    ("kuramoto_r", "Kuramoto r"),
)


@cache
def _template() -> str:
    return resources.files("contextgraph.dashboard").joinpath("static", "index.html").read_text(encoding="utf-8")


def number_text(value: Any) -> str:
    """A metric as text: integers without a decimal point, other numbers as the tools return them."""
    if isinstance(value, bool) or value is None:
        return "–"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e15):
        return str(int(value))
    return repr(float(value))


def _value(name: str, value: Any, attr: str = "data-metric") -> str:
    text = html.escape(number_text(value))
    return f'<span class="value" {attr}="{html.escape(name)}" data-value="{text}">{text}</span>'


def metric_cards(metrics: dict[str, Any]) -> str:
    return "\n".join(f'<div class="card"><span class="label">{label}</span>{_value(name, metrics.get(name))}</div>'
                     for name, label in METRICS)


def oscillator_items(phases: list[float]) -> str:
    return "\n".join(
        f'<li><span class="osc-name">E{space.id} {space.name}</span>'
        f'{_value(str(space.id), phases[i] if i < len(phases) else None, "data-oscillator")}</li>'
        for i, space in enumerate(SPACES))


def embed_json(data: Any) -> str:
    """JSON that cannot end its <script> element early (</script>, <!--) whatever the memories contain."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "&", "\\u0026")


def _refusal(part: dict[str, Any]) -> str:
    error = part.get("error")
    if not error:
        return ""
    message = html.escape(f"{error.get('message')} (code {error.get('code')})")
    return f'<p class="error" data-field="now-error">{message}</p>'


def render_page(snapshot: dict[str, Any], *, live: bool) -> str:
    metrics = snapshot["now"].get("metrics") or {"oscillators": []}  # none when the status call was refused
    spaces = [{"id": s.id, "name": s.name} for s in SPACES]
    return (_template()
            .replace("{{live}}", "1" if live else "0")
            .replace("{{version}}", html.escape(__version__))
            .replace("{{metrics}}", metric_cards(metrics) + _refusal(snapshot["now"]))
            .replace("{{oscillators}}", oscillator_items(metrics["oscillators"]))
            .replace("{{snapshot}}", embed_json({**snapshot, "spaces": spaces, "live": live})))
