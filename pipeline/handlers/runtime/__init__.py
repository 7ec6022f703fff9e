"""The runtime: handlers that carry out every effect in a real git workspace (I/O).

Its names are imported on first use, so that a command that needs one of them (the
workspace's layout, a git error) does not load every handler and the agents' presets."""

from pipeline.handlers._lazy import lazy_names

# ``typing`` is imported for the type checker only, as in ``pipeline.handlers``.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from pipeline.handlers.runtime._context import file_unfiled, outside_facts
    from pipeline.handlers.runtime._gates import run_gate
    from pipeline.handlers.runtime._git import (
        COST_TRAILER,
        MODEL_TRAILER,
        OWN_FOLDERS,
        GitCommit,
        GitError,
        GitHandler,
        GitHistory,
        GitPolicy,
        UnsafePathError,
        ensure_excluded,
        own_pathspecs,
        run_history,
        switch_branch,
    )
    from pipeline.handlers.runtime._gitcmd import (
        EFFECT_TRAILER,
        git_out,
        holds,
        revision,
        run_git,
        run_git_bytes,
        work_trees,
    )
    from pipeline.handlers.runtime._gitguard import GitGuard
    from pipeline.handlers.runtime._global_config import global_config_secrets
    from pipeline.handlers.runtime._layout import WorkspaceLayout
    from pipeline.handlers.runtime._ownfiles import read_own, write_own
    from pipeline.handlers.runtime._pinned import CommitWorld, Layering, Pinning
    from pipeline.handlers.runtime._prompting import digest_of
    from pipeline.handlers.runtime._prompts import render_prompt, template_text
    from pipeline.handlers.runtime._run_setup import (
        PromptSource,
        new_run_id,
        note_written,
        own_paths,
    )
    from pipeline.handlers.runtime._runtime import Runtime
    from pipeline.handlers.runtime._sandbox_outcome import cut_off
    from pipeline.handlers.runtime._sandboxing import (
        SandboxChoice,
        SandboxUnavailableError,
        agents_needs,
        choose_sandbox,
        git_policy_in,
    )
    from pipeline.handlers.runtime._schemas import load_hat_schemas, load_response_schemas
    from pipeline.handlers.runtime._screen import (
        MAX_FILE_BYTES,
        MAX_FILES,
        Gathered,
        gather_changes,
        untracked_baseline,
    )
    from pipeline.handlers.runtime._screening import Collector, collect_folder
    from pipeline.handlers.runtime._secrets import find_secrets
    from pipeline.handlers.runtime._tail import (
        CUT_MARK,
        LOG_CAP_BYTES,
        LOG_HEAD_BYTES,
        TAIL_BYTES,
        TAIL_LINES,
        cap_log,
        output_tail,
    )
    from pipeline.handlers.runtime._worktree_list import (
        drop_scratch,
        fresh_scratch,
        worktree_entries,
    )

__all__ = [
    "COST_TRAILER",
    "CUT_MARK",
    "EFFECT_TRAILER",
    "LOG_CAP_BYTES",
    "LOG_HEAD_BYTES",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MODEL_TRAILER",
    "OWN_FOLDERS",
    "TAIL_BYTES",
    "TAIL_LINES",
    "Collector",
    "CommitWorld",
    "Gathered",
    "GitCommit",
    "GitError",
    "GitGuard",
    "GitHandler",
    "GitHistory",
    "GitPolicy",
    "Layering",
    "Pinning",
    "PromptSource",
    "Runtime",
    "SandboxChoice",
    "SandboxUnavailableError",
    "UnsafePathError",
    "WorkspaceLayout",
    "agents_needs",
    "cap_log",
    "choose_sandbox",
    "collect_folder",
    "cut_off",
    "digest_of",
    "drop_scratch",
    "ensure_excluded",
    "file_unfiled",
    "find_secrets",
    "fresh_scratch",
    "gather_changes",
    "git_out",
    "git_policy_in",
    "global_config_secrets",
    "holds",
    "load_hat_schemas",
    "load_response_schemas",
    "new_run_id",
    "note_written",
    "output_tail",
    "outside_facts",
    "own_paths",
    "own_pathspecs",
    "read_own",
    "render_prompt",
    "revision",
    "run_gate",
    "run_git",
    "run_git_bytes",
    "run_history",
    "switch_branch",
    "template_text",
    "untracked_baseline",
    "work_trees",
    "worktree_entries",
    "write_own",
]

__getattr__ = lazy_names(__name__, globals())
