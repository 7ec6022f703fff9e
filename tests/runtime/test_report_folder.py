"""The report folder each agent invocation starts with (``empty_folder``): emptied of what an
earlier agent left, following no link it planted, in a real folder tree."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.handlers.runtime._ownfiles import empty_folder


def _outside(tmp_path: Path) -> tuple[Path, Path]:
    """A file and a folder (holding a file) outside the workspace, which no link may reach."""
    secret = tmp_path / "secret"
    secret.write_text("key\n")
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "kept").write_text("kept\n")
    return secret, folder


def test_a_stale_report_and_whatever_an_agent_left_beside_it_are_removed(tmp_path: Path) -> None:
    """Reports, a folder of files and links (to a file and to a folder outside) left in the
    report folder are all gone, the folder itself kept; what the links pointed to is
    untouched."""
    secret, outside = _outside(tmp_path)
    out = tmp_path / "ws" / ".agent" / "out"
    (out / "notes" / "deep").mkdir(parents=True)
    (out / "status").write_text("completed\n")
    (out / "notes" / "deep" / "a.md").write_text("a\n")
    os.symlink(secret, out / "plan.md")
    os.symlink(outside, out / "linked")
    inode = out.stat().st_ino
    empty_folder(out)
    assert list(out.iterdir()) == []
    assert out.stat().st_ino == inode, "the folder is emptied, not made anew"
    assert secret.read_text() == "key\n"
    assert (outside / "kept").read_text() == "kept\n"


def test_a_link_or_a_file_at_the_folders_place_gives_way_to_a_real_folder(
    tmp_path: Path,
) -> None:
    """A link planted where the report folder goes is removed, not followed (the folder it
    names keeps what it holds), and a file there is moved aside: the report folder is then a
    real, empty folder."""
    _, outside = _outside(tmp_path)
    agent = tmp_path / "ws" / ".agent"
    agent.mkdir(parents=True)
    os.symlink(outside, agent / "out")
    empty_folder(agent / "out")
    assert (agent / "out").is_dir()
    assert not (agent / "out").is_symlink()
    assert list((agent / "out").iterdir()) == []
    assert (outside / "kept").read_text() == "kept\n"
    (agent / "out").rmdir()
    (agent / "out").write_text("not a folder\n")
    empty_folder(agent / "out")
    assert (agent / "out").is_dir()
    assert list((agent / "out").iterdir()) == []
    moved = [p for p in agent.iterdir() if p.name.startswith("out.moved-")]
    assert [p.read_text() for p in moved] == ["not a folder\n"]


def test_a_correction_turn_removes_the_response_through_no_link(tmp_path: Path) -> None:
    """Before a formatting correction ralph removes only the old response: with the report
    folder replaced by a link to a folder outside, that folder's ``response.json`` is kept
    (the link goes, and a real folder takes its place); a link at the response's own place
    is removed, not its target."""
    from pipeline.handlers.runtime._ownfiles import remove_own

    secret, outside = _outside(tmp_path)
    (outside / "response.json").write_text("theirs\n")
    agent = tmp_path / "ws" / ".agent"
    agent.mkdir(parents=True)
    os.symlink(outside, agent / "out")
    remove_own(agent / "out" / "response.json")
    assert (outside / "response.json").read_text() == "theirs\n"
    assert (agent / "out").is_dir()
    assert not (agent / "out").is_symlink()
    (agent / "out" / "status").write_text("completed\n")
    os.symlink(secret, agent / "out" / "response.json")
    remove_own(agent / "out" / "response.json")
    assert not (agent / "out" / "response.json").is_symlink()
    assert secret.read_text() == "key\n"
    assert (agent / "out" / "status").read_text() == "completed\n", "the report stays"
