"""``ralph doctor``: what would make a run in a workspace fail, found before it starts (I/O:
reads files, runs ``git`` and each agent's ``--version``, connects to the store; changes
nothing).

Each check is a function returning :class:`Check` records: a name, OK/WARN/FAIL, what was
found and the fix. FAIL means a run would fail (or could not start); WARN means it would run
but something will not work as the user expects. :func:`diagnose` runs them all.
"""

from __future__ import annotations

import enum
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, final

import orjson
from attrs import frozen

from pipeline.config import (
    AgentConfig,
    ConfigError,
    RalphConfig,
    parse_config,
    require_chains,
)
from pipeline.events import Role
from pipeline.handlers.agents import known_pitfalls
from pipeline.handlers.intake import EventsFileError, read_marker
from pipeline.handlers.redaction import mask_password_of
from pipeline.handlers.runtime import WorkspaceLayout, load_response_schemas
from pipeline.handlers.store import StoreError, store_path
from pipeline.workspace._programs import missing_programs
from pipeline.workspace._run import locate_store

__all__ = ["Check", "Status", "diagnose", "would_fail"]

VERSION_TIMEOUT_S: Final = 5.0
"""How long an agent CLI may take to answer ``--version`` before it counts as not starting."""

_GIT_TIMEOUT_S: Final = 10.0
_STORE_TIMEOUT_S: Final = 5

_INSTALL: Final[Mapping[str, str]] = {
    "claude": "install Claude Code: npm install -g @anthropic-ai/claude-code",
    "codex": "install Codex: npm install -g @openai/codex",
    "gemini": "install Gemini CLI: npm install -g @google/gemini-cli",
    "opencode": "install OpenCode: npm install -g opencode-ai",
    "aider": "install aider: python -m pip install aider-chat",
}
"""How each preset's CLI is installed (package names only; the registry is the client's)."""


class Status(enum.Enum):
    """How a check came out."""

    OK = "OK"
    WARN = "WARN"
    """A run would go on, but something will not work as expected."""
    FAIL = "FAIL"
    """A run would fail, or could not start."""


@final
@frozen
class Check:
    """One thing checked: what, how it came out, what was found and how to fix it."""

    name: str
    status: Status
    detail: str
    fix: str = ""


def would_fail(checks: Sequence[Check]) -> bool:
    """Whether any check says a run would fail."""
    return any(check.status is Status.FAIL for check in checks)


Runner = Callable[[Sequence[str], Path, Mapping[str, str], float], tuple[int, str]]
"""Runs argv in a folder with an environment and a timeout: (exit status, output); raises
``OSError`` when it cannot start and ``subprocess.TimeoutExpired`` when it overruns."""


def run_command(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> tuple[int, str]:
    """The default :data:`Runner`: a real subprocess, stdin closed, output captured."""
    done = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).strip()


# -- the workspace -----------------------------------------------------------------------


def check_config(root: Path) -> tuple[list[Check], RalphConfig | None]:
    """``ralph.toml`` exists, parses strictly, names a chain for every role, and its response
    schemas load; the configuration when it does."""
    layout = WorkspaceLayout(root)
    path = layout.config
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return [
            Check("config", Status.FAIL, f"{path} not found", "run `ralph init` in the workspace")
        ], None
    except (OSError, UnicodeDecodeError) as error:
        return [Check("config", Status.FAIL, f"cannot read {path}: {error}", "")], None
    try:
        config = parse_config(text, str(path))
        require_chains(config, str(path))
        load_response_schemas(config, root, str(path))
    except ConfigError as error:
        return [Check("config", Status.FAIL, str(error), f"correct {path.name}")], None
    return [Check("config", Status.OK, f"{path} parses")], config


def check_prompt(root: Path, config: RalphConfig) -> list[Check]:
    """The prompt file a plain ``ralph run`` reads exists and is not empty."""
    path = root / config.prompt_file
    fix = f"write the task in {config.prompt_file} (or give `ralph run --prompt TEXT`)"
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return [Check("prompt", Status.FAIL, f"{path} does not exist", fix)]
    except (OSError, UnicodeDecodeError) as error:
        return [Check("prompt", Status.FAIL, f"cannot read {path}: {error}", fix)]
    if not text.strip():
        return [Check("prompt", Status.FAIL, f"{path} is empty", fix)]
    return [Check("prompt", Status.OK, f"{path} ({len(text.splitlines())} lines)")]


