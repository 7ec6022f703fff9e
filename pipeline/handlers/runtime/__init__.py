"""The runtime: handlers that carry out every effect in a real git workspace (I/O).

Its names are imported on first use, so that a command that needs one of them (the
workspace's layout, a git error) does not load every handler and the agents' presets."""

from pipeline.core._lazy import lazy_names

# ``typing`` is imported for the type checker only, as in ``pipeline.handlers``.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from pipeline.handlers.runtime._agents import MAX_ARGUMENT_BYTES, AgentInvoker
    from pipeline.handlers.runtime._collecting import Collector, collect_folder
    from pipeline.handlers.runtime._context import context_facts, file_unfiled, outside_facts
    from pipeline.handlers.runtime._failures import is_rate_limited
    from pipeline.handlers.runtime._git import (
        COST_TRAILER,
        EFFECT_TRAILER,
        MODEL_TRAILER,
        OWN_FOLDERS,
        GitError,
        GitHandler,
        GitPolicy,
        OwnFilesStagedError,
        UnsafePathError,
        commit_trailers,
        ensure_excluded,
        own_pathspecs,
        switch_branch,
    )
    from pipeline.handlers.runtime._gitcmd import (
        configured_drivers,
        git_dirs,
        git_out,
        run_git,
        run_git_bytes,
    )
    from pipeline.handlers.runtime._gitguard import GitGuard
    from pipeline.handlers.runtime._guidance import guidance_facts
    from pipeline.handlers.runtime._history import GitCommit, GitHistory, run_history
    from pipeline.handlers.runtime._layout import OUTPUT_FILES, WorkspaceLayout
    from pipeline.handlers.runtime._pinned import CommitWorld, Layering, Pinning
    from pipeline.handlers.runtime._prompts import render_prompt, template_text
    from pipeline.handlers.runtime._reports import Report, read_report
    from pipeline.handlers.runtime._run_setup import (
        RALPH_ONLY_VARIABLES,
        PromptSource,
        agent_environment,
        new_run_id,
        note_written,
        own_paths,
        ralph_executable,
        without_ralph_credentials,
    )
    from pipeline.handlers.runtime._runtime import Runtime
    from pipeline.handlers.runtime._sandbox_outcome import cut_off
    from pipeline.handlers.runtime._sandboxing import (
        SandboxChoice,
        SandboxUnavailableError,
        choose_sandbox,
        git_policy_in,
        model_endpoints,
    )
    from pipeline.handlers.runtime._schemas import load_hat_schemas, load_response_schemas
    from pipeline.handlers.runtime._screen import (
        MAX_FILE_BYTES,
        MAX_FILES,
        Gathered,
        gather_changes,
        untracked_baseline,
    )
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
    from pipeline.handlers.runtime._worktree_list import branch_worktrees, drop_scratch

__all__ = [
    "COST_TRAILER",
    "CUT_MARK",
    "EFFECT_TRAILER",
    "LOG_CAP_BYTES",
    "LOG_HEAD_BYTES",
    "MAX_ARGUMENT_BYTES",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MODEL_TRAILER",
    "OUTPUT_FILES",
    "OWN_FOLDERS",
    "RALPH_ONLY_VARIABLES",
    "TAIL_BYTES",
    "TAIL_LINES",
    "AgentInvoker",
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
    "OwnFilesStagedError",
    "Pinning",
    "PromptSource",
    "Report",
    "Runtime",
    "SandboxChoice",
    "SandboxUnavailableError",
    "UnsafePathError",
    "WorkspaceLayout",
    "agent_environment",
    "branch_worktrees",
    "cap_log",
    "choose_sandbox",
    "collect_folder",
    "commit_trailers",
    "configured_drivers",
    "context_facts",
    "cut_off",
    "drop_scratch",
    "ensure_excluded",
    "file_unfiled",
    "find_secrets",
    "gather_changes",
    "git_dirs",
    "git_out",
    "git_policy_in",
    "guidance_facts",
    "is_rate_limited",
    "load_hat_schemas",
    "load_response_schemas",
    "model_endpoints",
    "new_run_id",
    "note_written",
    "output_tail",
    "outside_facts",
    "own_paths",
    "own_pathspecs",
    "ralph_executable",
    "read_report",
    "render_prompt",
    "run_git",
    "run_git_bytes",
    "run_history",
    "switch_branch",
    "template_text",
    "untracked_baseline",
    "without_ralph_credentials",
]

