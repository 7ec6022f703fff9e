"""``ralph doctor``: what would make a run in a workspace fail, found before it starts (I/O:
reads files, runs ``git`` and each agent's ``--version``, connects to the store; changes
nothing).

Each check is a function returning :class:`Check` records: a name, OK/WARN/FAIL, what was
found and the fix. FAIL means a run would fail (or could not start); WARN means it would run
but something will not work as the user expects. :func:`diagnose` runs them all: the
workspace's checks here, the agents' in ``_doctor_agents``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

# Re-exported: callers ask the doctor for the pitfalls it checks, wherever they live.
from pipeline.app.workspace._doctor_agents import agent_pitfalls as agent_pitfalls
from pipeline.app.workspace._doctor_agents import check_agents
from pipeline.app.workspace._doctor_check import Check, Runner, Status, fail, ok, run_command, warn
from pipeline.app.workspace._doctor_sandbox import check_sandbox
from pipeline.app.workspace._peek import locate_store
from pipeline.app.workspace._programs import missing_programs
from pipeline.app.workspace._python_module import missing_module
from pipeline.core.config import (
    ConfigError,
    GateConfig,
    RalphConfig,
    parse_config,
    require_chains,
    topology_problems,
)
from pipeline.handlers.intake import EventsFileError, read_marker
from pipeline.handlers.redaction import mask_password_of
from pipeline.handlers.runtime import (
    WorkspaceLayout,
    load_hat_schemas,
    load_response_schemas,
    work_trees,
)
from pipeline.handlers.sandbox import host_path
from pipeline.handlers.store import StoreError, store_path

__all__ = ["Check", "Status", "diagnose", "would_fail"]

_GIT_TIMEOUT_S: Final = 10.0
_STORE_TIMEOUT_S: Final = 5


def would_fail(checks: Sequence[Check]) -> bool:
    """Whether any check says a run would fail."""
    return any(check.status is Status.FAIL for check in checks)


# -- the workspace -----------------------------------------------------------------------


def check_config(root: Path) -> tuple[list[Check], RalphConfig | None]:
    """``ralph.toml`` exists, parses strictly, names a chain for every role, and its response
    schemas load; the configuration when it does."""
    path = WorkspaceLayout(root=root).config
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return [fail("config", f"{path} not found", "run `ralph init` in the workspace")], None
    except (OSError, UnicodeDecodeError) as error:
        return [fail("config", f"cannot read {path}: {error}", "")], None
    try:
        config = parse_config(text, str(path))
        load_response_schemas(config, root, str(path))
        load_hat_schemas(config, root, str(path))
    except ConfigError as error:
        return [fail("config", str(error), f"correct {path.name}")], None
    try:
        require_chains(config, str(path))
    except ConfigError as error:
        # The rest of the file is sound: the other checks still say what else would fail
        # (ralph init's starter has no chain until the person names an agent).
        return [fail("config", str(error), f"correct {path.name}")], config
    # Errors were refused by the parser already: what is left works, but maybe not as meant.
    problems = topology_problems(config.loop_policy())
    return [
        ok("config", f"{path} parses"),
        *(warn("topology", problem.message, f"review {path.name}") for problem in problems),
    ], config


def check_prompt(root: Path, config: RalphConfig) -> list[Check]:
    """The prompt file a plain ``ralph run`` reads exists and is not empty."""
    path = root / config.prompt_file
    fix = f"write the task in {config.prompt_file} (or give `ralph run --prompt TEXT`)"
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return [fail("prompt", f"{path} does not exist", fix)]
    except (OSError, UnicodeDecodeError) as error:
        return [fail("prompt", f"cannot read {path}: {error}", fix)]
    if not text.strip():
        return [fail("prompt", f"{path} is empty", fix)]
    return [ok("prompt", f"{path} ({len(text.splitlines())} lines)")]


def check_validate(
    root: Path, config: RalphConfig, environ: Mapping[str, str], run: Runner = run_command
) -> list[Check]:
    """The final check's program can be found (a run refuses to start without it), and the
    module a ``python -m MODULE`` check runs is installed for that Python (else every final
    check fails); a configuration with neither it nor gates is a warning: any completion
    claim would then be believed."""
    if not config.validate and config.gates:
        return [ok("validate", "none: the gates check the work")]
    if not config.validate:
        fix = 'set validate = ["your", "test", "command"] in ralph.toml'
        return [warn("validate", "no final check: nothing tests the work", fix)]
    missing = [
        line for line in missing_programs(config, root, environ) if line.startswith("validate")
    ]
    if missing:
        return [fail("validate", missing[0], f"install {config.validate[0]} or correct validate")]
    python, module = config.validate[0], missing_module(config.validate, root, environ, run)
    if module is not None:
        command = " ".join(config.validate)
        detail = f"{command}: {python} has no module {module!r}, so it always fails"
        fix = f"{python} -m pip install {module}, or correct validate in ralph.toml"
        return [fail("validate", detail, fix)]
    return [ok("validate", " ".join(config.validate))]


def _what(gate: GateConfig) -> str:
    return f"at {', '.join(gate.on)}, on failure {gate.on_failure.value}"


def _never_claimed(index: int, gate: GateConfig, config: RalphConfig) -> list[Check]:
    """The warning for a ``completion`` gate of a configuration that claims no completion."""
    if "completion" not in gate.on or config.loop.completion_promise:
        return []
    when = "it runs at final only" if "final" in gate.on else "it never runs"
    detail = f"gates.{index}.on: completion never applies (loop.completion_promise is off): "
    fix = 'use on = ["final"], or set loop.completion_promise in ralph.toml'
    return [warn(f"gate {gate.name}", detail + when, fix)]


def check_gates(root: Path, config: RalphConfig, environ: Mapping[str, str]) -> list[Check]:
    """One check per gate: its program found (OK) or not (FAIL: a run refuses to start), and a
    warning when it waits for a completion claim that cannot come (``completion`` with
    ``loop.completion_promise = ""``: the gate runs at ``final`` only, or never)."""
    missing = missing_programs(config, root, environ)
    checks: list[Check] = []
    for index, gate in enumerate(config.gates):
        name = f"gate {gate.name}"
        key = f"gates.{index}.argv"
        problem = next((line for line in missing if line.startswith(f"{key}:")), None)
        program = gate.argv[0] if gate.argv else ""
        if problem is not None:
            fix = f"install {program} or correct {key} in ralph.toml"
            checks.append(fail(name, problem, fix))
        else:
            checks.append(ok(name, f"program {program!r} found; {_what(gate)}"))
        checks += _never_claimed(index, gate, config)
    return checks


def check_ralph_folder(root: Path) -> list[Check]:
    """``.ralph/`` (events file, marker, store, logs) can be written, and a marker left by an
    earlier run names an events file agents may write."""
    folder = root / ".ralph"
    existing = folder if folder.is_dir() else root
    if folder.exists() and not folder.is_dir():
        return [fail(".ralph", f"{folder} is not a folder", f"remove {folder}")]
    if not os.access(existing, os.W_OK | os.X_OK):
        detail = f"{existing} is not writable: no events file, marker or logs can be written"
        return [fail(".ralph", detail, f"make {existing} writable by this user")]
    made = "" if folder.is_dir() else " (created by the first run)"
    checks = [ok(".ralph", f"{folder} writable{made}")]
    try:
        marker = read_marker(root)
    except EventsFileError as error:
        fix = "delete .ralph/current-events; the next run writes a new one"
        checks.append(warn("events marker", str(error), fix))
    else:
        found = "none yet (the first run writes it)" if marker is None else f"names {marker}"
        checks.append(ok("events marker", found))
    return checks


def check_git(root: Path, environ: Mapping[str, str], run: Runner = run_command) -> list[Check]:
    """git is installed, ``root`` is a repository, and commits have an author."""
    if shutil.which("git", path=environ.get("PATH")) is None:
        return [fail("git", "git not found on PATH", "install git")]
    try:
        _status, said = run(["git", "--version"], root, environ, _GIT_TIMEOUT_S)
        checks = [ok("git", said)]
        status, said = run(
            ["git", "rev-parse", "--is-inside-work-tree"], root, environ, _GIT_TIMEOUT_S
        )
        if status != 0 or said != "true":
            fix = f"git init {root} (ralph commits each iteration)"
            checks.append(fail("repository", f"{root} is not a git repository", fix))
        else:
            checks.append(ok("repository", str(root)))
        checks.append(_identity(root, environ, run))
    except (OSError, subprocess.TimeoutExpired) as error:
        return [fail("git", f"git does not answer: {error}", "reinstall git")]
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
        return fail("git identity", f"no {' or '.join(missing)}: git refuses to commit", fixes)
    return ok("git identity", "user.name and user.email set")


def _location(root: Path, config: RalphConfig | None, store: str | None) -> str:
    """Where the workspace's events go, as ``ralph run`` chooses: ``store`` (``--store`` or
    ``RALPH_STORE``), else ``[store] url`` (relative to the workspace), else
    the default store (``.git/ralph/pipeline.db``)."""
    configured = None if config is None else config.store.url
    try:
        return locate_store(WorkspaceLayout(root=root), configured, store)
    except StoreError:
        return configured or ""  # a malformed url: check_store names what is wrong with it


def check_store(location: str) -> list[Check]:
    """The store opens: a SQLite file readable (or its folder writable, to create it), a
    PostgreSQL server reachable with the URL's credentials."""
    try:
        path = store_path(location)
    except StoreError as error:
        return [fail("store", str(error), "give a path, sqlite:///PATH or postgresql://")]
    if path is None:
        return [_postgres(location)]
    if path.is_file():
        if not os.access(path, os.R_OK | os.W_OK):
            return [fail("store", f"{path} is not readable and writable", f"chmod u+rw {path}")]
        return [ok("store", f"SQLite {path}")]
    parent = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        detail = f"cannot create {path}: {parent} is not a writable folder"
        return [fail("store", detail, "give a store in a writable folder (--store, [store] url)")]
    return [ok("store", f"SQLite {path} (created by the first run)")]


