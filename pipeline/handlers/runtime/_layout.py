"""Where a run keeps its files in the workspace (paths only, but for finding the git
directory and files older releases left).

Orchestrator metadata lives under ``.ralph/`` (each run's agent logs, the agents' events file);
agent-facing files live under ``.agent/`` (rendered prompts, the plan, review findings, the
outputs agents write, the completion marker). What a run cannot go on without lives in the git
directory (``.git/ralph/``): the default event store and each run's saved prompt and kept-out
paths, where ``git clean -fdx``, ``git stash -u`` and a branch switch never reach them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, final

if TYPE_CHECKING:  # ``ralph runs`` finds the store here without loading the events
    from pipeline.events import PromptKind

__all__ = ["OUTPUT_FILES", "WorkspaceLayout", "git_dirs", "git_location"]

OUTPUT_FILES = {
    "plan": "plan.md",
    "status": "status",
    "issues": "issues.md",
    "commit_message": "commit-message",
    "response": "response.json",
}
"""The files an agent writes into ``.agent/out/`` to report its work, by purpose."""


# A dataclass, not attrs: the lean ``ralph runs``, ``events`` and ``respond`` find the store
# here, and load dataclasses already (rich and orjson import it); attrs would add about a
# tenth to them.
@final
@dataclass(frozen=True, kw_only=True, slots=True)
class WorkspaceLayout:
    """The paths of one workspace, all under ``root`` (but ``group_record``)."""

    root: Path
    group_record: Path | None = None
    """Where the process group at work is recorded instead of :attr:`agent_group`: for a
    workspace that is made anew each time (the merge queue's scratch worktree), a place the
    next start finds."""

    @property
    def ralph_dir(self) -> Path:
        """Orchestrator metadata."""
        return self.root / ".ralph"

    @property
    def agent_dir(self) -> Path:
        """Files meant for agents."""
        return self.root / ".agent"

    @property
    def legacy_store(self) -> Path:
        """Where releases before the store moved into the git directory kept it."""
        return self.ralph_dir / "pipeline.db"

    @property
    def state_dir(self) -> Path:
        """ralph's own state out of an agent's ``git clean -fdx`` (which deletes the
        git-excluded ``.ralph/``, never ``.git/``): ``ralph`` in the worktree's git directory,
        or ``.ralph`` when ``root`` is not the top of a git worktree."""
        # Only at the top of a worktree: a folder inside one is not a workspace of its own.
        dirs = git_dirs(self.root) if (self.root / ".git").exists() else None
        return self.ralph_dir if dirs is None else dirs[0] / "ralph"

    @property
    def store(self) -> Path:
        """The default SQLite event store: ``pipeline.db`` in :attr:`state_dir`, or the legacy
        ``.ralph/pipeline.db`` while one exists there."""
        legacy = self.legacy_store
        return legacy if legacy.is_file() else self.state_dir / "pipeline.db"

    @property
    def written(self) -> Path:
        """The files ralph's own commands wrote in the work tree (reports), one a line."""
        return self.state_dir / "written"

    @property
    def agent_group(self) -> Path:
        """The record of the agent (or check) process group at work in this workspace."""
        if self.group_record is not None:
            return self.group_record
        return self.ralph_dir / "agent-group.json"

    @property
    def config(self) -> Path:
        """The workspace's ``ralph.toml``."""
        return self.root / "ralph.toml"

    def run_dir(self, run_id: str) -> Path:
        """Files of one run: its saved prompt and its agents' output logs."""
        return self.ralph_dir / "runs" / run_id

    def run_state(self, run_id: str, name: str) -> Path:
        """A file a run cannot go on without, in :attr:`state_dir`; a run started by an older
        release kept it in its :meth:`run_dir`, where it is found while no newer copy exists."""
        kept = self.state_dir / "runs" / run_id / name
        legacy = self.run_dir(run_id) / name
        return legacy if not kept.exists() and legacy.exists() else kept

    def started_runs(self) -> list[str]:
        """The runs started in this workspace, by the saved prompts they left (in
        :attr:`state_dir` or, from older releases, ``.ralph/runs``), oldest first."""
        found = set()
        for runs in (self.state_dir / "runs", self.ralph_dir / "runs"):
            if runs.is_dir():
                found |= {entry.name for entry in runs.iterdir() if (entry / "prompt.md").is_file()}
        return sorted(found)

    def saved_prompt(self, run_id: str) -> Path:
        """The user's prompt as the run started with it (every prompt and a resume read
        this copy)."""
        return self.run_state(run_id, "prompt.md")

    def agent_log(self, run_id: str, name: str) -> Path:
        """Where one invocation's output is kept."""
        return self.run_dir(run_id) / "logs" / f"{name}.log"

    def events_file(self, run_id: str) -> Path:
        """The file agents append their topics to (``RALPH_EVENTS_FILE``)."""
        return self.ralph_dir / f"events-{run_id}.jsonl"

    def prompt(self, kind: PromptKind) -> Path:
        """Where the ``kind`` prompt is rendered."""
        return self.agent_dir / "prompts" / f"{kind.value}.md"

    @property
    def output_dir(self) -> Path:
        """Where an agent writes its report; emptied before every invocation."""
        return self.agent_dir / "out"

    def output(self, purpose: str) -> Path:
        """One report file in :attr:`output_dir` (see :data:`OUTPUT_FILES`)."""
        return self.output_dir / OUTPUT_FILES[purpose]

    @property
    def plan(self) -> Path:
        """The current plan, kept from the planner's report."""
        return self.agent_dir / "PLAN.md"

    @property
    def issues(self) -> Path:
        """The latest review's findings, kept from the reviewer's report."""
        return self.agent_dir / "ISSUES.md"

    @property
    def completion_marker(self) -> Path:
        """Written when dev-fix ends a run: status, reason, time."""
        return self.agent_dir / "tmp" / "completion_marker"

    def relative(self, path: Path) -> str:
        """``path`` relative to the workspace root, as stored in facts."""
        return path.relative_to(self.root).as_posix()


def git_location(root: Path) -> tuple[Path, tuple[Path, Path]] | None:
    """The top of the work tree ``root`` lies in, with :func:`git_dirs`' two folders."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir() and not dot_git.is_symlink():
            # A main repository's own folder is its common folder: whatever a ``commondir``
            # file in it says (git would follow one) is not read.
            return folder, (dot_git, dot_git)
        if dot_git.is_file():
            try:
                text = dot_git.read_text("utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not text.startswith("gitdir:"):
                return None
            git_dir = (folder / text.removeprefix("gitdir:").strip()).resolve()
            return folder, (git_dir, _common_of(git_dir))
    return None


def _common_of(git_dir: Path) -> Path:
    """The common folder of a linked worktree's (or a submodule's) git folder, from where the
    folder lies (``COMMON/worktrees/NAME``, where ``git worktree add`` puts it), never from the
    ``commondir`` file in it."""
    parent = git_dir.parent
    if parent.name == "worktrees" and (git_dir / "commondir").is_file():
        return parent.parent
    return git_dir


def git_dirs(root: Path) -> tuple[Path, Path] | None:
    """The repository's git directory and common directory (they differ in a linked worktree),
    found from ``root`` without running git and without following a ``commondir`` file (see
    :func:`pipeline.handlers.runtime._gitcmd.pinned_locations`); None outside a repository."""
    found = git_location(root)
    return None if found is None else found[1]
