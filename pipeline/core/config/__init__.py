"""Configuration: ``ralph.toml`` parsed strictly into frozen classes (pure)."""

from pipeline.core.agents import PRESETS, PromptVia
from pipeline.core.config._gates import GateConfig
from pipeline.core.config._loop import DEFAULT_PUBLISHES, HatConfig, HatsConfig, LoopConfig
from pipeline.core.config._model import (
    AgentConfig,
    BudgetConfig,
    ChainConfig,
    ContextConfig,
    Durability,
    GitConfig,
    Invocation,
    McpConfig,
    Price,
    RalphConfig,
    RedactionConfig,
    StoreConfig,
)
from pipeline.core.config._orchestrator import Translation, translate_orchestrator_config
from pipeline.core.config._parse import ConfigError, parse_config, require_chains
from pipeline.core.config._refs import ref_problem
from pipeline.core.config._sandbox import AgentSandboxConfig, SandboxConfig
from pipeline.core.config._toml import dump_toml
from pipeline.core.config._topology_checks import Severity, TopologyProblem, topology_problems
from pipeline.core.config._topology_routes import Arrival, Route, Via, topology_routes

__all__ = [
    "DEFAULT_PUBLISHES",
    "PRESETS",
    "AgentConfig",
    "AgentSandboxConfig",
    "Arrival",
    "BudgetConfig",
    "ChainConfig",
    "ConfigError",
    "ContextConfig",
    "Durability",
    "GateConfig",
    "GitConfig",
    "HatConfig",
    "HatsConfig",
    "Invocation",
    "LoopConfig",
    "McpConfig",
    "Price",
    "PromptVia",
    "RalphConfig",
    "RedactionConfig",
    "Route",
    "SandboxConfig",
    "Severity",
    "StoreConfig",
    "TopologyProblem",
    "Translation",
    "Via",
    "dump_toml",
    "parse_config",
    "ref_problem",
    "require_chains",
    "topology_problems",
    "topology_routes",
    "translate_orchestrator_config",
]