def _postgres(url: str) -> Check:
    """A PostgreSQL store: connect and ask one question (nothing is created or migrated)."""
    try:
        import psycopg
    except ImportError:
        fix = "pip install 'ralph-pipeline[postgres]'"
        return fail("store", "a PostgreSQL store needs psycopg", fix)
    from pipeline.handlers.store.postgres import describe_url

    label = describe_url(url)
    try:
        with psycopg.connect(url, connect_timeout=_STORE_TIMEOUT_S) as conn:
            version = conn.execute("SHOW server_version").fetchone()
    except (psycopg.Error, ValueError) as error:
        # psycopg quotes an unparsable URL whole: never its password
        reason = mask_password_of(url, " ".join(str(error).split())) or type(error).__name__
        fix = "start the server, or correct the URL (host, port, database, user)"
        return fail("store", f"{label}: cannot connect ({reason})", fix)
    return ok("store", f"{label} (PostgreSQL {version[0] if version else '?'})")


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
    configuration, the prompt, the final check and the gates, ``.ralph/``, the store, each
    agent, then the sandbox they run in."""
    root = root.resolve()
    # The programs the checks run themselves on the host (git, bwrap) are looked up on a PATH
    # without the work trees' folders, as a run looks them up: an agent may have put its own
    # there. The agents' and the checks' own programs are looked up as a run starts them.
    host = {**environ, "PATH": host_path(environ.get("PATH", os.defpath), work_trees(root))}
    checks = check_git(root, host, run)
    config_checks, config = check_config(root)
    checks += config_checks
    if config is not None:
        checks += check_prompt(root, config)
        checks += check_validate(root, config, environ, run)
        checks += check_gates(root, config, environ)
    checks += check_ralph_folder(root)
    checks += check_store(_location(root, config, store))
    if config is not None:
        checks += check_agents(root, config, environ, is_root=is_root, run=run)
        checks += check_sandbox(config, environ, host)
    return tuple(checks)
