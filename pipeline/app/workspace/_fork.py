"""``ralph fork``: a new run from the first N facts of another, in a git worktree of its own
at the commit recorded by then; the original run, its store and its work tree are untouched
(I/O: git, files and stores).

The fork's log is the source's first N facts with ``RunStarted`` naming the fork, then a
``RunForked`` fact (source, N, commit, branch). It lives in the new worktree's own default
store (a linked worktree has its own git directory, so its own ``ralph`` folder), with the
source's saved prompt (or ``--prompt``), its kept-out paths, and the first bytes of its events
file the log has read, so ``ralph resume -C DIR`` goes on exactly from the state at N. The
fork's log and its worktree agree from the start: its copied commits are the source's, on the
fork's branch (``reconcile`` takes them by their source's trailers).
"""

from __future__ import annotations

import functools
import shutil
from datetime import UTC, datetime
from pathlib import Path

import attrs

from pipeline import PipelineError
from pipeline.app.workspace._carry import carry_setup
from pipeline.app.workspace._peek import peek_config, peeked_store
from pipeline.app.workspace._worktrees import (
    FORK_BRANCH_PREFIX,
    WorktreeError,
    filling,
    making,
)
from pipeline.core.config import ConfigError, parse_config
from pipeline.core.effects import MaterializePrompt
from pipeline.core.state import Phase, PipelineState, is_terminal
from pipeline.engine import existing_store
from pipeline.events import (
    AgentName,
    CommitCreated,
    CommitSkipped,
    Count,
    Instant,
    InvocationStarted,
    PipelineEvent,
    RebaseSucceeded,
    Role,
    RunForked,
    RunId,
    RunStarted,
    ScreenBaseRecorded,
    is_model_name,
)
from pipeline.handlers.redaction import mask_password_of
from pipeline.handlers.runtime import (
    GitError,
    WorkspaceLayout,
    digest_of,
    git_out,
    new_run_id,
    read_own,
)
from pipeline.handlers.store import open_store_at, store_path
from pipeline.orchestration import next_step
from pipeline.reducers import fold, reduce

__all__ = ["ForkError", "fork_folder", "fork_point", "fork_run", "resume_hint"]


class ForkError(PipelineError, ValueError):
    """The fork cannot be made (a point outside the log, a run that had ended by then, a
    target that exists, git refusing); nothing was made."""


_git = functools.partial(git_out, error=ForkError)
"""ralph's own git in a root (no hooks, filters or fsmonitor); a failure is a ``ForkError``."""


def fork_point(events: list[PipelineEvent], at: int) -> int:
    """The latest point at or before ``at`` a fork can go on from: the run about to make a
    prompt, with its work tree as its last commit left it (no agent has worked on it since,
    and nothing since is uncommitted). The fork's worktree is that commit, and the prompt is
    made afresh there, so the fork needs no file of the moment. 0: there is none."""
    state, best, dirty = PipelineState(), 0, False
    for number, event in enumerate(events[:at], start=1):
        if isinstance(event, CommitCreated | CommitSkipped):
            dirty = False
        elif isinstance(event, InvocationStarted) and event.role in _CHANGING:
            dirty = True
        state = reduce(state, event)
        if dirty or (is_terminal(state) and state.phase is not Phase.INTERRUPTED):
            continue
        if state.progress.fixing:
            continue  # a review's fix reads the review's findings, which no commit holds
        if isinstance(next_step(state), MaterializePrompt):
            best = number
    return best


_CHANGING = frozenset({Role.DEVELOPER, Role.FIXER})
"""The roles whose work changes the work tree (until it is committed)."""


def fork_run(
    root: Path,
    run_id: str | None,
    at: int,
    *,
    to: Path | None = None,
    prompt: str | None = None,
    store: str | None = None,
    agent: str | None = None,
    model: str | None = None,
) -> tuple[RunId, Path, int]:
    """Fork run ``run_id`` (default: the latest) of workspace ``root`` after its first ``at``
    facts (or the nearest earlier :func:`fork_point`) into a new worktree ``to`` (default:
    beside ``root``); ``prompt`` replaces the saved prompt, ``agent`` goes first in every
    chain (an agent the fork's ``ralph.toml`` configures) and every invocation asks for
    ``model``. Returns the fork's run id, its worktree and the point it was forked at."""
    root = root.resolve()
    layout = WorkspaceLayout(root=root)
    location = existing_store(root, peeked_store(root, store), ForkError)
    with open_store_at(location, must_exist=True, read_only=True) as opened:
        source = opened.choose_run(run_id)
        events = list(opened.read(source))
    if not 1 <= at <= len(events):
        raise ForkError(f"--at {at}: run {source} holds {len(events)} facts (1 to that)")
    asked, at = at, fork_point(events, at)
    if at == 0:
        raise ForkError(f"run {source} made no prompt by fact {asked}: fork it at a later point")
    state = fold(events[:at])
    if prompt is not None and not prompt.strip():
        raise ForkError("the prompt is empty")
    if model is not None and not is_model_name(model):
        raise ForkError(f"--model {model!r} is not a model name")
    if _git(root, "rev-parse", "--show-prefix").strip():
        raise ForkError(f"{root} is a folder inside its repository: fork from its top")
    fork = RunId(new_run_id(datetime.now(UTC)))
    target = (to or fork_folder(root, fork)).resolve()
    if target.exists():
        raise ForkError(f"{target} exists: name another folder with --to")
    if target.is_relative_to(root):
        raise ForkError(f"{target} is inside the workspace: name a folder outside it")
    plan = _plan_of(layout, state)
    commit = _head_at(events[:at]) or _base(root, events)
    branch = f"{FORK_BRANCH_PREFIX}{fork}"
    own = WorkspaceLayout(root=target)
    # A remover waits for the maker: what it would find half-made is being made. The worktree
    # stays locked as half-made until its log is written; what fails meanwhile removes it.
    try:
        with making(root), filling(root, target, branch, commit, what="the fork", error=ForkError):
            _carry_files(root, target, layout, source, fork, state.intake.events_offset, prompt)
            if agent is not None:
                _check_agent(target, agent)
            if plan is not None:
                own.plan.parent.mkdir(parents=True, exist_ok=True)
                own.plan.write_bytes(plan)
            said = None if prompt is None else own.saved_prompt(fork)
            forked = RunForked(
                source_run=source,
                at_sequence=Count(at),
                commit=commit,
                branch=branch,
                at=Instant(datetime.now(UTC).replace(microsecond=0)),
                agent=None if agent is None else AgentName(agent),
                model=model,
                prompt_digest=None if said is None else digest_of(said.read_bytes()),
            )
            started = events[0]
            assert isinstance(started, RunStarted), "a run's log starts with RunStarted"
            copied = [attrs.evolve(started, run_id=fork), *events[1:at], forked]
            with open_store_at(_fork_store(target, store)) as opened:
                opened.append(fork, 0, copied)
    except (GitError, OSError, WorktreeError) as error:
        raise ForkError(f"the fork could not be made: {error}") from error
    return fork, target, at


