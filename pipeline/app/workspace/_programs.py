"""The programs a run will start, found before it starts (I/O: reads PATH and the disk).

``validate`` runs once, after every agent: a program that does not exist would be found only
then. A chain whose every agent names a missing program (a ``command``'s, or the CLI a preset
runs) can do nothing either: the run would start, fail each agent at once and stop for a
person with the prompt file read-only. Both are refused before the store is created. A
missing agent with another agent of the chain to fall back to is left to the chain (it is a
non-retriable failure there, by design); the rest of a preset's needs are ``ralph doctor``'s
to check.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from pipeline.core.agents import PRESETS
from pipeline.core.config import AgentConfig, RalphConfig
from pipeline.events import Role

__all__ = ["located", "missing_programs"]


def located(program: str, root: Path, path: str | None) -> Path | None:
    """Where ``program`` is, as a run started from ``root`` with ``path`` as PATH would start
    it: a path as given (a relative one in the workspace, where processes run), or the
    executable found on ``path`` (None: not found there)."""
    if os.sep in program:
        return Path(program) if os.path.isabs(program) else root / program
    found = shutil.which(program, path=path)
    return None if found is None else Path(found).absolute()


def _found(program: str, root: Path, path: str | None) -> bool:
    """Whether ``program`` can be started from ``root`` with ``path`` as PATH."""
    where = located(program, root, path)
    return where is not None and where.is_file() and os.access(where, os.X_OK)


def _program(agent: AgentConfig) -> str:
    """The program ``agent`` starts: its command's, or its preset CLI's."""
    if agent.command is not None:
        return agent.command[0]
    assert agent.preset is not None, "a validated agent has a preset or a command"
    return PRESETS[agent.preset].argv[0]


def _agent_found(agent: AgentConfig, root: Path, environ: Mapping[str, str]) -> bool:
    path = agent.env.get("PATH", environ.get("PATH"))
    return _found(_program(agent), root, path)


def _install(agent: AgentConfig) -> str:
    """How to get a missing agent's program: a preset's install command."""
    if agent.preset is None:
        return ""
    return f" ({PRESETS[agent.preset].install}, or name another agent in [chains])"


def missing_programs(config: RalphConfig, root: Path, environ: Mapping[str, str]) -> list[str]:
    """One line per program the run cannot do without that cannot be found, naming the key."""
    problems: list[str] = []
    if config.validate and not _found(config.validate[0], root, environ.get("PATH")):
        problems.append(f"validate: program {config.validate[0]!r} not found (on PATH or here)")
    for index, gate in enumerate(config.gates):
        path = gate.env.get("PATH", environ.get("PATH"))
        if gate.argv and not _found(gate.argv[0], root, path):
            problems.append(
                f"gates.{index}.argv: program {gate.argv[0]!r} not found (on PATH or here)"
            )
    named: set[str] = set()  # an agent in several chains is named once
    for role in Role:
        chain = [(name, config.agents[name]) for name in config.chain_for(role)]
        if chain and not any(_agent_found(agent, root, environ) for _, agent in chain):
            name, agent = chain[0]
            key = "command" if agent.command is not None else "preset"
            if name not in named:
                named.add(name)
                problems.append(
                    f"agents.{name}.{key}: program {_program(agent)!r} not found, and "
                    f"the {role.value} chain has no other agent{_install(agent)}"
                )
    return problems
