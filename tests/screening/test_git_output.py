"""git's ``-z`` listings read into values: paths with spaces, newlines and non-ASCII kept
verbatim; a malformed record named; the dirty tree named per path."""

from __future__ import annotations

import pytest

from pipeline.core.screening import (
    ChangeStatus,
    FileChange,
    ScreenHit,
    ScreeningError,
    ScreenKind,
    StatusEntry,
    parse_name_status,
    parse_porcelain,
    tree_dirty,
)


def test_name_status_reads_every_status_and_odd_paths() -> None:
    """``A``, ``M``, ``D``, ``T``, ``R100`` (old then new path) and ``C``; paths verbatim."""
    z = (
        "A\0new file.py\0M\0dir/ünï.py\0D\0line\nbreak.py\0T\0link\0"
        "R087\0old.py\0new.py\0C100\0a.py\0b.py\0"
    )
    assert parse_name_status(z) == (
        FileChange(
            path="new file.py",
            old_path=None,
            status=ChangeStatus.ADDED,
            old_text=None,
            new_text=None,
        ),
        FileChange(
            path="dir/ünï.py",
            old_path=None,
            status=ChangeStatus.MODIFIED,
            old_text=None,
            new_text=None,
        ),
        FileChange(
            path="line\nbreak.py",
            old_path=None,
            status=ChangeStatus.DELETED,
            old_text=None,
            new_text=None,
        ),
        FileChange(
            path="link", old_path=None, status=ChangeStatus.MODIFIED, old_text=None, new_text=None
        ),
        FileChange(
            path="new.py",
            old_path="old.py",
            status=ChangeStatus.RENAMED,
            old_text=None,
            new_text=None,
        ),
        FileChange(
            path="b.py", old_path=None, status=ChangeStatus.ADDED, old_text=None, new_text=None
        ),
    )
    assert parse_name_status("") == ()


@pytest.mark.parametrize("z", ["X\0a\0", "M\0", "R100\0only-one\0", "Mx\0a\0", "M\0\0"])
def test_name_status_names_a_malformed_record(z: str) -> None:
    """An unknown status or a record cut short is a ``ScreeningError`` (a ``ValueError``)."""
    with pytest.raises(ScreeningError, match="git diff --name-status"):
        parse_name_status(z)


def test_porcelain_reads_entries_and_rename_sources() -> None:
    """``XY path``; a rename's source follows it as its own field."""
    z = " M app.py\0?? new dir/x y.py\0R  moved.py\0orig.py\0A  línea\nnueva.py\0"
    assert parse_porcelain(z) == (
        StatusEntry(code=" M", path="app.py"),
        StatusEntry(code="??", path="new dir/x y.py"),
        StatusEntry(code="R ", path="moved.py", old_path="orig.py"),
        StatusEntry(code="A ", path="línea\nnueva.py"),
    )


@pytest.mark.parametrize("z", ["M\0", "R  moved.py\0", "XYZpath\0"])
def test_porcelain_names_a_malformed_entry(z: str) -> None:
    """A short entry or a rename without its source is named."""
    with pytest.raises(ScreeningError, match="git status --porcelain"):
        parse_porcelain(z)


def test_a_dirty_tree_is_named_per_path() -> None:
    """``tree_dirty``: one hit per path, untracked told apart."""
    hits = tree_dirty((StatusEntry(code="??", path="b.log"), StatusEntry(code=" M", path="a.py")))
    assert hits == (
        ScreenHit(
            kind=ScreenKind.TREE_DIRTY, path="a.py", line=0, detail="not committed (git status  M)"
        ),
        ScreenHit(kind=ScreenKind.TREE_DIRTY, path="b.log", line=0, detail="untracked"),
    )