_SOURCES = {
    "git_out": ("pipeline.handlers.runtime._gitcmd", "git_out"),
    "CommitWorld": ("pipeline.handlers.runtime._pinned", "CommitWorld"),
    "Layering": ("pipeline.handlers.runtime._pinned", "Layering"),
    "Pinning": ("pipeline.handlers.runtime._pinned", "Pinning"),
    "AgentInvoker": ("pipeline.handlers.runtime._agents", "AgentInvoker"),
    "COST_TRAILER": ("pipeline.handlers.runtime._git", "COST_TRAILER"),
    "CUT_MARK": ("pipeline.handlers.runtime._tail", "CUT_MARK"),
    "Collector": ("pipeline.handlers.runtime._collecting", "Collector"),
    "EFFECT_TRAILER": ("pipeline.handlers.runtime._git", "EFFECT_TRAILER"),
    "Gathered": ("pipeline.handlers.runtime._screen", "Gathered"),
    "GitCommit": ("pipeline.handlers.runtime._history", "GitCommit"),
    "GitError": ("pipeline.handlers.runtime._git", "GitError"),
    "GitGuard": ("pipeline.handlers.runtime._gitguard", "GitGuard"),
    "GitHandler": ("pipeline.handlers.runtime._git", "GitHandler"),
    "GitHistory": ("pipeline.handlers.runtime._history", "GitHistory"),
    "GitPolicy": ("pipeline.handlers.runtime._git", "GitPolicy"),
    "LOG_CAP_BYTES": ("pipeline.handlers.runtime._tail", "LOG_CAP_BYTES"),
    "LOG_HEAD_BYTES": ("pipeline.handlers.runtime._tail", "LOG_HEAD_BYTES"),
    "MAX_ARGUMENT_BYTES": ("pipeline.handlers.runtime._agents", "MAX_ARGUMENT_BYTES"),
    "MAX_FILES": ("pipeline.handlers.runtime._screen", "MAX_FILES"),
    "MAX_FILE_BYTES": ("pipeline.handlers.runtime._screen", "MAX_FILE_BYTES"),
    "MODEL_TRAILER": ("pipeline.handlers.runtime._git", "MODEL_TRAILER"),
    "OUTPUT_FILES": ("pipeline.handlers.runtime._layout", "OUTPUT_FILES"),
    "OWN_FOLDERS": ("pipeline.handlers.runtime._git", "OWN_FOLDERS"),
    "OwnFilesStagedError": ("pipeline.handlers.runtime._git", "OwnFilesStagedError"),
    "PromptSource": ("pipeline.handlers.runtime._run_setup", "PromptSource"),
    "RALPH_ONLY_VARIABLES": ("pipeline.handlers.runtime._run_setup", "RALPH_ONLY_VARIABLES"),
    "Report": ("pipeline.handlers.runtime._reports", "Report"),
    "Runtime": ("pipeline.handlers.runtime._runtime", "Runtime"),
    "SandboxChoice": ("pipeline.handlers.runtime._sandboxing", "SandboxChoice"),
    "SandboxUnavailableError": ("pipeline.handlers.runtime._sandboxing", "SandboxUnavailableError"),
    "TAIL_BYTES": ("pipeline.handlers.runtime._tail", "TAIL_BYTES"),
    "TAIL_LINES": ("pipeline.handlers.runtime._tail", "TAIL_LINES"),
    "UnsafePathError": ("pipeline.handlers.runtime._git", "UnsafePathError"),
    "WorkspaceLayout": ("pipeline.handlers.runtime._layout", "WorkspaceLayout"),
    "agent_environment": ("pipeline.handlers.runtime._run_setup", "agent_environment"),
    "branch_worktrees": ("pipeline.handlers.runtime._worktree_list", "branch_worktrees"),
    "cap_log": ("pipeline.handlers.runtime._tail", "cap_log"),
    "choose_sandbox": ("pipeline.handlers.runtime._sandboxing", "choose_sandbox"),
    "collect_folder": ("pipeline.handlers.runtime._collecting", "collect_folder"),
    "commit_trailers": ("pipeline.handlers.runtime._git", "commit_trailers"),
    "configured_drivers": ("pipeline.handlers.runtime._gitcmd", "configured_drivers"),
    "context_facts": ("pipeline.handlers.runtime._context", "context_facts"),
    "cut_off": ("pipeline.handlers.runtime._sandbox_outcome", "cut_off"),
    "drop_scratch": ("pipeline.handlers.runtime._worktree_list", "drop_scratch"),
    "ensure_excluded": ("pipeline.handlers.runtime._git", "ensure_excluded"),
    "file_unfiled": ("pipeline.handlers.runtime._context", "file_unfiled"),
    "find_secrets": ("pipeline.handlers.runtime._secrets", "find_secrets"),
    "gather_changes": ("pipeline.handlers.runtime._screen", "gather_changes"),
    "git_dirs": ("pipeline.handlers.runtime._gitcmd", "git_dirs"),
    "git_policy_in": ("pipeline.handlers.runtime._sandboxing", "git_policy_in"),
    "guidance_facts": ("pipeline.handlers.runtime._guidance", "guidance_facts"),
    "is_rate_limited": ("pipeline.handlers.runtime._failures", "is_rate_limited"),
    "load_hat_schemas": ("pipeline.handlers.runtime._schemas", "load_hat_schemas"),
    "load_response_schemas": ("pipeline.handlers.runtime._schemas", "load_response_schemas"),
    "model_endpoints": ("pipeline.handlers.runtime._sandboxing", "model_endpoints"),
    "new_run_id": ("pipeline.handlers.runtime._run_setup", "new_run_id"),
    "note_written": ("pipeline.handlers.runtime._run_setup", "note_written"),
    "output_tail": ("pipeline.handlers.runtime._tail", "output_tail"),
    "outside_facts": ("pipeline.handlers.runtime._context", "outside_facts"),
    "own_paths": ("pipeline.handlers.runtime._run_setup", "own_paths"),
    "own_pathspecs": ("pipeline.handlers.runtime._git", "own_pathspecs"),
    "ralph_executable": ("pipeline.handlers.runtime._run_setup", "ralph_executable"),
    "read_report": ("pipeline.handlers.runtime._reports", "read_report"),
    "render_prompt": ("pipeline.handlers.runtime._prompts", "render_prompt"),
    "run_git": ("pipeline.handlers.runtime._gitcmd", "run_git"),
    "run_git_bytes": ("pipeline.handlers.runtime._gitcmd", "run_git_bytes"),
    "run_history": ("pipeline.handlers.runtime._history", "run_history"),
    "switch_branch": ("pipeline.handlers.runtime._git", "switch_branch"),
    "template_text": ("pipeline.handlers.runtime._prompts", "template_text"),
    "untracked_baseline": ("pipeline.handlers.runtime._screen", "untracked_baseline"),
    "without_ralph_credentials": (
        "pipeline.handlers.runtime._run_setup",
        "without_ralph_credentials",
    ),
}
"""Where each public name is defined: (module, name)."""


__getattr__ = lazy_names(__name__, globals(), _SOURCES)
