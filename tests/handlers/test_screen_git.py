"""The screen's change set gathered from real git repositories: the agent's own commits, staged,
unstaged and untracked changes, renames, links and binary files, ralph's own folders left out,
a baseline for files untracked at the start, the file limit, and the screen over all of it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType

import pytest

from pipeline.core.screening import (
    ChangeStatus,
    FileChange,
    ScreenKind,
    ScreenRules,
    StatusEntry,
    screen,
    tree_dirty,
)
from pipeline.events import RebaseSucceeded, ScreenBaseRecorded
from pipeline.handlers.runtime import (
    MAX_FILE_BYTES,
    MAX_FILES,
    Gathered,
    GitError,
    GitPolicy,
    ensure_excluded,
    find_secrets,
    gather_changes,
    untracked_baseline,
)
from pipeline.handlers.runtime._screening import RunScreen
from tests.runtime.workspace import commit_all, make_workspace

POLICY = GitPolicy()

TESTS = """import pytest


def test_add():
    assert 1 + 1 == 2


def test_div():
    assert 4 / 2 == 2
"""

AWS_KEY = "AKIAJ5Q7R2D9EXAMPLEZ"


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a committed test file and app; ralph's folders in info/exclude."""
    root = make_workspace(tmp_path / "repo", scripts={}, agents={"a": ["true"]})
    ensure_excluded(root)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    commit_all(root, "the project")
    return root


def gather(
    root: Path,
    base: str | None,
    *,
    baseline: Mapping[str, str] = MappingProxyType({}),
    max_files: int = MAX_FILES,
    max_bytes: int = MAX_FILE_BYTES,
) -> Gathered:
    """The change set with nothing but ralph's own folders left out."""
    return gather_changes(
        root,
        base,
        policy=POLICY,
        excludes=(),
        baseline=baseline,
        max_files=max_files,
        max_bytes=max_bytes,
    )


def by_path(gathered: Gathered) -> dict[str, FileChange]:
    return {c.path: c for c in gathered.changes}


def test_nothing_changed_is_an_empty_change_set(repo: Path) -> None:
    gathered = gather(repo, git(repo, "rev-parse", "HEAD"))
    assert gathered == Gathered(changes=(), incomplete=False, dirty=())


def test_the_agents_own_commit_is_seen_from_the_base(repo: Path) -> None:
    """Changes the agent committed itself are in the diff from the base, not from HEAD."""
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "rm", "-q", "tests/test_calc.py")
    git(repo, "commit", "-q", "-m", "tests are slow")
    (deleted,) = gather(repo, base).changes
    assert deleted == FileChange(
        path="tests/test_calc.py",
        old_path=None,
        status=ChangeStatus.DELETED,
        old_text=TESTS,
        new_text=None,
    )
    assert gather(repo, git(repo, "rev-parse", "HEAD")).changes == ()


def test_staged_and_unstaged_changes_carry_both_texts(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "lib.py").write_text("X = 1\n")
    git(repo, "add", "lib.py")
    (repo / "lib.py").write_text("X = 2\n")  # staged, then changed again: the work tree counts
    (repo / "app.py").write_text("def add(a, b):\n    return b + a\n")
    changes = by_path(gather(repo, base))
    assert changes == {
        "app.py": FileChange(
            path="app.py",
            old_path=None,
            status=ChangeStatus.MODIFIED,
            old_text="def add(a, b):\n    return a + b\n",
            new_text="def add(a, b):\n    return b + a\n",
        ),
        "lib.py": FileChange(
            path="lib.py",
            old_path=None,
            status=ChangeStatus.ADDED,
            old_text=None,
            new_text="X = 2\n",
        ),
    }


def test_untracked_files_are_added_and_ignored_ones_are_not(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.txt").write_text("artifact\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "notes.md").write_text("# notes\n")
    changes = by_path(gather(repo, base))
    assert set(changes) == {".gitignore", "docs/notes.md"}
    assert changes["docs/notes.md"] == FileChange(
        path="docs/notes.md",
        old_path=None,
        status=ChangeStatus.ADDED,
        old_text=None,
        new_text="# notes\n",
    )


