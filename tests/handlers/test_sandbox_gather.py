"""The host's side of the mount plan, on real folders: which siblings of a workspace are
repositories the sandbox hides."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pipeline.core.sandbox import PresetPaths
from pipeline.handlers.sandbox._gather import linked_paths, make_missing, other_repositories
from tests.support import init_repository


def test_other_repositories_hides_bare_siblings(tmp_path: Path) -> None:
    """A bare repository beside the workspace (a worker's cache) is hidden as a sibling with a
    ``.git`` is, while a folder that only looks partly like one (a ``HEAD`` file and no
    ``objects/``) and the workspace itself are not."""
    workspace = init_repository(tmp_path / "t-one")
    other = init_repository(tmp_path / "t-other")
    cache = tmp_path / "remote-x.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(cache)], check=True)
    notes = tmp_path / "notes"
    (notes / "refs").mkdir(parents=True)
    (notes / "HEAD").write_text("not a repository\n")

    found = other_repositories(workspace, workspace / ".git")

    assert sorted(found) == sorted([str(cache.resolve()), str(other.resolve())])


def test_other_repositories_hides_a_siblings_worktrees_folder(tmp_path: Path) -> None:
    """The folder of ralph's worktrees beside another repository (where another remote
    ticket's landing replays its branch, a linked worktree with a ``.git`` file) is hidden
    with that repository, while the workspace's own and a lone ``*-worktrees`` folder are
    not."""
    workspace = init_repository(tmp_path / "t-one")
    other = init_repository(tmp_path / "t-other")
    scratch = tmp_path / "t-other-worktrees" / ".integration-r1"
    scratch.mkdir(parents=True)
    (scratch / ".git").write_text("gitdir: elsewhere\n")
    (tmp_path / "t-one-worktrees").mkdir()
    (tmp_path / "lone-worktrees").mkdir()

    found = other_repositories(workspace, workspace / ".git")

    assert sorted(found) == sorted([str(other.resolve()), str(scratch.parent.resolve())])


def test_a_link_below_its_folder_is_linked_and_one_at_the_folder_is_not(tmp_path: Path) -> None:
    """A path a link leads through below its folder (the path itself, dangling too, or a
    folder on the way) is linked; a person's link at the folder itself (dotfiles kept
    elsewhere) is not, nor a plain or missing path."""
    kept = tmp_path / "dotfiles" / "claude"
    (kept / "commands").mkdir(parents=True)
    (kept / "settings.json").write_text("{}")
    folder = tmp_path / ".claude"
    folder.symlink_to(kept)
    (kept / "agents").symlink_to(tmp_path / "elsewhere")
    (kept / "hooks").symlink_to(kept / "commands")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".idea").symlink_to(ws / "sub")
    pairs = [
        (str(folder), f"{folder}/settings.json"),
        (str(folder), f"{folder}/commands"),
        (str(folder), f"{folder}/CLAUDE.md"),
        (str(folder), f"{folder}/agents"),
        (str(folder), f"{folder}/hooks"),
        (str(ws), f"{ws}/.idea/x.xml"),
        (str(ws), f"{ws}/.vscode"),
    ]
    assert linked_paths(pairs) == (f"{folder}/agents", f"{folder}/hooks", f"{ws}/.idea/x.xml")


def test_make_missing_makes_a_clis_read_only_entries_without_following_a_link(
    tmp_path: Path,
) -> None:
    """The read-only entries of a CLI's writable folder that are missing are made empty (a
    ``0700`` folder, ``{}``), a file the person has stays as it is, and a link at an entry's
    place is left and not followed: nothing is made where it points."""
    folder = tmp_path / ".claude"
    folder.mkdir()
    (folder / "CLAUDE.md").write_text("the person's\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "hooks").symlink_to(outside / "hooks")
    (folder / "settings.local.json").symlink_to(outside / "planted.json")
    names = ("settings.json", "settings.local.json", "CLAUDE.md", "commands", "hooks")
    preset = PresetPaths(writable=(str(folder),), read_only=tuple(str(folder / n) for n in names))

    make_missing((), (), preset)

    assert (folder / "settings.json").read_text() == "{}\n"
    assert (folder / "settings.json").stat().st_mode & 0o777 == 0o600
    assert (folder / "commands").is_dir()
    assert (folder / "commands").stat().st_mode & 0o777 == 0o700
    assert (folder / "CLAUDE.md").read_text() == "the person's\n"
    assert (folder / "hooks").is_symlink()
    assert (folder / "settings.local.json").is_symlink()
    assert list(outside.iterdir()) == []
