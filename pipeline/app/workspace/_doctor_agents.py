"""``ralph doctor``'s checks of the configured agents (I/O: looks programs up on PATH, runs
each preset's ``--version``, reads gemini's settings and ``/etc/profile``; changes nothing).

Each agent is looked for, asked its version when it is a preset, and checked against the
known pitfalls: the configuration errors that make every invocation fail, and the limits
that lose something without failing the run.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import orjson

from pipeline.app.workspace._doctor_check import Check, Runner, Status, run_command
from pipeline.core.config import AgentConfig, RalphConfig
from pipeline.events import Role
from pipeline.handlers.agents import known_pitfalls

__all__ = ["INSTALL_HINTS", "VERSION_TIMEOUT_S", "agent_cautions", "agent_pitfalls", "check_agents"]

VERSION_TIMEOUT_S: Final = 5.0
"""How long an agent CLI may take to answer ``--version`` before it counts as not starting."""

INSTALL_HINTS: Final[Mapping[str, str]] = {
    "claude": "install Claude Code: npm install -g @anthropic-ai/claude-code",
    "codex": "install Codex: npm install -g @openai/codex",
    "gemini": "install Gemini CLI: npm install -g @google/gemini-cli",
    "opencode": "install OpenCode: npm install -g opencode-ai",
    "aider": "install aider: python -m pip install aider-chat",
}
"""How each preset's CLI is installed (package names only; the registry is the client's)."""


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
    found = {name: _program(agent, environ) for name, agent in config.agents.items()}
    checks: list[Check] = []
    for name, agent in config.agents.items():
        label = f"agent {name}"
        program = agent.invocation().argv[0]
        if found[name] is None:
            stranded = _stranded_roles(config, name, found)
            fix = INSTALL_HINTS.get(
                agent.preset or "", f"install {program}, or correct [agents.{name}] command"
            )
            status = Status.FAIL if stranded else Status.WARN
            why = (
                f"; the {', '.join(stranded)} chain has no agent left"
                if stranded
                else "; its chains fall back to the next agent"
            )
            checks.append(
                Check(
                    name=label, status=status, detail=f"{program!r} not found on PATH{why}", fix=fix
                )
            )
            continue
        checks.append(_version(label, agent, root, environ, run))
        for problem, fix in agent_pitfalls(name, agent, root, environ, is_root):
            checks.append(
                Check(name=f"{label} pitfall", status=Status.FAIL, detail=problem, fix=fix)
            )
        for problem, fix in agent_cautions(name, agent):
            checks.append(
                Check(name=f"{label} pitfall", status=Status.WARN, detail=problem, fix=fix)
            )
    return checks


def _program(agent: AgentConfig, environ: Mapping[str, str]) -> str | None:
    """Where the agent's program is (an absolute or relative path as given, else PATH)."""
    program = agent.invocation().argv[0]
    return shutil.which(program, path=environ.get("PATH"))


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
        return Check(name=label, status=Status.OK, detail=f"command {program} found")
    env = {**environ, **agent.env}
    try:
        status, said = run([program, "--version"], root, env, VERSION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Check(
            name=label,
            status=Status.FAIL,
            detail=f"{program} --version did not answer within {VERSION_TIMEOUT_S:g} s",
            fix=f"run `{program} --version` by hand to see what it waits for",
        )
    except OSError as error:
        return Check(
            name=label,
            status=Status.FAIL,
            detail=f"{program} does not start: {error}",
            fix=INSTALL_HINTS.get(agent.preset, ""),
        )
    first = said.splitlines()[0] if said else ""
    if status != 0:
        return Check(
            name=label,
            status=Status.FAIL,
            detail=f"{program} --version exited {status}: {first[:200]}",
            fix=f"run `{program} --version` by hand; reinstall it",
        )
    return Check(name=label, status=Status.OK, detail=f"{program} {first[:80]}".strip())


# -- known pitfalls ----------------------------------------------------------------------
# Kept apart on purpose: ``pipeline.handlers.agents.pitfalls.known_pitfalls(name, config,
# environ, is_root)`` is coming on another branch; these two are to be replaced by a call to
# it once it lands, so that a run and the doctor name the same pitfalls.


def agent_pitfalls(
    name: str, agent: AgentConfig, root: Path, environ: Mapping[str, str], is_root: bool
) -> list[tuple[str, str]]:
    """The known configuration errors that make every invocation of ``agent`` fail: (what,
    fix) pairs."""
    argv = agent.invocation().argv
    program = Path(argv[0]).name
    env = {**environ, **agent.env}
    # The checks a run makes before it starts (each line already says its fix).
    found: list[tuple[str, str]] = [
        (problem, "as the line says") for problem in known_pitfalls(name, agent, environ, is_root)
    ]
    if program == "gemini" and "--skip-trust" not in argv and not _gemini_trusts(root, env):
        found.append(
            (
                f"gemini does not trust {root}: it exits 55 (and downgrades yolo approval)",
                f'[agents.{name}] args = ["--skip-trust"], or trust the folder in gemini',
            )
        )
    return found


def _gemini_trusts(root: Path, env: Mapping[str, str]) -> bool:
    """Whether gemini's ``trustedFolders.json`` trusts ``root`` (``TRUST_FOLDER`` on it or a
    folder above it, ``TRUST_PARENT`` on a folder beside or below its parent), or folder
    trust is off in its settings."""
    home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or "~").expanduser() / ".gemini"
    settings = _json_file(home / "settings.json")
    security = settings.get("security") if isinstance(settings, dict) else None
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return True
    trusted = _json_file(home / "trustedFolders.json")
    if not isinstance(trusted, dict):
        return False
    here = root.resolve()
    for folder, level in trusted.items():
        path = Path(str(folder)).expanduser()
        base = path if level == "TRUST_FOLDER" else path.parent if level == "TRUST_PARENT" else None
        if base is not None and (here == base or base in here.parents):
            return True
    return False


def _json_file(path: Path) -> object:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def agent_cautions(name: str, agent: AgentConfig) -> list[tuple[str, str]]:
    """Known limits that do not fail a run but lose something: (what, fix) pairs."""
    program = Path(agent.invocation().argv[0]).name
    found: list[tuple[str, str]] = []
    if program == "codex" and _profile_resets_path():
        found.append(
            (
                "codex runs commands with bash -lc, and /etc/profile resets PATH: a bare "
                "`ralph emit` is not found, so topics are lost",
                'agents must call "$RALPH_BIN" emit (ralph sets RALPH_BIN)',
            )
        )
    if program == "aider":
        found.append(
            (
                "aider cannot run shell commands under --yes-always: it never publishes a "
                "topic, so hats' required events never arrive from it",
                f"give roles that must publish topics another agent than {name}",
            )
        )
    return found


def _profile_resets_path() -> bool:
    """Whether a login shell's ``/etc/profile`` sets PATH outright (Debian's does)."""
    try:
        text = Path("/etc/profile").read_text("utf-8", errors="replace")
    except OSError:
        return False
    return any(line.strip().startswith(("PATH=", "export PATH=")) for line in text.splitlines())