def fork_folder(root: Path, fork: str) -> Path:
    """Where fork ``fork`` of workspace ``root`` goes unless ``--to`` says otherwise."""
    return root.parent / f"{root.name}-fork-{fork}"


def resume_hint(fork: str, target: Path, store: str | None) -> str:
    """The command that goes on with a fork made with ``store`` (``--store``; None: the
    workspace's): ``ralph resume FORK -C TARGET``, with ``--store`` when the fork's log went
    to a PostgreSQL store its ``ralph.toml`` does not name (its password left out)."""
    hint = f"ralph resume {fork} -C {target}"
    if store is None or store_path(store) is not None:
        return hint
    # No usable ralph.toml counts as naming none: the resume says what is wrong with it.
    config = peek_config(target)
    if config is None or config.store.url is None:
        hint += f" --store {mask_password_of(store, store)}"
    return hint


def _fork_store(target: Path, store: str | None) -> str:
    """Where the fork's log goes: where ``ralph resume -C TARGET`` looks for it. A
    PostgreSQL store given for the source holds the fork too (its id is new), as does one
    the fork's ``ralph.toml`` names; else the worktree's own SQLite store."""
    if store is not None and store_path(store) is None:
        return store
    return peeked_store(target)


def _check_agent(target: Path, agent: str) -> None:
    """Refuse ``agent`` unless the fork's configuration (its worktree's ``ralph.toml``)
    configures it."""
    path = WorkspaceLayout(root=target).config
    try:
        config = parse_config(path.read_text("utf-8"), str(path))
    except (OSError, ConfigError) as error:
        raise ForkError(f"--agent needs the fork's ralph.toml: {error}") from error
    if agent not in config.agents:
        known = ", ".join(sorted(config.agents)) or "none"
        raise ForkError(f"--agent {agent!r}: {path} configures no such agent (it has: {known})")


def _head_at(events: list[PipelineEvent]) -> str | None:
    """The branch head the run had left by the end of ``events``: its last commit, or the
    head its last rebase made, whichever came later."""
    head = None
    for event in events:
        if isinstance(event, CommitCreated):
            head = event.sha
        elif isinstance(event, RebaseSucceeded):
            head = event.head
    return head


def _plan_of(layout: WorkspaceLayout, state: PipelineState) -> bytes | None:
    """The plan the run had at the fork point (the prompts read it), when the workspace still
    holds that very plan; refused when it holds another (the fork would plan-less)."""
    digest = state.ledger.plan_digest
    if digest is None:
        return None
    try:
        plan = read_own(layout.plan)
    except (OSError, ValueError):
        plan = b""
    if digest_of(plan) != digest:
        raise ForkError(
            "the workspace's plan is no longer the one the run had at that point (a later "
            "plan replaced it): fork at a point after the last plan"
        )
    return plan


def _base(root: Path, events: list[PipelineEvent]) -> str:
    """The commit the run started from: the base its screen recorded, else its first
    commit's parent, else HEAD (a run that never committed left HEAD where it found it)."""
    screened = next((e.sha for e in events if isinstance(e, ScreenBaseRecorded)), None)
    if screened:
        return screened
    first = next((e.sha for e in events if isinstance(e, CommitCreated)), None)
    return _git(
        root, "rev-parse", "--verify", "--end-of-options", f"{first}^" if first else "HEAD"
    ).strip()


def _carry_files(
    root: Path,
    target: Path,
    layout: WorkspaceLayout,
    source: str,
    fork: str,
    events_read: int,
    prompt: str | None,
) -> None:
    """What the fork needs that git does not carry: what any new worktree of the workspace
    needs (:func:`carry_setup`), the run's own state (its saved prompt, kept-out paths) under
    the fork's id, and the part of its events file the log has read."""
    carry_setup(root, target)
    own = WorkspaceLayout(root=target)
    kept = layout.saved_prompt(source).parent
    if kept.is_dir():
        shutil.copytree(kept, own.state_dir / "runs" / fork, symlinks=True)
    if prompt is not None:
        own.saved_prompt(fork).parent.mkdir(parents=True, exist_ok=True)
        own.saved_prompt(fork).write_text(prompt.strip() + "\n", "utf-8")
    if events_read:
        with layout.events_file(source).open("rb") as read:
            published = read.read(events_read)
        own.events_file(fork).parent.mkdir(parents=True, exist_ok=True)
        own.events_file(fork).write_bytes(published)
