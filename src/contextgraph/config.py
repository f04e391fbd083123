"""Settings: built once from the environment (and CLI flags), then passed down. The only reader of os.environ
for ContextGraph's own options."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from contextgraph.constitution import constitution

_LOG_LEVELS = ("debug", "info", "warn", "error")


class SettingsError(ValueError):
    """A setting from the environment or a flag has no valid meaning."""


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path
    profile: str
    log_level: str
    transport: str = "stdio"

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
        )
        settings = replace(settings, **{k: v for k, v in overrides.items() if v is not None})
        settings.validate()
        return settings

    def validate(self) -> None:
        profiles = constitution().get("server.profiles")
        if self.profile not in profiles:
            raise SettingsError(f"unknown tool profile {self.profile!r}; choose one of {sorted(profiles)}")
        if self.log_level not in _LOG_LEVELS:
            raise SettingsError(f"unknown log level {self.log_level!r}; choose one of {list(_LOG_LEVELS)}")
