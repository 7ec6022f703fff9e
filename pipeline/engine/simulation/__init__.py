"""The simulated world: a model of agents, git and people whose every outcome a chooser
decides (for the demo, property tests and the phase graph); pure, beside the handlers."""

from pipeline.engine.simulation._choosers import (
    Always,
    Chooser,
    RandomChooser,
    ScriptedChooser,
)
from pipeline.engine.simulation._config import (
    SIMULATED_RESPONSES,
    SPECIAL_TOPICS,
    USAGE_CHOICE,
    USAGE_UNIT_USD,
    AgentOutcome,
    WorldConfig,
    default_chains,
    fake_clock,
    simulated_policy,
)
from pipeline.engine.simulation._world import SCREEN_FINDINGS, SimulatedWorld

__all__ = [
    "SCREEN_FINDINGS",
    "SIMULATED_RESPONSES",
    "SPECIAL_TOPICS",
    "USAGE_CHOICE",
    "USAGE_UNIT_USD",
    "AgentOutcome",
    "Always",
    "Chooser",
    "RandomChooser",
    "ScriptedChooser",
    "SimulatedWorld",
    "WorldConfig",
    "default_chains",
    "fake_clock",
    "simulated_policy",
]
