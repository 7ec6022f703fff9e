"""A hostile agent against ralph's own git: planted code never runs in it, ralph's files never
reach a commit, the exclude file is never written through a symlink, and ``rebase_onto`` never
reaches git as an option. Real ``ralph run``, real shell-script agents, real repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipeline.app.workspace import open_workspace
from pipeline.core.effects import CreateCommit, EffectId, Rebase
from pipeline.core.state import SpendLine
from pipeline.engine import utc_now
from pipeline.engine.simulation import fake_clock
from pipeline.events import (
    GIT_RESTORED_TOPIC,
    CommitCreated,
    Digest,
    GitMetadataRestored,
    RebaseStarted,
    WorkspaceIoError,
)
from pipeline.handlers.runtime import (
    EFFECT_TRAILER,
    GitGuard,
    GitHandler,
    GitPolicy,
    Runtime,
    UnsafePathError,
    WorkspaceLayout,
    ensure_excluded,
)
from tests.runtime.workspace import git, make_workspace, ralph, stored_events

REPORTS = """
mkdir -p .agent/out
printf '1. do it' > .agent/out/plan.md
printf 'completed\\ndone' > .agent/out/status
: > .agent/out/issues.md
printf 'Do it' > .agent/out/commit-message
"""
"""Shell lines that report success for whichever role runs (each reads only its own file)."""

COUNT_CALLS = """
n=$(cat .ralph/calls 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > .ralph/calls
cat > ".ralph/prompt-$n.md"
"""
"""Shell lines that number this call and keep the prompt (given on stdin) as prompt-N.md."""


def _agent(root: Path, body: str) -> list[str]:
    script = root.parent / "agent.sh"
    script.write_text("#!/bin/sh\nset -e\n" + body)
    script.chmod(0o755)
    return [str(script)]


def _plant(root: Path, marker: Path) -> str:
    """Shell lines planting every kind of code git might run, each writing its name to
    ``marker`` when run; also a prepare-commit-msg hook that strips ralph's trailer."""
    spy = root.parent / "spy.sh"
    spy.write_text(f'#!/bin/sh\necho "$(basename "$0") $*" >> {marker}\ncat\n')
    spy.chmod(0o755)
    lines = []
    for hook in ("prepare-commit-msg", "post-commit", "reference-transaction", "post-index-change"):
        lines.append(f"cp {spy} .git/hooks/{hook}")
    # A hook that also takes the trailer crash recovery relies on out of the message.
    lines.append(
        "printf '#!/bin/sh\\n"
        f"echo prepare-commit-msg-strip >> {marker}\\n"
        'grep -v Ralph-Effect "$1" > "$1.x"; mv "$1.x" "$1"\\n\' '
        "> .git/hooks/prepare-commit-msg"
    )
    lines += [
        "chmod +x .git/hooks/*",
        "mkdir -p evil-hooks",
        f"cp {spy} evil-hooks/post-commit",
        "git config core.hooksPath evil-hooks",
        f"git config core.fsmonitor {spy}",
        "printf '* filter=evil\\n' > .gitattributes",
        f"git config filter.evil.clean {spy}",
        f"git config filter.evil.process {spy}",
        f"git config gpg.program {spy}",
        "git config commit.gpgsign true",
    ]
    return "\n".join(lines) + "\n"


def test_code_an_agent_plants_in_the_repository_never_runs_in_ralphs_git(
    tmp_path: Path,
) -> None:
    """An agent plants hooks (in .git/hooks and through core.hooksPath), an fsmonitor, a clean
    filter and a signing program: none runs during the whole `ralph run` (the marker file
    stays absent), the commit keeps its Ralph-Effect trailer, the change to the repository's
    git files is a fact, is undone, and the next prompt says so."""
    root = tmp_path / "repo"
    root.mkdir()
    marker = tmp_path / "ran"
    agent = _agent(
        root,
        COUNT_CALLS
        + 'if [ "$n" -eq 1 ]; then\n'
        + _plant(root, marker)
        + "fi\n"
        + "echo work >> app.py\n"
        + REPORTS,
    )
    make_workspace(root, scripts={}, agents={"main": agent})
    done = ralph("run", "--plain", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists(), marker.read_text()
    message = git(root, "log", "-1", "--format=%B")
    assert f"{EFFECT_TRAILER}: " in message
    events = stored_events(root)
    restored = [e for e in events if isinstance(e, GitMetadataRestored)]
    assert len(restored) == 1
    assert {".git/config", ".git/hooks/prepare-commit-msg", ".git/hooks/post-commit"} <= set(
        restored[0].paths
    )
    assert not (root / ".git" / "hooks" / "prepare-commit-msg").exists()
    config = (root / ".git" / "config").read_text()
    assert "hooksPath" not in config
    assert "evil" not in config
    assert "[gpg]" not in config
    assert any(isinstance(e, CommitCreated) for e in events)
    second = (root / ".ralph" / "prompt-2.md").read_text()
    assert GIT_RESTORED_TOPIC in second or "undid your changes" in second
    assert ".git/config" in second


def test_planted_code_is_switched_off_even_when_it_is_still_in_place(tmp_path: Path) -> None:
    """Without the guard's restore (a process the agent left behind may write after it), the
    git handler's own commands still run none of it: hooks, hooksPath, fsmonitor, gpg signing;
    a path that needs a filter of the repository's config fails the commit (it would go in
    unfiltered) instead of running the filter."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    ensure_excluded(root)
    marker = tmp_path / "ran"
    subprocess.run(["sh", "-c", _plant(root, marker)], cwd=root, check=True)
    assert not marker.exists()
    (root / "app.py").write_text("work\n")
    effect = CreateCommit(
        effect_id=EffectId(3), message="Add app", may_exist=False, spent=SpendLine(), models=()
    )
    (refused,) = GitHandler(root=root, clock=fake_clock()).commit(effect)
    assert isinstance(refused, WorkspaceIoError), refused
    assert "clean filter 'evil' failed" in refused.message
    assert not marker.exists(), marker.read_text()
    git(root, "config", "--remove-section", "filter.evil")
    (created,) = GitHandler(root=root, clock=fake_clock()).commit(effect)
    assert isinstance(created, CommitCreated), created
    assert not marker.exists(), marker.read_text()
    assert f"{EFFECT_TRAILER}: 3" in git(root, "log", "-1", "--format=%B")


def test_an_agent_that_empties_the_exclude_file_gets_none_of_ralphs_files_committed(
    tmp_path: Path,
) -> None:
    """The exclude file emptied, a .gitignore un-ignoring ralph's folders, and ralph's files
    staged by the agent itself: the commit holds the agent's work only."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    ensure_excluded(root)
    (root / ".git" / "info" / "exclude").write_text("")
    (root / ".gitignore").write_text("!/.ralph/\n!/.agent/\n")
    for own in (".ralph/pipeline.db", ".ralph/pipeline.db-wal", ".ralph/runs/r/logs/a.log"):
        (root / own).parent.mkdir(parents=True, exist_ok=True)
        (root / own).write_text("ralph's\n")
    (root / ".agent" / "prompts").mkdir(parents=True)
    (root / ".agent" / "prompts" / "developer.md").write_text("prompt\n")
    (root / "app.py").write_text("work\n")
    (root / "ralph.toml").write_text("# changed by the agent\n")
    git(root, "add", "--force", ".ralph/pipeline.db", ".agent/prompts/developer.md")
    handler = GitHandler(root=root, clock=fake_clock(), keep_out=("ralph.toml", "PROMPT.md"))
    effect = CreateCommit(
        effect_id=EffectId(3), message="Add app", may_exist=False, spent=SpendLine(), models=()
    )
    (created,) = handler.commit(effect)
    assert isinstance(created, CommitCreated), created
    committed = set(git(root, "show", "--name-only", "--format=", "HEAD").split())
    assert committed == {"app.py", ".gitignore"}
    assert git(root, "diff", "--cached", "--name-only") == ""


def test_a_guard_puts_back_hooks_config_and_info_without_following_links(
    tmp_path: Path,
) -> None:
    """Files changed, added and removed, a folder replaced by a symlink to a folder outside:
    all put back as the snapshot had them, and the outside folder is left untouched."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    ensure_excluded(root)
    guard = GitGuard.take(root)
    assert guard is not None
    assert guard.undo() == ()
    git_dir = root / ".git"
    before_config = (git_dir / "config").read_bytes()
    before_exclude = (git_dir / "info" / "exclude").read_bytes()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine\n")
    (git_dir / "config").write_text("[core]\n\thooksPath = x\n")
    (git_dir / "hooks" / "post-commit").write_text("#!/bin/sh\n")
    samples = sorted(p.name for p in (git_dir / "hooks").iterdir() if p.name != "post-commit")
    (git_dir / "info" / "exclude").unlink()
    os.rename(git_dir / "info", tmp_path / "old-info")
    (git_dir / "info").symlink_to(outside)
    undone = guard.undo()
    assert ".git/config" in undone
    assert ".git/hooks/post-commit" in undone
    assert ".git/info" in undone
    assert (git_dir / "config").read_bytes() == before_config
    assert not (git_dir / "info").is_symlink()
    assert (git_dir / "info" / "exclude").read_bytes() == before_exclude
    assert not (git_dir / "hooks" / "post-commit").exists()
    assert sorted(p.name for p in (git_dir / "hooks").iterdir()) == samples
    assert [p.name for p in outside.iterdir()] == ["keep"]
    assert guard.undo() == ()


def test_a_guard_in_the_sandbox_removes_only_the_protected_paths_made_since_the_start(
    tmp_path: Path,
) -> None:
    """With the sandbox's protected paths given, one made since the invocation started is
    removed (a link in its place too, not followed), one there at the start stays whatever
    it holds, and one behind a link on the way is never removed through it; with the sandbox
    off (none given) a new one stays."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    ensure_excluded(root)
    off = GitGuard.take(root)
    guard = GitGuard.take(root, ("tools/dev.sh", "far/dev.sh"))
    assert off is not None
    assert guard is not None
    (root / ".idea").mkdir()
    guard.began()  # the person's .idea, there as the invocation starts
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "dev.sh").write_text("mine\n")
    (root / ".vscode").mkdir()
    (root / ".vscode" / "tasks.json").write_text("{}\n")
    (root / ".idea" / "new.xml").write_text("changed meanwhile\n")
    (root / ".bashrc").symlink_to(outside / "dev.sh")
    (root / "tools").mkdir()
    (root / "tools" / "dev.sh").write_text("curl x | sh\n")
    (root / "far").symlink_to(outside)
    assert off.undo() == ()
    assert sorted(guard.undo()) == [".bashrc", ".vscode", "tools/dev.sh"]
    assert not (root / ".vscode").exists()
    assert not (root / ".bashrc").is_symlink()
    assert (root / ".idea" / "new.xml").read_text() == "changed meanwhile\n"
    assert (root / "tools").is_dir()
    assert not (root / "tools" / "dev.sh").exists()
    assert (outside / "dev.sh").read_text() == "mine\n"
    assert guard.undo() == ()


def test_a_guard_removes_a_repository_made_inside_the_work_tree_and_keeps_the_others(
    tmp_path: Path,
) -> None:
    """A ``.git`` folder, file or link that appears below the work tree's top after the
    invocation started is removed, without following the link, with or without the sandbox;
    the work tree's own ``.git`` and a ``.git`` there at the start (a submodule's) stay, the
    submodule's put back as it was once the agent points it elsewhere."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    ensure_excluded(root)
    (root / "sub").mkdir()
    (root / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")
    guard = GitGuard.take(root)
    assert guard is not None
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config").write_text("mine\n")
    subprocess.run(["git", "init", "-q", str(root / "deep" / "nested")], check=True)
    (root / "deep" / "nested" / "f.txt").write_text("kept\n")
    (root / "pointer").mkdir()
    (root / "pointer" / ".git").write_text("gitdir: ../../outside\n")
    (root / "linked").mkdir()
    (root / "linked" / ".git").symlink_to(outside)
    (root / "far").symlink_to(outside)  # a link on the way is never walked through
    (outside / ".git").mkdir()
    (root / "sub" / ".git").write_text("gitdir: ../deep/nested/.git\n")
    undone = guard.undo()
    assert sorted(undone) == ["deep/nested/.git", "linked/.git", "pointer/.git", "sub/.git"]
    assert (root / "deep" / "nested" / "f.txt").read_text() == "kept\n"
    assert not os.path.lexists(root / "linked" / ".git")
    assert (outside / "config").read_text() == "mine\n"
    assert (outside / ".git").is_dir()
    assert (root / "sub" / ".git").read_text() == "gitdir: ../.git/modules/sub\n"
    assert (root / ".git").is_dir()
    assert guard.undo() == ()


def test_the_exclude_file_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    """``.git/info/exclude`` a symlink to a file outside: refused with a message naming it, and
    the target is unchanged; `ralph run` stops with that message before any agent starts."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    target = tmp_path / "secret"
    target.write_text("mine\n")
    exclude = root / ".git" / "info" / "exclude"
    exclude.unlink()
    exclude.symlink_to(target)
    with pytest.raises(UnsafePathError, match="symlink") as refused:
        ensure_excluded(root)
    assert str(exclude) in str(refused.value)
    assert target.read_text() == "mine\n"
    done = ralph("run", "--plain", cwd=root)
    assert done.returncode != 0
    assert "symlink" in done.stderr + done.stdout
    assert target.read_text() == "mine\n"


def test_rebase_onto_that_looks_like_an_option_is_refused_at_parse_time(tmp_path: Path) -> None:
    """``rebase_onto = "--exec=..."``: `ralph run` exits 2 with one line naming the key, and
    nothing ran; the git handler, handed such a value anyway, passes it as a revision."""
    marker = tmp_path / "ran"
    root = make_workspace(
        tmp_path / "repo",
        scripts={},
        agents={"main": ["true"]},
        extra=f'rebase_onto = "--exec=touch {marker}"',
    )
    done = ralph("run", "--plain", cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "rebase_onto" in done.stderr
    assert not WorkspaceLayout(root=root).store.exists()
    facts = GitHandler(root=root, clock=fake_clock()).rebase(
        Rebase(effect_id=EffectId(1), onto=f"--exec=touch {marker}")
    )
    assert isinstance(facts[0], RebaseStarted)
    assert not marker.exists()


def _dirty_workspace(tmp_path: Path) -> Path:
    """A workspace whose agent adds app.py, with the person's own edit to README.md and an
    untracked notes.txt made before the run."""
    root = tmp_path / "repo"
    root.mkdir()
    agent = _agent(root, "echo work >> app.py\n" + REPORTS)
    make_workspace(root, scripts={}, agents={"main": agent})
    (root / "README.md").write_text("the person's edit\n")
    (root / "notes.txt").write_text("the person's notes\n")
    return root


def test_a_new_run_on_a_dirty_tree_is_refused_naming_the_paths(tmp_path: Path) -> None:
    """The person's uncommitted edit and untracked file: `ralph run` exits 2 before writing
    anything, naming both paths and the ways on (stash, --allow-dirty); ralph's own files
    (an untracked ralph.toml and PROMPT.md, as `ralph init` leaves them) do not count."""
    root = _dirty_workspace(tmp_path)
    git(root, "rm", "--quiet", "--cached", "ralph.toml", "PROMPT.md")
    git(root, "commit", "--quiet", "-m", "untrack ralph's files")
    done = ralph("run", "--plain", cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "README.md" in message
    assert "notes.txt" in message
    assert "ralph.toml" not in message.replace(str(root), "")
    assert "stash" in message
    assert "--allow-dirty" in message
    assert not WorkspaceLayout(root=root).store.exists()
    (root / "README.md").write_text("a repository\n")
    (root / "notes.txt").unlink()
    done = ralph("run", "--plain", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr


def test_allow_dirty_keeps_the_persons_changes_out_of_the_runs_commits(tmp_path: Path) -> None:
    """With --allow-dirty the run commits the agent's work only; the person's edit and file
    stay as they were, uncommitted."""
    root = _dirty_workspace(tmp_path)
    done = ralph("run", "--plain", "--allow-dirty", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    committed = set(git(root, "log", "--name-only", "--format=", "HEAD~1..HEAD").split())
    assert committed == {"app.py"}
    assert "README.md" in git(root, "diff", "--name-only").split()
    assert "notes.txt" in git(root, "ls-files", "--others", "--exclude-standard").split()
    assert (root / "README.md").read_text() == "the person's edit\n"


def test_a_run_whose_agent_empties_the_exclude_file_commits_none_of_ralphs_files(
    tmp_path: Path,
) -> None:
    """An agent that empties .git/info/exclude, un-ignores ralph's folders in .gitignore and
    stages them itself with `git add -f`: no commit of the run holds the store, its WAL, the
    logs or the prompts."""
    root = tmp_path / "repo"
    root.mkdir()
    agent = _agent(
        root,
        ": > .git/info/exclude\n"
        "printf '!/.ralph/\\n!/.agent/\\n' > .gitignore\n"
        "echo work >> app.py\n" + REPORTS + "git add -f .ralph .agent\n",
    )
    make_workspace(root, scripts={}, agents={"main": agent})
    done = ralph("run", "--plain", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    committed = set(git(root, "log", "--name-only", "--format=", "HEAD~1..HEAD").split())
    assert "app.py" in committed
    assert not [p for p in committed if p.startswith((".ralph/", ".agent/"))], committed


def test_an_exclusion_pathspec_keeps_out_exactly_its_path(tmp_path: Path) -> None:
    """Paths with glob characters, spaces and a leading '!' are kept out literally; a path
    that merely matches them as a pattern is still added."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    ensure_excluded(root)
    (root / "d ir").mkdir()
    for name in ("my[1]*.db", "my1x.db", "d ir/!x", "!top"):
        (root / name).write_text(name)
    handler = GitHandler(root=root, clock=fake_clock(), keep_out=("my[1]*.db", "d ir/!x", "!top"))
    effect = CreateCommit(
        effect_id=EffectId(3), message="Add", may_exist=False, spent=SpendLine(), models=()
    )
    (created,) = handler.commit(effect)
    assert isinstance(created, CommitCreated), created
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["my1x.db"]


def test_a_resumed_run_keeps_the_paths_its_start_kept_out(tmp_path: Path) -> None:
    """The paths --allow-dirty kept out are read back from the run's folder on resume, so the
    resumed run's commits leave them alone too."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    workspace = open_workspace(root)
    run_dir = workspace.layout.run_dir("r1")
    run_dir.mkdir(parents=True)
    (run_dir / "kept-out").write_text("README.md\0notes.txt")
    (root / "README.md").write_text("the person's edit\n")
    (root / "app.py").write_text("work\n")
    runtime = Runtime(
        layout=workspace.layout,
        config=workspace.config,
        config_digest=Digest("0"),
        clock=utc_now,
        run_id="r1",
    )
    effect = CreateCommit(
        effect_id=EffectId(3), message="Add app", may_exist=False, spent=SpendLine(), models=()
    )
    facts = runtime(effect)
    assert isinstance(facts[-1], CommitCreated), facts
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["app.py"]


def test_run_hooks_lets_the_repositorys_own_hooks_run(tmp_path: Path) -> None:
    """``[git] run_hooks = true``: the post-commit hook the person installed runs in ralph's
    commit (pre-commit still does not: ralph commits --no-verify)."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    ensure_excluded(root)
    marker = tmp_path / "ran"
    for hook in ("post-commit", "pre-commit"):
        path = root / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        path.chmod(0o755)
    (root / "app.py").write_text("work\n")
    handler = GitHandler(root=root, clock=fake_clock(), policy=GitPolicy(run_hooks=True))
    (created,) = handler.commit(
        CreateCommit(
            effect_id=EffectId(3), message="Add", may_exist=False, spent=SpendLine(), models=()
        )
    )
    assert isinstance(created, CommitCreated), created
    assert marker.read_text() == "post-commit\n"


def test_no_command_of_ralphs_that_shows_a_diff_runs_a_diff_program_of_the_repositorys(
    tmp_path: Path,
) -> None:
    """An agent can configure an external diff (``diff.external``) or a textconv filter
    (``.gitattributes`` and ``diff.NAME.textconv``): ralph's ``git diff``, ``log -p`` and
    ``show`` run neither, whatever flags the caller gave."""
    from pipeline.handlers.runtime import GitPolicy, run_git

    root = make_workspace(tmp_path / "repo", scripts={}, agents={"main": ["true"]})
    marker = tmp_path / "ran"
    (root / "notes.txt").write_text("one\n")
    git(root, "add", "notes.txt")
    git(root, "commit", "--quiet", "-m", "notes")
    (root / "notes.txt").write_text("two\n")
    git(root, "config", "diff.external", f"sh -c 'echo external >> {marker}'")
    git(root, "config", "diff.planted.textconv", f"sh -c 'echo textconv >> {marker}; cat \"$0\"'")
    (root / ".gitattributes").write_text("*.txt diff=planted\n")
    for args in (("diff",), ("diff", "HEAD~1"), ("log", "-p", "-1"), ("show", "HEAD")):
        shown = run_git(root, *args, policy=GitPolicy())
        assert "notes" in shown.stdout, args
        assert not marker.exists(), (args, marker.read_text())
    # The same commands as a person runs them do run the planted programs.
    subprocess.run(["git", "diff"], cwd=root, capture_output=True, check=True)
    assert marker.exists()