def test_a_staged_rename_keeps_both_texts_and_gives_no_hit(repo: Path) -> None:
    """``git mv`` of a test file keeping its tests: a rename, and the screen finds nothing."""
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "mv", "tests/test_calc.py", "tests/test_arithmetic.py")
    (renamed,) = gather(repo, base).changes
    assert renamed == FileChange(
        path="tests/test_arithmetic.py",
        old_path="tests/test_calc.py",
        status=ChangeStatus.RENAMED,
        old_text=TESTS,
        new_text=TESTS,
    )
    assert screen((renamed,), ScreenRules()) == ()


def test_a_plain_move_is_a_deletion_and_an_addition_and_gives_no_hit(repo: Path) -> None:
    """``mv`` without git: the old path deleted, the new one untracked; the tests survive."""
    base = git(repo, "rev-parse", "HEAD")
    (repo / "tests" / "test_calc.py").rename(repo / "tests" / "test_arithmetic.py")
    changes = gather(repo, base).changes
    assert [(c.path, c.status) for c in changes] == [
        ("tests/test_arithmetic.py", ChangeStatus.ADDED),
        ("tests/test_calc.py", ChangeStatus.DELETED),
    ]
    assert screen(changes, ScreenRules()) == ()


def test_a_link_is_never_read_through(repo: Path, tmp_path: Path) -> None:
    """A link to a file outside holding a secret has no text; a folder replaced by a link to
    a folder outside is not read through either: no secret is found."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "credentials").write_text(f'key = "{AWS_KEY}"\n')
    (outside / "app.py").write_text(f'KEY = "{AWS_KEY}"\n')
    base = git(repo, "rev-parse", "HEAD")
    (repo / "credentials").symlink_to(outside / "credentials")
    (repo / "lib").mkdir()
    (repo / "lib" / "app.py").write_text("x = 1\n")
    commit_all(repo, "a library")
    (repo / "lib" / "app.py").unlink()
    (repo / "lib").rmdir()
    (repo / "lib").symlink_to(outside)
    changes = by_path(gather(repo, base))
    assert changes["credentials"] == FileChange(
        path="credentials", old_path=None, status=ChangeStatus.ADDED, old_text=None, new_text=None
    )
    assert changes["lib"].new_text is None
    assert "lib/app.py" not in changes  # added and gone again since the base
    assert find_secrets(tuple(changes.values())) == ()


def test_a_file_under_a_linked_folder_is_not_read(repo: Path, tmp_path: Path) -> None:
    """A tracked file whose folder became a link: deleted, its new text never read."""
    (repo / "lib").mkdir()
    (repo / "lib" / "app.py").write_text("x = 1\n")
    commit_all(repo, "a library")
    base = git(repo, "rev-parse", "HEAD")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text(f'KEY = "{AWS_KEY}"\n')
    (repo / "lib" / "app.py").unlink()
    (repo / "lib").rmdir()
    (repo / "lib").symlink_to(outside)
    changes = by_path(gather(repo, base))
    assert changes["lib/app.py"] == FileChange(
        path="lib/app.py",
        old_path=None,
        status=ChangeStatus.DELETED,
        old_text="x = 1\n",
        new_text=None,
    )
    assert find_secrets(tuple(changes.values())) == ()


def test_binary_and_oversized_files_have_no_text(repo: Path) -> None:
    """A NUL byte makes a file binary; a file over the limit is not read at all; bytes that
    are not UTF-8 are read as U+FFFD."""
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    commit_all(repo, "a logo")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\1")
    (repo / "big.txt").write_text("x" * 101)
    (repo / "latin.py").write_bytes(b"# caf\xe9\ndef test_x():\n    assert 1\n")
    changes = by_path(gather(repo, base, max_bytes=100))
    assert changes["logo.png"] == FileChange(
        path="logo.png", old_path=None, status=ChangeStatus.MODIFIED, old_text=None, new_text=None
    )
    assert changes["big.txt"].new_text is None
    assert changes["latin.py"].new_text == "# caf\ufffd\ndef test_x():\n    assert 1\n"


def test_an_old_text_over_the_limit_is_none(repo: Path) -> None:
    (repo / "data.txt").write_text("y" * 200)
    commit_all(repo, "data")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "data.txt").write_text("short\n")
    (changed,) = gather(repo, base, max_bytes=100).changes
    assert (changed.old_text, changed.new_text) == (None, "short\n")


def test_a_fifo_is_not_waited_on(repo: Path) -> None:
    """A tracked file replaced by a FIFO (git calls it modified) is opened without waiting
    for a writer, and has no text."""
    base = git(repo, "rev-parse", "HEAD")
    (repo / "app.py").unlink()
    os.mkfifo(repo / "app.py")
    (fifo,) = gather(repo, base).changes
    assert (fifo.path, fifo.status, fifo.new_text) == ("app.py", ChangeStatus.MODIFIED, None)


def test_odd_paths_are_read_on_both_sides(repo: Path) -> None:
    """A path with a newline (cat-file -z) and one that is not UTF-8 keep their texts."""
    odd = "line\nbreak.py"
    latin = os.fsdecode(b"caf\xe9.py")
    (repo / odd).write_text("a = 1\n")
    (repo / latin).write_text("b = 1\n")
    commit_all(repo, "odd names")
    base = git(repo, "rev-parse", "HEAD")
    (repo / odd).write_text("a = 2\n")
    (repo / latin).write_text("b = 2\n")
    changes = by_path(gather(repo, base))
    assert changes[odd] == FileChange(
        path=odd,
        old_path=None,
        status=ChangeStatus.MODIFIED,
        old_text="a = 1\n",
        new_text="a = 2\n",
    )
    assert changes[latin] == FileChange(
        path=latin,
        old_path=None,
        status=ChangeStatus.MODIFIED,
        old_text="b = 1\n",
        new_text="b = 2\n",
    )


def test_ralphs_own_folders_kept_out_paths_and_droppings_are_left_out(repo: Path) -> None:
    """.ralph/, .agent/, the ``excludes`` (a file and a folder) and aider's files are in
    neither the changes nor the dirty paths, even when not ignored."""
    base = git(repo, "rev-parse", "HEAD")
    (repo / ".git" / "info" / "exclude").write_text("")  # nothing ignored any more
    for path in (".ralph/run.db", ".agent/out/status", "venv/bin/python", ".aider.chat.md"):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("ralph's\n")
    (repo / "PROMPT.md").write_text("a prompt edited\n")
    (repo / "work.py").write_text("work = 1\n")
    gathered = gather_changes(repo, base, policy=POLICY, excludes=("PROMPT.md", "venv"))
    assert [c.path for c in gathered.changes] == ["work.py"]
    assert gathered.dirty == (StatusEntry(code="??", path="work.py"),)


def test_dirty_names_every_uncommitted_path_for_tree_dirty(repo: Path) -> None:
    """Staged, unstaged, untracked (each file of a new folder) and a staged rename's two
    sides."""
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "mv", "app.py", "calc.py")
    (repo / "README.md").write_text("changed\n")
    (repo / "new").mkdir()
    (repo / "new" / "a.txt").write_text("a\n")
    (repo / "new" / "b.txt").write_text("b\n")
    gathered = gather(repo, base)
    assert sorted((e.code, e.path) for e in gathered.dirty) == [
        (" M", "README.md"),
        ("??", "new/a.txt"),
        ("??", "new/b.txt"),
        ("A ", "calc.py"),
        ("D ", "app.py"),
    ]
    assert {h.path for h in tree_dirty(gathered.dirty)} == {
        "README.md",
        "app.py",
        "calc.py",
        "new/a.txt",
        "new/b.txt",
    }


@pytest.fixture
def untracked_config(repo: Path) -> tuple[Path, dict[str, str]]:
    """``ralph.toml`` untracked, as ``ralph init`` leaves it, and its baseline."""
    git(repo, "rm", "-q", "--cached", "ralph.toml")
    git(repo, "commit", "-q", "-m", "ralph.toml is the person's")
    baseline = untracked_baseline(repo, ("ralph.toml", "PROMPT.md", "missing.txt"), POLICY)
    return repo, baseline


def test_the_baseline_holds_only_untracked_readable_files(
    untracked_config: tuple[Path, dict[str, str]],
) -> None:
    repo, baseline = untracked_config
    assert baseline == {"ralph.toml": (repo / "ralph.toml").read_text()}


def test_an_unchanged_untracked_config_is_no_change_and_not_dirty(
    untracked_config: tuple[Path, dict[str, str]],
) -> None:
    repo, baseline = untracked_config
    gathered = gather(repo, git(repo, "rev-parse", "HEAD"), baseline=baseline)
    assert gathered == Gathered(changes=(), incomplete=False, dirty=())
    without = gather(repo, git(repo, "rev-parse", "HEAD"))
    assert [c.path for c in without.changes] == ["ralph.toml"]  # what the baseline prevents


def test_an_edited_untracked_config_is_modified_against_its_baseline(
    untracked_config: tuple[Path, dict[str, str]],
) -> None:
    repo, baseline = untracked_config
    (repo / "ralph.toml").write_text("[budgets]\nmax_iterations = 1000\n")
    gathered = gather(repo, git(repo, "rev-parse", "HEAD"), baseline=baseline)
    assert gathered.changes == (
        FileChange(
            path="ralph.toml",
            old_path=None,
            status=ChangeStatus.MODIFIED,
            old_text=baseline["ralph.toml"],
            new_text="[budgets]\nmax_iterations = 1000\n",
        ),
    )
    assert gathered.dirty == ()
    (hit,) = screen(gathered.changes, ScreenRules())
    assert (hit.kind, hit.path) == (ScreenKind.PROTECTED_CHANGED, "ralph.toml")


def test_a_deleted_untracked_config_is_deleted_against_its_baseline(
    untracked_config: tuple[Path, dict[str, str]],
) -> None:
    repo, baseline = untracked_config
    (repo / "ralph.toml").unlink()
    gathered = gather(repo, git(repo, "rev-parse", "HEAD"), baseline=baseline)
    assert gathered.changes == (
        FileChange(
            path="ralph.toml",
            old_path=None,
            status=ChangeStatus.DELETED,
            old_text=baseline["ralph.toml"],
            new_text=None,
        ),
    )


def test_a_config_the_agent_committed_is_still_judged_against_its_baseline(
    untracked_config: tuple[Path, dict[str, str]],
) -> None:
    """Committed by the agent unchanged: no change; edited and committed: modified."""
    repo, baseline = untracked_config
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "add", "ralph.toml")
    git(repo, "commit", "-q", "-m", "the agent's")
    assert gather(repo, base, baseline=baseline).changes == ()
    (repo / "ralph.toml").write_text("edited\n")
    commit_all(repo, "the agent's again")
    (changed,) = gather(repo, base, baseline=baseline).changes
    assert (changed.status, changed.old_text, changed.new_text) == (
        ChangeStatus.MODIFIED,
        baseline["ralph.toml"],
        "edited\n",
    )


def test_a_test_file_renamed_onto_a_baseline_path_is_still_a_deleted_test_file(
    untracked_config: tuple[Path, dict[str, str]],
) -> None:
    """The agent moves the test file over the untracked ``ralph.toml`` and commits it: git is
    asked about everything but the baseline's paths, so the rename's source stays a deleted
    test file and the config is judged against its baseline."""
    repo, baseline = untracked_config
    base = git(repo, "rev-parse", "HEAD")
    (repo / "ralph.toml").unlink()
    git(repo, "mv", "tests/test_calc.py", "ralph.toml")
    git(repo, "commit", "-q", "-m", "the agent's")
    changes = gather(repo, base, baseline=baseline).changes
    assert [(c.status, c.path, c.old_path) for c in changes] == [
        (ChangeStatus.MODIFIED, "ralph.toml", None),
        (ChangeStatus.DELETED, "tests/test_calc.py", None),
    ]
    hits = screen(changes, ScreenRules())
    assert {(h.kind, h.path) for h in hits} == {
        (ScreenKind.TEST_FILE_DELETED, "tests/test_calc.py"),
        (ScreenKind.PROTECTED_CHANGED, "ralph.toml"),
    }


def test_past_the_file_limit_the_screen_is_incomplete(repo: Path) -> None:
    """The first paths in path order are read, the rest left out and said so."""
    base = git(repo, "rev-parse", "HEAD")
    for name in "edcba":
        (repo / f"{name}.txt").write_text(f"{name}\n")
    gathered = gather(repo, base, max_files=3)
    assert gathered.incomplete
    assert [(c.path, c.new_text) for c in gathered.changes] == [
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
        ("c.txt", "c\n"),
    ]
    assert not gather(repo, base, max_files=5).incomplete


def test_no_base_means_everything_is_added(repo: Path) -> None:
    """From the empty tree every tracked and untracked file is added."""
    (repo / "new.txt").write_text("new\n")
    changes = by_path(gather(repo, None))
    assert set(changes) == {
        "README.md",
        "PROMPT.md",
        "ralph.toml",
        "app.py",
        "tests/test_calc.py",
        "new.txt",
    }
    assert {c.status for c in changes.values()} == {ChangeStatus.ADDED}
    assert changes["tests/test_calc.py"].new_text == TESTS


def test_a_failing_git_command_is_a_git_error(repo: Path) -> None:
    with pytest.raises(GitError, match="git diff"):
        gather(repo, "0" * 40)


def test_a_deleted_test_and_an_added_skip_are_screened_end_to_end(repo: Path) -> None:
    """The agent deletes one test file and adds ``@pytest.mark.skip`` to another: both are
    named, and nothing else."""
    (repo / "tests" / "test_app.py").write_text(
        "from app import add\n\n\ndef test_app_adds():\n    assert add(1, 2) == 3\n"
    )
    commit_all(repo, "more tests")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "tests" / "test_calc.py").unlink()
    (repo / "tests" / "test_app.py").write_text(
        "import pytest\nfrom app import add\n\n\n@pytest.mark.skip(reason='flaky')\n"
        "def test_app_adds():\n    assert add(1, 2) == 3\n"
    )
    hits = screen(gather(repo, base).changes, ScreenRules())
    assert [(h.kind, h.path, h.line) for h in hits] == [
        (ScreenKind.TEST_FILE_DELETED, "tests/test_calc.py", 0),
        (ScreenKind.SKIP_ADDED, "tests/test_app.py", 5),
    ]


def test_a_secret_added_in_a_commit_is_found_with_its_line(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "app.py").write_text(f'def add(a, b):\n    return a + b\nKEY = "{AWS_KEY}"\n')
    commit_all(repo, "the agent's")
    (hit,) = find_secrets(gather(repo, base).changes)
    assert hit.summary == "secret_added app.py:3: AWS Access Key"


def test_a_run_s_screen_records_its_base_at_the_start_and_after_a_rebase(repo: Path) -> None:
    """``RunScreen`` records ``HEAD`` as the base when the run starts, the tip of ``onto``
    after a rebase that succeeded, and nothing after one that did not."""
    at = datetime(2026, 1, 2, tzinfo=UTC)
    run = RunScreen(
        on=True,
        root=repo,
        saved=repo / ".ralph" / "runs" / "r" / "screen-baseline.json",
        own=(),
        policy=POLICY,
        excludes=(),
        clock=lambda: at,
    )
    start = git(repo, "rev-parse", "HEAD")
    assert run.started() == (ScreenBaseRecorded(sha=start, at=at),)
    git(repo, "checkout", "-q", "-b", "upstream")
    (repo / "new.txt").write_text("upstream\n")
    commit_all(repo, "upstream")
    tip = git(repo, "rev-parse", "HEAD")
    assert tip != start
    git(repo, "checkout", "-q", "-")
    rebased = RebaseSucceeded(head=tip, at=at)
    assert run.rebased((rebased,), "upstream") == (ScreenBaseRecorded(sha=tip, at=at),)
    assert run.rebased((), "upstream") == ()