def check_validate(root: Path, config: RalphConfig, environ: Mapping[str, str]) -> list[Check]:
    """The final check's program can be found (a run refuses to start without it); a
    configuration without one is a warning: any completion claim would then be believed."""
    if not config.validate:
        fix = 'set validate = ["your", "test", "command"] in ralph.toml'
        return [Check("validate", Status.WARN, "no final check: nothing tests the work", fix)]
    missing = [
        line for line in missing_programs(config, root, environ) if line.startswith("validate")
    ]
    if missing:
        return [
            Check(
                "validate",
                Status.FAIL,
                missing[0],
                f"install {config.validate[0]} or correct validate",
            )
        ]
    return [Check("validate", Status.OK, " ".join(config.validate))]


def check_ralph_folder(root: Path) -> list[Check]:
    """``.ralph/`` (events file, marker, store, logs) can be written, and a marker left by an
    earlier run names an events file agents may write."""
    layout = WorkspaceLayout(root)
    folder = root / ".ralph"
    existing = folder if folder.is_dir() else root
    if folder.exists() and not folder.is_dir():
        return [Check(".ralph", Status.FAIL, f"{folder} is not a folder", f"remove {folder}")]
    if not os.access(existing, os.W_OK | os.X_OK):
        return [
            Check(
                ".ralph",
                Status.FAIL,
                f"{existing} is not writable: no events file, marker or logs can be written",
                f"make {existing} writable by this user",
            )
        ]
    checks = [
        Check(
            ".ralph",
            Status.OK,
            f"{folder} writable" + ("" if folder.is_dir() else " (created by the first run)"),
        )
    ]
    try:
        marker = read_marker(layout.root)
    except EventsFileError as error:
        checks.append(
            Check(
                "events marker",
                Status.WARN,
                str(error),
                "delete .ralph/current-events; the next run writes a new one",
            )
        )
    else:
        found = "none yet (the first run writes it)" if marker is None else f"names {marker}"
        checks.append(Check("events marker", Status.OK, found))
    return checks


def check_git(root: Path, environ: Mapping[str, str], run: Runner = run_command) -> list[Check]:
    """git is installed, ``root`` is a repository, and commits have an author."""
    if shutil.which("git", path=environ.get("PATH")) is None:
        return [Check("git", Status.FAIL, "git not found on PATH", "install git")]
    try:
        status, said = run(["git", "--version"], root, environ, _GIT_TIMEOUT_S)
        checks = [Check("git", Status.OK, said)]
        status, said = run(
            ["git", "rev-parse", "--is-inside-work-tree"], root, environ, _GIT_TIMEOUT_S
        )
        if status != 0 or said != "true":
            checks.append(
                Check(
                    "repository",
                    Status.FAIL,
                    f"{root} is not a git repository",
                    f"git init {root} (ralph commits each iteration)",
                )
            )
        else:
            checks.append(Check("repository", Status.OK, str(root)))
        checks.append(_identity(root, environ, run))
    except (OSError, subprocess.TimeoutExpired) as error:
        return [Check("git", Status.FAIL, f"git does not answer: {error}", "reinstall git")]
    return checks


def _identity(root: Path, environ: Mapping[str, str], run: Runner) -> Check:
    """Who commits: ``user.name`` and ``user.email`` (or git's environment variables)."""
    missing = []
    for key, variable in (("user.name", "GIT_AUTHOR_NAME"), ("user.email", "GIT_AUTHOR_EMAIL")):
        if environ.get(variable):
            continue
        status, said = run(["git", "config", "--get", key], root, environ, _GIT_TIMEOUT_S)
        if status != 0 or not said:
            missing.append(key)
    if missing:
        fixes = " && ".join(f'git config {key} "..."' for key in missing)
        return Check(
            "git identity", Status.FAIL, f"no {' or '.join(missing)}: git refuses to commit", fixes
        )
    return Check("git identity", Status.OK, "user.name and user.email set")


def _location(root: Path, config: RalphConfig | None, store: str | None) -> str:
    """Where the workspace's events go, as ``ralph run`` chooses: ``store`` (``--store`` or
    ``RALPH_STORE``), else ``[store] url`` (relative to the workspace), else
    the default store (``.git/ralph/pipeline.db``)."""
    configured = None if config is None else config.store.url
    try:
        return locate_store(WorkspaceLayout(root), configured, store)
    except StoreError:
        return configured or ""  # a malformed url: check_store names what is wrong with it


