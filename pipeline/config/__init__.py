"""Configuration: ``ralph.toml`` parsed strictly into frozen classes (pure)."""

from pipeline.config._model import (
    AgentConfig,
    BudgetConfig,
    ChainConfig,
    Invocation,
    RalphConfig,
)
from pipeline.config._parse import ConfigError, parse_config, require_chains
from pipeline.config._presets import PRESETS, AgentPreset, PromptVia

__all__ = [
    "PRESETS",
    "AgentConfig",
    "AgentPreset",
    "BudgetConfig",
    "ChainConfig",
    "ConfigError",
    "Invocation",
    "PromptVia",
    "RalphConfig",
    "parse_config",
    "require_chains",
]
