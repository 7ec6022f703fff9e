"""Orchestration: ``next_effect(state) -> Effect``, decided from state alone (pure).

Orchestration decides; it never performs. Handlers carry out the effect and report facts.
"""

from pipeline.orchestration._bounds import step_bound
from pipeline.orchestration._next import PROVIDER_LIMIT, effect_id, next_effect, next_step
from pipeline.orchestration._pinning import integration_gates, landing_pinned_to, pinned_to

__all__ = [
    "PROVIDER_LIMIT",
    "effect_id",
    "integration_gates",
    "landing_pinned_to",
    "next_effect",
    "next_step",
    "pinned_to",
    "step_bound",
]
