"""The guard of the person's links among a CLI folder's read-only entries, on real folders:
what it notes, how it puts a link back, and the record a killed ralph leaves."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.core.sandbox import PresetPaths
from pipeline.handlers.sandbox._links import keep_record, note_links, put_back, recorded_links


def test_note_links_takes_only_links_in_a_writable_folder(tmp_path: Path) -> None:
    """Of the read-only entries, only a link directly in a writable CLI folder is noted (with
    its text as written, dangling too): a file, a missing entry and a link under the
    sandbox's own ``$HOME`` (no writable folder of the person's) are not."""
    folder = tmp_path / ".claude"
    folder.mkdir()
    (folder / "settings.json").symlink_to("../dotfiles/claude.json")  # dangling
    (folder / "CLAUDE.md").write_text("")
    (tmp_path / "top.json").symlink_to("elsewhere")
    preset = PresetPaths(
        writable=(str(folder),),
        read_only=(
            str(folder / "settings.json"),
            str(folder / "CLAUDE.md"),
            str(folder / "commands"),
            str(tmp_path / "top.json"),
        ),
    )

    assert note_links(preset) == {str(folder / "settings.json"): "../dotfiles/claude.json"}


def test_put_back_removes_a_folder_without_following_its_links(tmp_path: Path) -> None:
    """A folder an agent put where the person's link was, holding a link to a folder of the
    person's, is removed without emptying what that link names, and the link made again;
    an unchanged link is left alone and not reported."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.md").write_text("the person's\n")
    folder = tmp_path / ".claude"
    folder.mkdir()
    (folder / "commands").mkdir()
    (folder / "commands" / "through").symlink_to(mine)
    (folder / "hooks").symlink_to(mine)
    links = {str(folder / "commands"): str(mine), str(folder / "hooks"): str(mine)}

    assert put_back(links) == (str(folder / "commands"),)
    assert os.readlink(folder / "commands") == str(mine)
    assert (mine / "keep.md").read_text() == "the person's\n"


def test_a_record_round_trips_and_a_broken_one_names_nothing(tmp_path: Path) -> None:
    """The record kept while a process runs reads back as written; none, or a half-written or
    foreign one, names no link to make (only absolute paths are ever taken)."""
    record = tmp_path / "ralph" / "cli-links.json"
    assert recorded_links(record) == {}
    keep_record(record, {"/home/p/.claude/settings.json": "/home/p/dotfiles/c.json"})
    assert recorded_links(record) == {"/home/p/.claude/settings.json": "/home/p/dotfiles/c.json"}
    record.write_text('{"/home/p/.claude/settings.json": "/x", "relative": "/y", "/z": 3}')
    assert recorded_links(record) == {"/home/p/.claude/settings.json": "/x"}
    record.write_text('{"/home/p/.claude/sett')
    assert recorded_links(record) == {}
    keep_record(record, {})
    assert not record.exists()
