"""``ralph doctor``'s checks of the configured agents (I/O: looks programs up on PATH, runs
each preset's ``--version``, reads the files its CLI's checks ask for; changes nothing).

Each agent is looked for, asked its version when it is a preset, and checked against the
pitfalls its CLI's module declares (``pipeline.core.agents``): the configuration errors that
make every invocation fail, and the limits that lose something without failing the run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pipeline.app.workspace._doctor_check import (
    Check,
    Runner,
    Status,
    fail,
    ok,
    run_command,
    warn,
)
from pipeline.core.agents import PRESETS, Wired
from pipeline.core.config import AgentConfig, RalphConfig
from pipeline.events import Role
from pipeline.handlers.agents import found_pitfalls
from pipeline.handlers.agents.mcp import wiring
from pipeline.handlers.runtime import work_trees
from pipeline.handlers.sandbox import host_path, lies_in

__all__ = [
    "VERSION_TIMEOUT_S",
    "agent_pitfalls",
    "check_agents",
    "install_hints",
]

VERSION_TIMEOUT_S: Final = 5.0
"""How long an agent CLI may take to answer ``--version`` before it counts as not starting."""


def install_hints() -> dict[str, str]:
    """How each known CLI is installed, by preset name (package names only; the registry is
    the client's)."""
    return {name: preset.install for name, preset in PRESETS.items()}


def check_agents(
    root: Path,
    config: RalphConfig,
    environ: Mapping[str, str],
    *,
    is_root: bool,
    run: Runner = run_command,
) -> list[Check]:
    """Every configured agent: its program on PATH, ``--version`` answering (presets), and
    the known pitfalls. A missing program fails the run when some role's chain then has no
    agent left to fall back to; otherwise the chain falls back and it is a warning."""
    # Where each agent's program is: a path as given, else found on PATH.
    found = {
        name: shutil.which(agent.invocation().argv[0], path=environ.get("PATH"))
        for name, agent in config.agents.items()
    }
    checks: list[Check] = []
    for name, agent in config.agents.items():
        label = f"agent {name}"
        program = agent.invocation().argv[0]
        if found[name] is None:
            stranded = _stranded_roles(config, name, found)
            fix = install_hints().get(
                agent.preset or "", f"install {program}, or correct [agents.{name}] command"
            )
            if stranded:
                why = f"; the {', '.join(stranded)} chain has no agent left"
                checks.append(fail(label, f"{program!r} not found on PATH{why}", fix))
            else:
                why = "; its chains fall back to the next agent"
                checks.append(warn(label, f"{program!r} not found on PATH{why}", fix))
            continue
        checks.append(_version(label, agent, root, environ, run))
        checks.append(_mcp(label, agent, config, environ))
        # The errors that fail every invocation first, then the limits that lose something.
        found_now = found_pitfalls(name, agent, environ, is_root, root)
        for pitfall, problem, fix in sorted(found_now, key=lambda seen: not seen[0].fails):
            status = Status.FAIL if pitfall.fails else Status.WARN
            checks.append(Check(name=f"{label} pitfall", status=status, detail=problem, fix=fix))
    return checks


def _mcp(label: str, agent: AgentConfig, config: RalphConfig, environ: Mapping[str, str]) -> Check:
    """How the agent's CLI is given ralph's MCP server, or why it is not (a warning where its
    CLI could take it)."""
    if not config.mcp.agents:
        return ok(f"{label} mcp", "off ([mcp] agents = false): agents publish with the shell")
    preset = PRESETS.get(agent.preset or "")
    how = None if preset is None or preset.mcp is None else preset.mcp.how
    command = ("ralph", "mcp", "--card", "CARD")
    wired = wiring(preset, command, {**environ, **agent.env}, sandboxed=True)
    if isinstance(wired, Wired) and how is not None:
        return ok(f"{label} mcp", how)
    if how is None:  # no MCP client: nothing is lost
        return ok(f"{label} mcp", str(wired))
    return warn(f"{label} mcp", f"not wired: {wired}", "its agents publish with the shell alone")


def _stranded_roles(config: RalphConfig, name: str, found: Mapping[str, str | None]) -> list[str]:
    """The roles whose chain holds ``name`` and no agent whose program exists."""
    return [
        role.value
        for role in Role
        if name in config.chain_for(role)
        and all(found.get(other) is None for other in config.chain_for(role))
    ]


def _version(
    label: str, agent: AgentConfig, root: Path, environ: Mapping[str, str], run: Runner
) -> Check:
    """A preset's CLI answers ``--version`` within :data:`VERSION_TIMEOUT_S`; a command is
    only looked for (ralph cannot know which arguments it takes)."""
    program = agent.invocation().argv[0]
    if agent.preset is None:
        return ok(label, f"command {program} found")
    env = {**environ, **agent.env}
    # On the host: neither the CLI nor what it starts by name (``env node``) is taken from a
    # work tree's folder, where an agent could have written its own.
    trees = work_trees(root)
    env["PATH"] = host_path(env.get("PATH", os.defpath), trees)
    where = shutil.which(program, path=env["PATH"])
    if where is None or lies_in(where, trees):
        detail = f"{program} found in the work tree: not run outside the sandbox to ask its version"
        return ok(label, detail)
    try:
        # From an empty folder: a CLI may read its project settings (``.gemini``,
        # ``opencode.json``, a plugin) from the folder it starts in, and the workspace's are
        # the agent's files, read here outside the sandbox.
        with tempfile.TemporaryDirectory(prefix="ralph-version-") as empty:
            status, said = run([where, "--version"], Path(empty), env, VERSION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        detail = f"{program} --version did not answer within {VERSION_TIMEOUT_S:g} s"
        return fail(label, detail, f"run `{program} --version` by hand to see what it waits for")
    except OSError as error:
        detail = f"{program} does not start: {error}"
        return fail(label, detail, install_hints().get(agent.preset, ""))
    first = said.splitlines()[0] if said else ""
    if status != 0:
        detail = f"{program} --version exited {status}: {first[:200]}"
        return fail(label, detail, f"run `{program} --version` by hand; reinstall it")
    return ok(label, f"{program} {first[:80]}".strip())


def agent_pitfalls(
    name: str, agent: AgentConfig, root: Path, environ: Mapping[str, str], is_root: bool
) -> list[tuple[str, str]]:
    """The known configuration errors that make every invocation of ``agent`` fail: (what,
    fix) pairs, as its CLI's module declares them."""
    found = found_pitfalls(name, agent, environ, is_root, root)
    return [(problem, fix) for pitfall, problem, fix in found if pitfall.fails]
