"""Starting and resuming runs in a workspace: `ralph run`, `resume`, `demo`, the workers (I/O).

Everything a run needs is checked before any agent starts: the configuration (every mistake
one line naming the key), the prompt, and the git repository.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import attrs
from attrs import frozen

from pipeline import PipelineError
from pipeline.app.workspace import _reconcile as reconciling
from pipeline.app.workspace._dirty import dirty_message, dirty_paths
from pipeline.app.workspace._lock import WorkspaceLock, hold_workspace
from pipeline.app.workspace._peek import locate_store
from pipeline.app.workspace._programs import missing_programs
from pipeline.core.config import (
    Durability,
    RalphConfig,
    parse_config,
    require_chains,
    topology_problems,
)
from pipeline.core.state import PipelineState
from pipeline.engine import (
    DurableRun,
    Interruption,
    Observers,
    RunObserver,
    RunOptions,
    RunWorld,
    load_state,
    run_durable,
    utc_now,
)
from pipeline.events import (
    Digest,
    Instant,
    Json,
    PipelineEvent,
    Role,
    RunId,
    RunStarted,
    SandboxMode,
)
from pipeline.handlers.agents import known_pitfalls
from pipeline.handlers.intake import write_marker
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.runtime import (
    GitError,
    PromptSource,
    Runtime,
    SandboxChoice,
    UnsafePathError,
    WorkspaceLayout,
    choose_sandbox,
    cut_off,
    digest_of,
    ensure_excluded,
    file_unfiled,
    git_policy_in,
    load_hat_schemas,
    load_response_schemas,
    outside_facts,
    own_paths,
    run_git,
    switch_branch,
)
from pipeline.handlers.store import EventStore, NamedStore, open_store_at, store_path

__all__ = [
    "RunSetupError",
    "Workspace",
    "check_clean",
    "check_identity",
    "drive",
    "open_store",
    "open_workspace",
    "resolve_prompt",
    "store_location",
]


class RunSetupError(PipelineError, ValueError):
    """The run cannot start as asked; the message says what to fix."""


@frozen(kw_only=True)
class Workspace:
    """A workspace ready to run in: its layout, its parsed configuration and the response
    schemas that configuration names (read and checked once, before the run starts)."""

    layout: WorkspaceLayout
    config: RalphConfig
    config_digest: Digest
    schemas: Mapping[Role, Json]
    hat_schemas: Mapping[str, Json] = MappingProxyType({})
    """A topology's hats' response schemas, by hat name."""


def _read_text(path: Path, *, missing: str, unreadable: str) -> str:
    """The UTF-8 text of a file a run needs; ``RunSetupError`` with ``missing`` when it does not
    exist, or ``unreadable`` plus the reason when it cannot be read."""
    try:
        return path.read_text("utf-8")
    except FileNotFoundError as error:
        raise RunSetupError(missing) from error
    except (OSError, UnicodeDecodeError) as error:
        raise RunSetupError(f"{unreadable}: {error}") from error


def _refuse_known_pitfalls(config: RalphConfig, source: str) -> None:
    """Raise :class:`RunSetupError` when an agent the chains use would fail whatever it is
    asked (a CLI's bypass mode as root, ...): one line per problem, with its fix."""
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    problems: dict[str, None] = {}  # an agent in several chains has its problem once
    for role in Role:
        hat_args = config.hats.for_role(role).args
        for name in config.chain_for(role):
            agent = config.agents.get(name)
            if agent is not None:
                # The hat's arguments are the agent's too when it works for this role.
                worn = attrs.evolve(agent, args=(*agent.args, *hat_args))
                problems.update(dict.fromkeys(known_pitfalls(name, worn, os.environ, is_root)))
    if problems:
        raise RunSetupError(f"{source}: " + "\n".join(problems))


def open_workspace(
    root: Path, *, config_text: str | None = None, config_source: str | None = None
) -> Workspace:
    """Check ``root`` (a git repository with a valid ``ralph.toml``) and load its config
    (``config_text`` instead of the file's, for a run submitted to the queue or a preset's
    workflow over the file; ``config_source`` names that text in errors).

    Raises ``ConfigError`` for configuration mistakes and :class:`RunSetupError` otherwise,
    also when an agent the chains use is known to fail in this environment
    (:func:`~pipeline.handlers.agents.known_pitfalls`).
    """
    root = root.resolve()
    if not root.is_dir():
        raise RunSetupError(f"{root} is not a directory")
    layout = WorkspaceLayout(root=root)
    path = layout.config
    if config_text is None:
        text = _read_text(
            path,
            missing=f"{path}: not found; run `ralph init` there to write a starter configuration",
            unreadable=f"{path}: cannot read it",
        )
        source = str(path)
    else:
        text, source = config_text, config_source or f"{path} (as submitted)"
    config = parse_config(text, source)
    require_chains(config, source)
    _refuse_known_pitfalls(config, source)
    missing = missing_programs(config, root, os.environ)
    if missing:
        raise RunSetupError(f"{source}: " + "; ".join(missing))
    schemas = load_response_schemas(config, root, source)  # a bad one stops the run now
    hat_schemas = load_hat_schemas(config, root, source)
    try:
        ensure_excluded(root)
    except UnsafePathError as error:
        raise RunSetupError(str(error)) from error
    except GitError as error:
        raise RunSetupError(f"{root} is not a git repository ({error}); run `git init`") from error
    return Workspace(
        layout=layout,
        config=config,
        config_digest=digest_of(text.encode()),
        schemas=MappingProxyType(schemas),
        hat_schemas=MappingProxyType(hat_schemas),
    )


def resolve_prompt(
    workspace: Workspace, prompt: str | None, prompt_file: Path | None
) -> PromptSource:
    """The prompt of a new run: ``--prompt``, else ``--prompt-file``, else the configured file."""
    if prompt is not None and prompt_file is not None:
        raise RunSetupError("give --prompt or --prompt-file, not both")
    if prompt is not None:
        if not prompt.strip():
            raise RunSetupError("--prompt is empty")
        return PromptSource(text=prompt)
    root = workspace.layout.root
    # --prompt-file is relative to where the command runs; the configured file to the workspace.
    path = prompt_file.resolve() if prompt_file is not None else root / workspace.config.prompt_file
    content = _read_text(
        path,
        missing=f"no prompt: {path} does not exist (write the task there, or give --prompt)",
        unreadable=f"cannot read the prompt {path}",
    )
    if not content.strip():
        raise RunSetupError(f"the prompt {path} is empty")
    if path.is_symlink():
        raise RunSetupError(
            f"the prompt {path} is a symbolic link (to {os.readlink(path)}); ralph makes the "
            "prompt read-only during a run and never changes a file through a link: replace it "
            "by a regular file"
        )
    # Not resolved: the path is the file in the workspace, never a link's target.
    return PromptSource(path=Path(os.path.abspath(path)))


def store_location(workspace: Workspace, store: str | None = None) -> str:
    """Where the workspace's events go: ``store`` (``--store``), else ``[store] url`` (relative
    to the workspace), else the default store (``.git/ralph/pipeline.db``)."""
    return locate_store(workspace.layout, workspace.config.store.url, store)


def open_store(workspace: Workspace, store: str | None = None) -> NamedStore:
    """The workspace's store (see :func:`store_location`), opened with the durability its
    ``[store]`` asks for."""
    synced = workspace.config.store.durability is not Durability.PROCESS
    return open_store_at(store_location(workspace, store), synced=synced)


def _store_file(workspace: Workspace, store: str | None = None) -> tuple[Path, ...]:
    """The SQLite file the workspace's events go to (see :func:`store_location`), as an
    absolute path, when it is a file: it is ralph's own, never the person's or a commit's."""
    path = store_path(store_location(workspace, store))
    # A relative path left by store_location is a --store, opened relative to this process.
    return () if path is None else (path.absolute(),)


def _store_files(workspace: Workspace, store: EventStore | None) -> tuple[Path, ...]:
    """The SQLite file the run's events go to, when it is a file (never to be committed)."""
    located = getattr(store, "path", None)
    return (located,) if isinstance(located, Path) else _store_file(workspace)


def check_clean(
    workspace: Workspace, store: str | None, *, allow_dirty: bool, remote: bool = False
) -> tuple[str, ...]:
    """The person's uncommitted changes a new run must leave alone: :class:`RunSetupError`
    naming them unless ``allow_dirty`` (then they are returned, for ``drive``'s
    ``kept_paths``); ralph's own files do not count (``store``: ``--store``). For a
    ``remote`` ticket, which runs from HEAD elsewhere, only tracked files count."""
    root = workspace.layout.root
    own = own_paths(workspace.layout, workspace.config.prompt_file, _store_file(workspace, store))
    try:
        dirty = dirty_paths(root, own, untracked=not remote)
    except GitError as error:
        raise RunSetupError(f"cannot tell what is uncommitted in {root}: {error}") from error
    if dirty and not allow_dirty:
        raise RunSetupError(dirty_message(root, dirty, remote=remote))
    return dirty


def check_identity(workspace: Workspace) -> None:
    """:class:`RunSetupError` when git cannot say who commits in the workspace: a run would
    otherwise plan and develop (an agent's time and tokens) and stop at its first commit."""
    root = workspace.layout.root
    try:
        run_git(root, "var", "GIT_AUTHOR_IDENT")
    except GitError as error:
        raise RunSetupError(
            f"git does not know who commits in {root}, and ralph commits each iteration: "
            'git config user.name "Your Name" && git config user.email you@example.com '
            "(add --global for every repository), then start (or resume) the run"
        ) from error


def drive(
    workspace: Workspace,
    *,
    prompt: PromptSource | None,
    run_id: RunId | None,
    observer: RunObserver | None = None,
    store: EventStore | None = None,
    signals: bool = True,
    interruption: Interruption | None = None,
    kept_paths: tuple[str, ...] = (),
    leased: bool = False,
    hand_back: Callable[[Instant], None] | None = None,
) -> DurableRun:
    """Start (``prompt``) or resume (``run_id``) a run and drive it until it stops.

    ``store`` defaults to the workspace's own (:func:`open_store`); a store given is left
    open. With ``signals``, SIGINT and SIGTERM interrupt the run cleanly (main thread only),
    through ``interruption`` when given (its ``reason`` then tells the caller why it stopped).
    ``kept_paths``: paths a new run's commits leave alone (see :func:`check_clean`).
    ``observer`` is told everything the run does, the warnings of its setup included.

    Only one run at a time drives a workspace: :class:`WorkspaceBusyError` when another holds it
    (``leased``: a queue worker's run, which shares the workspace with other workers only,
    their leases deciding between them). ``hand_back``: a queue worker's, told of a long wait
    for a provider limit's reset (``Runtime.hand_back``).
    """
    # A worker's lease decides between workers; the lock keeps hand-started runs apart.
    with hold_workspace(workspace.layout.ralph_dir, run_id, shared=leased) as lock:
        config = workspace.config
        on_warning = None if observer is None else observer.warning
        try:
            stores = _store_files(workspace, store)
            sandboxing = _settle_sandbox(config, workspace.layout, stores, on_warning)
        except GitError as error:
            raise RunSetupError(f"cannot work on branch {config.branch!r}: {error}") from error
        runtime = Runtime(
            layout=workspace.layout,
            config=workspace.config,
            config_digest=workspace.config_digest,
            clock=utc_now,
            prompt=prompt,
            run_id=run_id,
            schemas=workspace.schemas,
            hat_schemas=workspace.hat_schemas,
            own_files=stores,
            kept_paths=kept_paths,
            sandboxing=sandboxing,
            hand_back=hand_back,
        )
        interruption = Interruption() if interruption is None else interruption
        workspace.layout.ralph_dir.mkdir(parents=True, exist_ok=True)
        if run_id is not None:
            # A resume goes on writing to its own run's file; the marker points there again.
            events_file = workspace.layout.events_file(run_id)
            if events_file.is_file():
                write_marker(workspace.layout.root, events_file)
        with contextlib.ExitStack() as stack:
            if store is None:
                store = stack.enter_context(open_store(workspace))
            if run_id is not None:
                _check_reconciled(workspace, store, run_id)
            # People's answers and guidance reach the run through its store only.
            runtime.answers = opened = store
            if prompt is not None and prompt.path is not None and run_id is None:
                runtime.prompt_mode = _left_read_only(store, prompt.path, on_warning)
            if run_id is None and on_warning is not None:
                for problem in topology_problems(workspace.config.loop_policy()):
                    on_warning(f"the topology: {problem.message}")
            if signals:
                stack.enter_context(interruption.on_signals())
            named = _Naming(lock)
            done = run_durable(
                store,
                runtime,
                run_id=run_id,
                observer=named if observer is None else Observers(named, observer),
                world=_WorkspaceWorld(runtime, opened),
                options=RunOptions(
                    interruption=interruption,
                    redactor=Redactor.from_environment(
                        os.environ, workspace.config.redaction.variables
                    ),
                ),
            )
            file_unfiled(opened, done.state)  # the last agent's notes, with no prompt after them
            return done


class _Naming(RunObserver):
    """Writes a new run's id into the workspace's lock once it is known."""

    __slots__ = ("_lock",)

    def __init__(self, lock: WorkspaceLock) -> None:
        self._lock = lock

    def event(self, state: PipelineState, event: PipelineEvent, /) -> None:
        """Name the run in the lock when it starts."""
        if isinstance(event, RunStarted):
            self._lock.name_run(event.run_id)


class _WorkspaceWorld(RunWorld):
    """What a workspace's run asks of the world: its runtime's sandbox on a resume, and the
    store's guidance and notes before each prompt."""

    __slots__ = ("_runtime", "_store")

    def __init__(self, runtime: Runtime, store: EventStore) -> None:
        self._runtime = runtime
        self._store = store

    def resumed(self) -> Sequence[PipelineEvent]:
        """The sandbox the agents run in now."""
        return self._runtime.sandbox_checked(self._runtime.clock())

    def news(self, state: PipelineState, /) -> Sequence[PipelineEvent]:
        """People's guidance and the context book's new notes."""
        return outside_facts(self._store, state, self._runtime.clock)


def _check_reconciled(workspace: Workspace, store: EventStore, run_id: RunId) -> None:
    """Raise :class:`RunDivergedError` when the run's log and git (or its events file)
    disagree: a resume then would do a step twice or build on history that is gone."""
    events = list(store.read(run_id))
    state, recorded = reconciling.recorded_commits(events)
    root = workspace.layout.root
    try:
        history = reconciling.history_of(root, run_id, events)
    except GitError as error:
        raise RunSetupError(f"cannot read the git history of {root}: {error}") from error
    found = reconciling.reconcile(run_id, state, recorded, history, workspace.layout)
    if found.problems:
        raise reconciling.RunDivergedError(
            f"run {run_id} was not resumed: its log and the workspace disagree: "
            + "; ".join(found.problems)
        )


def _cut_off(sandboxing: SandboxChoice) -> list[str]:
    """A warning for each agent CLI the sandbox cuts off from everything, its model too."""
    found = []
    for name, needs in sandboxing.agents.items():
        why = cut_off(sandboxing.policy, needs)
        if why is not None:
            found.append(
                f"sandbox: agents.{name} ({needs.preset}) can reach nothing in the sandbox "
                f"({why}), so its CLI cannot reach its model: every invocation of it will fail"
            )
    return found


def _settle_sandbox(
    config: RalphConfig,
    layout: WorkspaceLayout,
    stores: tuple[Path, ...],
    on_warning: Callable[[str], None] | None,
) -> SandboxChoice:
    """The sandbox a run of ``config`` runs in (``on_warning`` told when ``auto`` leaves it
    off, and of each agent CLI it cuts off from its model), with the workspace switched to
    the run's ``branch`` in it: a post-checkout hook is the repository's code. Raises
    :class:`~pipeline.handlers.runtime.SandboxUnavailableError` as :func:`choose_sandbox`
    does, and ``GitError`` when the switch fails."""
    sandboxing = choose_sandbox(config, workspace=layout.root)
    if on_warning is not None:
        if sandboxing.probe is None and sandboxing.policy.mode is SandboxMode.AUTO:
            on_warning(f"sandbox: {sandboxing.said}")
        for problem in () if sandboxing.probe is None else _cut_off(sandboxing):
            on_warning(problem)
    if config.branch is not None:
        switch_branch(layout.root, config.branch, git_policy_in(sandboxing, layout, config, stores))
    return sandboxing


# A run makes the prompt file in its workspace read-only while it works and gives the file its
# mode back when it ends. A run that never finished leaves the file read-only, and the next run
# would then give back that read-only mode: it looks the earlier run up in the store instead,
# and gives back the mode the file had before.
_RECENT_RUNS = 20
"""How many of the store's latest runs a new run looks through for one that left its prompt
file read-only."""


def _left_read_only(
    store: EventStore, path: Path, on_warning: Callable[[str], None] | None
) -> int | None:
    """The mode ``path`` had before an earlier run that never finished made it read-only
    (None when no such run holds it): a new run gives that mode back when it ends. Only the
    latest runs are looked at: a shared store may hold thousands, and the run that left the
    file read-only is one of the last in its workspace. A file its owner may write again (a
    later run gave its mode back, or the person did) is held by no run: a run that never
    finished stays in the store, and would otherwise be named at every run after it."""
    try:
        if path.lstat().st_mode & stat.S_IWUSR:  # a link is refused later, never followed
            return None
    except OSError:
        return None  # no file yet: the run says so when it reads the prompt
    target = path.resolve()
    for summary in reversed(store.runs()[-_RECENT_RUNS:]):
        state, _ = load_state(store, summary.run_id)
        protected = state.ledger.protected_prompt
        if protected is None or Path(protected.path).resolve() != target:
            continue
        if on_warning is not None:
            on_warning(
                f"{path} was left read-only by run {summary.run_id}, which never finished; "
                f"this run gives it back its mode {protected.original_mode:#o} when it ends "
                f"(run {summary.run_id} can no longer be resumed safely once this one changed "
                "the work tree)"
            )
        return protected.original_mode
    return None
