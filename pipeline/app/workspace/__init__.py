"""Running the pipeline in a workspace (a git repository with a ``ralph.toml``): checking it,
choosing its store, and driving a run there with the real runtime. ``ralph run``, ``resume``,
``demo`` and the queue's workers all start runs through here; ``ralph doctor`` checks one
with :func:`diagnose`.

Its names are imported on first use, so that a command reading a run does not load the
run driver, the doctor and the landing."""

from pipeline.core._lazy import lazy_names

# ``typing`` is imported for the type checker only, as in ``pipeline.handlers``.
TYPE_CHECKING = False

if TYPE_CHECKING:
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
    from pipeline.app.workspace._lock import WorkspaceBusyError, ensure_idle
    from pipeline.app.workspace._merge import (
        Landing,
        LandingInterruptedError,
        land_run,
        merge_worktrees,
        target_branch,
    )
    from pipeline.app.workspace._peek import peek_config
    from pipeline.app.workspace._reconcile import (
        Reconciliation,
        RecordedCommit,
        RunDivergedError,
        history_of,
        reconcile,
        recorded_commits,
    )
    from pipeline.app.workspace._run import (
        RunSetupError,
        Workspace,
        check_clean,
        drive,
        open_store,
        open_workspace,
        resolve_prompt,
        store_location,
    )
    from pipeline.app.workspace._worktrees import (
        RUN_BRANCH_PREFIX,
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
    "RUN_BRANCH_PREFIX",
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
    "Status",
    "Workspace",
    "WorkspaceBusyError",
    "WorktreeError",
    "check_clean",
    "diagnose",
    "drive",
    "drop_worktree",
    "ensure_idle",
    "find_worktree",
    "fork_folder",
    "fork_point",
    "fork_run",
    "history_of",
    "install_hints",
    "interrupt_run",
    "land_run",
    "merge_worktrees",
    "new_worktree",
    "open_store",
    "open_workspace",
    "peek_config",
    "reconcile",
    "recorded_commits",
    "remove_worktree",
    "resolve_prompt",
    "resume_hint",
    "run_worktrees",
    "store_location",
    "target_branch",
    "ticket_worktree",
    "worktree_diff",
    "would_fail",
]

_SOURCES = {
    "Check": ("pipeline.app.workspace._doctor", "Check"),
    "ForkError": ("pipeline.app.workspace._fork", "ForkError"),
    "HalfMadeError": ("pipeline.app.workspace._worktrees", "HalfMadeError"),
    "install_hints": ("pipeline.app.workspace._doctor_agents", "install_hints"),
    "Landing": ("pipeline.app.workspace._merge", "Landing"),
    "LandingInterruptedError": ("pipeline.app.workspace._merge", "LandingInterruptedError"),
    "NotInterruptedError": ("pipeline.app.workspace._interrupt_run", "NotInterruptedError"),
    "RUN_BRANCH_PREFIX": ("pipeline.app.workspace._worktrees", "RUN_BRANCH_PREFIX"),
    "Reconciliation": ("pipeline.app.workspace._reconcile", "Reconciliation"),
    "RecordedCommit": ("pipeline.app.workspace._reconcile", "RecordedCommit"),
    "RunDivergedError": ("pipeline.app.workspace._reconcile", "RunDivergedError"),
    "RunSetupError": ("pipeline.app.workspace._run", "RunSetupError"),
    "RunWorktree": ("pipeline.app.workspace._worktrees", "RunWorktree"),
    "Status": ("pipeline.app.workspace._doctor", "Status"),
    "Workspace": ("pipeline.app.workspace._run", "Workspace"),
    "WorkspaceBusyError": ("pipeline.app.workspace._lock", "WorkspaceBusyError"),
    "WorktreeError": ("pipeline.app.workspace._worktrees", "WorktreeError"),
    "check_clean": ("pipeline.app.workspace._run", "check_clean"),
    "diagnose": ("pipeline.app.workspace._doctor", "diagnose"),
    "drive": ("pipeline.app.workspace._run", "drive"),
    "drop_worktree": ("pipeline.app.workspace._worktrees", "drop_worktree"),
    "ensure_idle": ("pipeline.app.workspace._lock", "ensure_idle"),
    "find_worktree": ("pipeline.app.workspace._worktrees", "find_worktree"),
    "fork_folder": ("pipeline.app.workspace._fork", "fork_folder"),
    "fork_point": ("pipeline.app.workspace._fork", "fork_point"),
    "fork_run": ("pipeline.app.workspace._fork", "fork_run"),
    "history_of": ("pipeline.app.workspace._reconcile", "history_of"),
    "interrupt_run": ("pipeline.app.workspace._interrupt_run", "interrupt_run"),
    "land_run": ("pipeline.app.workspace._merge", "land_run"),
    "merge_worktrees": ("pipeline.app.workspace._merge", "merge_worktrees"),
    "new_worktree": ("pipeline.app.workspace._worktrees", "new_worktree"),
    "open_store": ("pipeline.app.workspace._run", "open_store"),
    "open_workspace": ("pipeline.app.workspace._run", "open_workspace"),
    "peek_config": ("pipeline.app.workspace._peek", "peek_config"),
    "reconcile": ("pipeline.app.workspace._reconcile", "reconcile"),
    "recorded_commits": ("pipeline.app.workspace._reconcile", "recorded_commits"),
    "remove_worktree": ("pipeline.app.workspace._worktrees", "remove_worktree"),
    "resolve_prompt": ("pipeline.app.workspace._run", "resolve_prompt"),
    "resume_hint": ("pipeline.app.workspace._fork", "resume_hint"),
    "run_worktrees": ("pipeline.app.workspace._worktrees", "run_worktrees"),
    "store_location": ("pipeline.app.workspace._run", "store_location"),
    "target_branch": ("pipeline.app.workspace._merge", "target_branch"),
    "ticket_worktree": ("pipeline.app.workspace._worktrees", "ticket_worktree"),
    "worktree_diff": ("pipeline.app.workspace._worktrees", "worktree_diff"),
    "would_fail": ("pipeline.app.workspace._doctor", "would_fail"),
}
"""Where each public name is defined: (module, name)."""


__getattr__ = lazy_names(__name__, globals(), _SOURCES)
