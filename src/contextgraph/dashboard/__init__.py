"""The live dashboard, served by the HTTP transport at /dashboard: the engine now, its history, the
memories and the curation work, in a page with no build step and no CDN (static/, vanilla JS and SVG).

Every JSON endpoint under /dashboard/api/ runs the same tools as MCP through the one dispatcher (validation,
error codes, rationale rule, pulse, the call log); the page draws what they return. Auth and Origin rules are
the transport's (transports/security.py); auth.py adds the browser's way to present the token once.
"""
