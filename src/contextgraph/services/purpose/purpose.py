"""The purpose services (docs/engine.md#purpose-and-the-north-star) as one bundle for the container: the north star and
purpose vectors, profiles/synergy/fusion, teleological search, and the autonomous services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from contextgraph.clock import Clock
from contextgraph.constitution import Constitution
from contextgraph.services.engine.cognition import CognitiveState
from contextgraph.services.memory.curation import CurationService
from contextgraph.services.purpose.autonomous import AutonomousService
from contextgraph.services.purpose.autonomous_curation import AutonomousCuration
from contextgraph.services.purpose.goal_refresh import GoalRefresh
from contextgraph.services.purpose.teleology import TeleologyService
from contextgraph.services.purpose.teleology_profiles import TeleologyProfiles
from contextgraph.services.purpose.teleology_search import TeleologySearch
from contextgraph.services.runtime.perception import Perception
from contextgraph.services.runtime.store_handle import StoreHandle


@dataclass(frozen=True, slots=True)
class PurposeServices:
    teleology: TeleologyService  # the north star, purpose vectors, stage 4's view
    profiles: TeleologyProfiles
    search: TeleologySearch
    autonomous: AutonomousService  # bootstrap, drift, correction
    hygiene: AutonomousCuration  # pruning candidates, consolidation, sub-goals
    goals: GoalRefresh  # new themes become stage 4's goals (an after-store listener)

    @classmethod
    def build(cls, storage: StoreHandle, cognition: CognitiveState, perception: Perception,
              curation: CurationService, constitution: Constitution, clock: Clock,
              threshold_source: Callable[[], float] | None = None) -> PurposeServices:
        teleology = TeleologyService(storage, cognition, constitution, threshold_source)
        profiles = TeleologyProfiles(teleology, perception)
        autonomous = AutonomousService(teleology, perception, constitution, clock)
        return cls(teleology, profiles, TeleologySearch(profiles), autonomous,
                   AutonomousCuration(autonomous, curation, constitution, clock), GoalRefresh(teleology, constitution))
