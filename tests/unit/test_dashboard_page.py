"""The dashboard's pure parts: the page's embedded JSON cannot end its <script> element (whatever a memory
contains), the contract hooks' number text, the metrics taken from the tools' payloads, and the browser
credential rules of dashboard/auth.py."""

import html
import json
import re

from hypothesis import given
from hypothesis import strategies as st

from contextgraph.dashboard.api import metrics
from contextgraph.dashboard.auth import COOKIE, DashboardAuth, is_dashboard_path
from contextgraph.dashboard.page import embed_json, metric_cards, number_text, oscillator_items, render_page

TOKEN = "a-token-of-some-length"


@given(st.recursive(st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20))
def test_embedded_json_round_trips_and_never_contains_markup(value):
    text = embed_json(value)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == value


def test_a_memory_cannot_close_the_script_element():
    hostile = '</script><script>alert(1)</script><!-- <img src=x onerror=alert(2)>'
    page = render_page(_snapshot(content=hostile), live=False)
    script = re.search(r'<script type="application/json" id="snapshot">(.*?)</script>', page, re.S)
    assert script is not None
    assert json.loads(script.group(1))["recent"]["memories"][0]["content"] == hostile
    assert "<img" not in page and "alert(1)</script>" not in page


def test_number_text():
    assert number_text(4) == "4" and number_text(4.0) == "4"
    assert number_text(0.7239) == "0.7239" and number_text(5.810542) == "5.810542"
    assert number_text(None) == "–" and number_text(True) == "–"


def test_metric_and_oscillator_hooks_carry_the_number_as_text_and_value():
    cards = metric_cards({"memory_count": 3, "entropy": 0.5, "edge_count": 0, "coherence": 0.25,
                          "learning_score": 0.5, "kuramoto_r": 0.123456})
    for name, value in (("memory_count", "3"), ("entropy", "0.5"), ("kuramoto_r", "0.123456"), ("edge_count", "0")):
        assert f'data-metric="{name}" data-value="{value}">{value}</span>' in cards
    items = oscillator_items([0.1 * i for i in range(13)])
    assert len(re.findall(r'data-oscillator="(\d+)"', items)) == 13
    assert 'data-oscillator="13" data-value="1.2000000000000002">1.2000000000000002</span>' in items


def test_metrics_are_read_from_the_tools_payloads():
    memetic = {"fingerprintCount": 7, "layers": {"memory": {"edges": 11}},
               "utl": {"entropy": 0.4, "coherence": 0.6, "learningScore": 0.55}}
    sync = {"r": 0.91, "phases": [float(i) for i in range(13)]}
    assert metrics(memetic, sync) == {"memory_count": 7, "edge_count": 11, "kuramoto_r": 0.91, "entropy": 0.4,
                                      "coherence": 0.6, "learning_score": 0.55,
                                      "oscillators": [float(i) for i in range(13)]}


def test_cookie_is_strict_httponly_scoped_and_not_the_token():
    auth = DashboardAuth(TOKEN, 3600)
    cookie = auth.set_cookie()
    assert cookie.startswith(f"{COOKIE}={auth.session};")
    for part in ("Path=/dashboard", "Max-Age=3600", "HttpOnly", "SameSite=Strict"):
        assert part in cookie
    assert TOKEN not in cookie
    assert DashboardAuth("another token", 3600).session != auth.session


def _scope(path, query=b""):
    return {"type": "http", "path": path, "query_string": query}


def test_what_the_guard_accepts_besides_the_bearer_token():
    auth = DashboardAuth(TOKEN, 3600)
    good = {"cookie": f"other=1; {COOKIE}={auth.session}"}
    assert auth.accepts(_scope("/dashboard/api/now"), good)
    assert auth.accepts(_scope("/dashboard"), good)
    assert not auth.accepts(_scope("/mcp"), good)  # the cookie is for the dashboard only
    assert not auth.accepts(_scope("/dashboardx"), good)
    assert not auth.accepts(_scope("/dashboard/api/now"), {"cookie": f"{COOKIE}={'0' * 64}"})
    assert not auth.accepts(_scope("/dashboard/api/now"), {"cookie": "\x00not a cookie;;=="})
    query = f"live=0&token={TOKEN}".encode()
    assert auth.accepts(_scope("/dashboard", query), {})
    assert not auth.accepts(_scope("/dashboard/api/now", query), {})  # never on the API
    assert not auth.accepts(_scope("/dashboard", b"token=wrong"), {})
    assert not auth.accepts(_scope("/dashboard", f"token={TOKEN}&token={TOKEN}".encode()), {})


def test_dashboard_paths():
    assert is_dashboard_path("/dashboard") and is_dashboard_path("/dashboard/static/dashboard.js")
    assert not is_dashboard_path("/dashboards") and not is_dashboard_path("/mcp")


def _snapshot(content: str) -> dict:
    phases = [0.5] * 13
    return {"now": {"metrics": {"memory_count": 1, "edge_count": 0, "entropy": 0.5, "coherence": 0.5,
                                "learning_score": 0.5, "kuramoto_r": 0.5, "oscillators": phases}},
            "recent": {"memories": [{"id": "a" * 32, "content": content}]}, "history": {}}


def test_a_refused_status_still_renders_a_page():
    page = render_page({"now": {"error": {"code": -32603, "message": "store <unavailable>"}}, "history": {}},
                       live=False)
    assert 'data-field="now-error"' in page and html.escape("store <unavailable>") in page
