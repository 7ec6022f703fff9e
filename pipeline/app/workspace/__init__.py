"""Running the pipeline in a workspace (a git repository with a ``ralph.toml``): checking it,
choosing its store, and driving a run there with the real runtime. ``ralph run``, ``resume``,
``demo`` and the queue's workers all start runs through here; ``ralph doctor`` checks one
with :func:`diagnose`.

Its names are imported on first use, so that a command reading a run does not load the
run driver, the doctor and the landing."""

from pipeline.handlers._lazy import lazy_names

# ``typing`` is imported for the type checker only, as in ``pipeline.handlers``.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from pipeline.app.workspace._carry import SetupFileError, setup_files, write_setup
    from pipeline.app.workspace._doctor import Check, Status, diagnose, would_fail
    from pipeline.app.workspace._doctor_agents import install_hints
    from pipeline.app.workspace._fork import (
        ForkError,
        fork_folder,
        fork_point,
        fork_run,
        resume_hint,
    )
    from pipeline.app.workspace._interrupt_run import NotInterruptedError, interrupt_run
    from pipeline.app.workspace._lock import WorkspaceBusyError, ensure_idle, flocked, read_lock
    from pipeline.app.workspace._merge import (
        Landing,
        LandingInterruptedError,
        hiding_workdir,
        land_remote,
        land_run,
        merge_worktrees,
    )
    from pipeline.app.workspace._peek import locate_store, peek_config
    from pipeline.app.workspace._python_module import missing_module
    from pipeline.app.workspace._reconcile import (
        Reconciliation,
        RecordedCommit,
        RunDivergedError,
        history_of,
        pending_commit,
        reconcile,
        recorded_commits,
    )
    from pipeline.app.workspace._run import (
        RunSetupError,
        Workspace,
        check_clean,
        check_identity,
        drive,
        open_store,
        open_workspace,
        resolve_prompt,
        store_location,
    )
    from pipeline.app.workspace._worktrees import (
        HalfMadeError,
        RunWorktree,
        WorktreeError,
        drop_worktree,
        find_worktree,
        new_worktree,
        remove_worktree,
        run_worktrees,
        ticket_worktree,
        worktree_diff,
    )

__all__ = [
    "Check",
    "ForkError",
    "HalfMadeError",
    "Landing",
    "LandingInterruptedError",
    "NotInterruptedError",
    "Reconciliation",
    "RecordedCommit",
    "RunDivergedError",
    "RunSetupError",
    "RunWorktree",
    "SetupFileError",
    "Status",
    "Workspace",
    "WorkspaceBusyError",
    "WorktreeError",
    "check_clean",
    "check_identity",
    "diagnose",
    "drive",
    "drop_worktree",
    "ensure_idle",
    "find_worktree",
    "flocked",
    "fork_folder",
    "fork_point",
    "fork_run",
    "hiding_workdir",
    "history_of",
    "install_hints",
    "interrupt_run",
    "land_remote",
    "land_run",
    "locate_store",
    "merge_worktrees",
    "missing_module",
    "new_worktree",
    "open_store",
    "open_workspace",
    "peek_config",
    "pending_commit",
    "read_lock",
    "reconcile",
    "recorded_commits",
    "remove_worktree",
    "resolve_prompt",
    "resume_hint",
    "run_worktrees",
    "setup_files",
    "store_location",
    "ticket_worktree",
    "worktree_diff",
    "would_fail",
    "write_setup",
]

__getattr__ = lazy_names(__name__, globals())
