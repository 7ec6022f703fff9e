"""Orchestration: ``next_effect(state) -> Effect``, decided from state alone (pure).

Orchestration decides; it never performs. Handlers carry out the effect and report facts.
"""

from pipeline.orchestration._bounds import step_bound
from pipeline.orchestration._hooks import hook_due, hooks_after, run_end_hook
from pipeline.orchestration._next import PROVIDER_LIMIT, effect_id, next_effect
from pipeline.orchestration._pinning import integration_gates, landing_pinned_to, pinned_to

__all__ = [
    "PROVIDER_LIMIT",
    "effect_id",
    "hook_due",
    "hooks_after",
    "integration_gates",
    "landing_pinned_to",
    "next_effect",
    "pinned_to",
    "run_end_hook",
    "step_bound",
]
