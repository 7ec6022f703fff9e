"""Configuration: ``ralph.toml`` parsed strictly into frozen classes (pure)."""

from pipeline.config._model import AgentConfig, BudgetConfig, ChainConfig, PromptVia, RalphConfig
from pipeline.config._parse import PRESETS, ConfigError, parse_config

__all__ = [
    "PRESETS",
    "AgentConfig",
    "BudgetConfig",
    "ChainConfig",
    "ConfigError",
    "PromptVia",
    "RalphConfig",
    "parse_config",
]
