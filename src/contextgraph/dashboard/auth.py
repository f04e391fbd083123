"""How a browser presents the server's bearer token to the dashboard.

A browser cannot add `Authorization: Bearer …` to a page it navigates to, so the dashboard also accepts:

* `GET /dashboard?token=TOKEN` once: the page answers with a redirect to itself without the token in the URL
  (it would otherwise stay in the history and be sent on as a Referer) and sets a session cookie;
* that cookie on every /dashboard request afterwards: HttpOnly (page scripts cannot read it), SameSite=Strict
  (no other site can make the browser send it), Path=/dashboard (the MCP endpoints never accept it).

The cookie holds an HMAC of the token, not the token: a leaked cookie opens the dashboard only, and changing the
token revokes every cookie. The Authorization header keeps working everywhere, the dashboard included.
"""

from __future__ import annotations

import hashlib
import hmac
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.types import Scope

from contextgraph.security.tokens import token_matches

COOKIE = "contextgraph_dashboard"
PREFIX = "/dashboard"
_PURPOSE = b"contextgraph dashboard session v1"


def is_dashboard_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


class DashboardAuth:
    def __init__(self, token: str, max_age_seconds: int) -> None:
        self.token = token
        self.session = hmac.new(token.encode(), _PURPOSE, hashlib.sha256).hexdigest()
        self.max_age = int(max_age_seconds)

    def set_cookie(self) -> str:
        return f"{COOKIE}={self.session}; Path={PREFIX}; Max-Age={self.max_age}; HttpOnly; SameSite=Strict"

    def query_token_valid(self, scope: Scope) -> bool:
        """`?token=` on the page itself (never on the API, whose URLs scripts log)."""
        if scope.get("path") != PREFIX:
            return False
        values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])
        return len(values) == 1 and token_matches(values[0], self.token)

    def cookie_valid(self, headers: dict[str, str]) -> bool:
        raw = headers.get("cookie")
        if not raw:
            return False
        cookie = SimpleCookie()
        try:
            cookie.load(raw)
        except Exception:  # a malformed Cookie header is simply no credential
            return False
        morsel = cookie.get(COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), self.session.encode())

    @staticmethod
    def refusal(scope: Scope) -> str | None:
        """What a refused dashboard request is told (a person at a browser, usually); None elsewhere."""
        if not is_dashboard_path(scope.get("path", "")):
            return None
        return ("Unauthorized: the dashboard needs this server's token. Open /dashboard?token=TOKEN once (it sets "
                "a cookie valid for the dashboard only) or send `Authorization: Bearer TOKEN`.")

    def accepts(self, scope: Scope, headers: dict[str, str]) -> bool:
        """The HTTP guard's second way in, for /dashboard paths only: the session cookie or the page's ?token=."""
        if not is_dashboard_path(scope.get("path", "")):
            return False
        return self.cookie_valid(headers) or self.query_token_valid(scope)