def check_store(location: str) -> list[Check]:
    """The store opens: a SQLite file readable (or its folder writable, to create it), a
    PostgreSQL server reachable with the URL's credentials."""
    try:
        path = store_path(location)
    except StoreError as error:
        return [
            Check("store", Status.FAIL, str(error), "give a path, sqlite:///PATH or postgresql://")
        ]
    if path is None:
        return [_postgres(location)]
    if path.is_file():
        if not os.access(path, os.R_OK | os.W_OK):
            return [
                Check(
                    "store",
                    Status.FAIL,
                    f"{path} is not readable and writable",
                    f"chmod u+rw {path}",
                )
            ]
        return [Check("store", Status.OK, f"SQLite {path}")]
    parent = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        return [
            Check(
                "store",
                Status.FAIL,
                f"cannot create {path}: {parent} is not a writable folder",
                "give a store in a writable folder (--store, [store] url)",
            )
        ]
    return [Check("store", Status.OK, f"SQLite {path} (created by the first run)")]


def _postgres(url: str) -> Check:
    """A PostgreSQL store: connect and ask one question (nothing is created or migrated)."""
    try:
        import psycopg
    except ImportError:
        return Check(
            "store",
            Status.FAIL,
            "a PostgreSQL store needs psycopg",
            "pip install 'ralph-pipeline[postgres]'",
        )
    from pipeline.handlers.store.postgres import describe_url

    label = describe_url(url)
    try:
        with psycopg.connect(url, connect_timeout=_STORE_TIMEOUT_S) as conn:
            version = conn.execute("SHOW server_version").fetchone()
    except (psycopg.Error, ValueError) as error:
        # psycopg quotes an unparsable URL whole: never its password
        reason = mask_password_of(url, " ".join(str(error).split())) or type(error).__name__
        return Check(
            "store",
            Status.FAIL,
            f"{label}: cannot connect ({reason})",
            "start the server, or correct the URL (host, port, database, user)",
        )
    return Check("store", Status.OK, f"{label} (PostgreSQL {version[0] if version else '?'})")


# -- agents ------------------------------------------------------------------------------


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
            fix = _INSTALL.get(
                agent.preset or "", f"install {program}, or correct [agents.{name}] command"
            )
            status = Status.FAIL if stranded else Status.WARN
            why = (
                f"; the {', '.join(stranded)} chain has no agent left"
                if stranded
                else "; its chains fall back to the next agent"
            )
            checks.append(Check(label, status, f"{program!r} not found on PATH{why}", fix))
            continue
        checks.append(_version(label, agent, root, environ, run))
        for problem, fix in agent_pitfalls(name, agent, root, environ, is_root):
            checks.append(Check(f"{label} pitfall", Status.FAIL, problem, fix))
        for problem, fix in agent_cautions(name, agent):
            checks.append(Check(f"{label} pitfall", Status.WARN, problem, fix))
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
        return Check(label, Status.OK, f"command {program} found")
    env = {**environ, **agent.env}
    try:
        status, said = run([program, "--version"], root, env, VERSION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Check(
            label,
            Status.FAIL,
            f"{program} --version did not answer within {VERSION_TIMEOUT_S:g} s",
            f"run `{program} --version` by hand to see what it waits for",
        )
    except OSError as error:
        return Check(
            label, Status.FAIL, f"{program} does not start: {error}", _INSTALL.get(agent.preset, "")
        )
    first = said.splitlines()[0] if said else ""
    if status != 0:
        return Check(
            label,
            Status.FAIL,
            f"{program} --version exited {status}: {first[:200]}",
            f"run `{program} --version` by hand; reinstall it",
        )
    return Check(label, Status.OK, f"{program} {first[:80]}".strip())


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


# -- all of it ---------------------------------------------------------------------------


def diagnose(
    root: Path,
    environ: Mapping[str, str],
    *,
    store: str | None = None,
    is_root: bool = False,
    run: Runner = run_command,
) -> tuple[Check, ...]:
    """Every check of the workspace at ``root``, in the order a run meets them: git, the
    configuration, the prompt, ``.ralph/``, the store, then each agent."""
    root = root.resolve()
    checks = check_git(root, environ, run)
    config_checks, config = check_config(root)
    checks += config_checks
    if config is not None:
        checks += check_prompt(root, config)
        checks += check_validate(root, config, environ)
    checks += check_ralph_folder(root)
    checks += check_store(_location(root, config, store))
    if config is not None:
        checks += check_agents(root, config, environ, is_root=is_root, run=run)
    return tuple(checks)
