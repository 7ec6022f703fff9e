"""The model endpoints an agent will connect to, derived at a run's start from the places its
CLI reads them (I/O: reads the CLI's configuration files).

``docs/research/sandbox-design.md`` section 8: the result (plus ``[sandbox] allow``) is what
the network gate lets the agent reach for the whole run and its resumes, so an agent that
rewrites its CLI's configuration changes where the CLI goes, never what the sandbox allows.
Each preset's rules, and how they were established, are in :mod:`._cli_endpoints` and
:mod:`._provider_endpoints`. :func:`derive_variables` names the variables a CLI's own
configuration says its model's key is in, for the sandbox to pass (read at the same time, so
an agent that edits the configuration cannot make the sandbox pass another variable).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from pipeline.core.sandbox import Endpoint
from pipeline.handlers.sandbox._cli_config import AgentSetup, Source, Variables
from pipeline.handlers.sandbox._cli_endpoints import (
    claude_endpoints,
    codex_endpoints,
    codex_variables,
    gemini_endpoints,
)
from pipeline.handlers.sandbox._provider_endpoints import (
    aider_endpoints,
    opencode_endpoints,
    opencode_variables,
)

__all__ = ["derive_endpoints", "derive_variables"]

_BY_PRESET: Final[Mapping[str, Callable[[AgentSetup], tuple[Endpoint, ...]]]] = {
    "claude": claude_endpoints,
    "codex": codex_endpoints,
    "gemini": gemini_endpoints,
    "opencode": opencode_endpoints,
    "aider": aider_endpoints,
}

_VARIABLES_BY_PRESET: Final[Mapping[str, Callable[[AgentSetup], tuple[str, ...]]]] = {
    "codex": codex_variables,
    "opencode": opencode_variables,
}
"""The presets whose configuration names a variable of its choosing: Codex's ``env_key``,
OpenCode's ``{env:NAME}``. The others read variables their ``pass_env`` patterns cover."""


def derive_endpoints(
    preset: str | None,
    agent_env: Mapping[str, str],
    environ: Mapping[str, str],
    home: str,
    model: str | None,
    workspace: Path | None = None,
) -> tuple[Endpoint, ...]:
    """The model endpoints an agent of ``preset`` will connect to, in no particular priority
    (duplicates dropped, the order found kept).

    ``agent_env`` is ``[agents.NAME] env`` (it wins over ``environ``, the environment ralph
    gives agents), ``home`` the agent's ``$HOME``, ``model`` the model ralph passes it (None:
    the CLI's own choice) and ``workspace`` the folder it runs in, whose settings Claude Code,
    Gemini CLI and aider read (None: not read). A command agent (``preset`` None) has none:
    the person names its endpoints in ``allow``. An empty result means no endpoint is known
    (an unknown provider): ``allow`` must name it.

    Missing or malformed files are skipped, as the CLI would skip or reject them; a setting
    that is present but is not a URL raises :class:`~pipeline.core.sandbox.SandboxError` naming
    the variable, or the file and key, so the run's start can say what to fix.
    """
    if preset is None:
        return ()
    derive = _BY_PRESET.get(preset)
    if derive is None:
        raise ValueError(f"no endpoint derivation for the preset {preset!r}")
    return derive(_setup(agent_env, environ, home, model, workspace))


def derive_variables(
    preset: str | None,
    agent_env: Mapping[str, str],
    environ: Mapping[str, str],
    home: str,
    model: str | None,
    workspace: Path | None = None,
) -> tuple[str, ...]:
    """The names of the variables the configuration of an agent of ``preset`` says its
    CLI reads for the model's provider (its key, a header), beyond the preset's ``pass_env``
    patterns: Codex's provider ``env_key`` and ``env_http_headers``, OpenCode's
    ``{env:NAME}`` in the provider's table. Arguments as for :func:`derive_endpoints`; files
    that cannot be read name nothing."""
    derive = None if preset is None else _VARIABLES_BY_PRESET.get(preset)
    if derive is None:
        return ()
    return derive(_setup(agent_env, environ, home, model, workspace))


def _setup(
    agent_env: Mapping[str, str],
    environ: Mapping[str, str],
    home: str,
    model: str | None,
    workspace: Path | None,
) -> AgentSetup:
    variables = Variables(
        (
            Source(where="the agent's env", values=agent_env),
            Source(where="the environment", values=environ),
        )
    )
    return AgentSetup(variables=variables, home=home, workspace=workspace, model=model)
