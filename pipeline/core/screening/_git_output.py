"""Git's NUL-separated listings read into values, and the dirty tree named (pure).

The handler runs ``git diff --name-status -z -M`` and ``git status --porcelain=v1 -z``; with
``-z`` git writes every path verbatim (spaces, newlines, non-ASCII), so nothing is unquoted.
"""

from __future__ import annotations

from typing import Final, final

from attrs import frozen

from pipeline.core.screening._model import (
    DETAIL_CHARS,
    ChangeStatus,
    FileChange,
    ScreenHit,
    ScreeningError,
    ScreenKind,
    file_hit,
)

__all__ = ["StatusEntry", "parse_name_status", "parse_porcelain", "tree_dirty"]

# A type change (T) or an unmerged path (U) still has an old and a new text at one path.
_STATUSES: Final = {
    "A": ChangeStatus.ADDED,
    "M": ChangeStatus.MODIFIED,
    "T": ChangeStatus.MODIFIED,
    "U": ChangeStatus.MODIFIED,
    "D": ChangeStatus.DELETED,
    "R": ChangeStatus.RENAMED,
    # A copy leaves its source in place: only the new path is a change.
    "C": ChangeStatus.ADDED,
}


@final
@frozen(kw_only=True)
class StatusEntry:
    """One ``git status --porcelain`` entry: its two-letter code, path and rename source."""

    code: str
    path: str
    old_path: str | None = None


def _fields(z_text: str) -> list[str]:
    fields = z_text.split("\0")
    if fields and fields[-1] == "":
        fields.pop()
    return fields


def _shown(text: str) -> str:
    return repr(text[:DETAIL_CHARS])


def parse_name_status(z_text: str) -> tuple[FileChange, ...]:
    """The changes ``git diff --name-status -z -M`` lists, texts not read yet (None).

    The handler fills in the texts (``attrs.evolve``). A status git does not document, or a
    record cut short, is a :class:`ScreeningError` naming it.
    """
    fields = _fields(z_text)
    changes = []
    i = 0
    while i < len(fields):
        code = fields[i]
        status = _STATUSES.get(code[:1])
        if status is None or (code[1:] and not code[1:].isdigit()):
            raise ScreeningError(f"git diff --name-status: unknown status {_shown(code)}")
        paths = 2 if code[:1] in "RC" else 1
        named = fields[i + 1 : i + 1 + paths]
        if len(named) < paths or "" in named:
            raise ScreeningError(f"git diff --name-status: {_shown(code)} has no path")
        old_path = named[0] if paths == 2 and status is ChangeStatus.RENAMED else None
        changes.append(
            FileChange(
                path=named[-1], old_path=old_path, status=status, old_text=None, new_text=None
            )
        )
        i += 1 + paths
    return tuple(changes)


def parse_porcelain(z_text: str) -> tuple[StatusEntry, ...]:
    """The entries of ``git status --porcelain=v1 -z`` (a rename's source follows it)."""
    fields = _fields(z_text)
    entries = []
    i = 0
    while i < len(fields):
        record = fields[i]
        if len(record) < 4 or record[2] != " ":
            raise ScreeningError(f"git status --porcelain: malformed entry {_shown(record)}")
        code, path = record[:2], record[3:]
        old_path = None
        if "R" in code or "C" in code:
            if i + 1 >= len(fields):
                raise ScreeningError(f"git status --porcelain: {_shown(record)} has no source")
            old_path = fields[i + 1]
            i += 1
        entries.append(StatusEntry(code=code, path=path, old_path=old_path))
        i += 1
    return tuple(entries)


def tree_dirty(entries: tuple[StatusEntry, ...]) -> tuple[ScreenHit, ...]:
    """One ``tree_dirty`` hit per path ``git status`` shows (the handler left out ralph's own)."""
    hits = {
        file_hit(
            ScreenKind.TREE_DIRTY,
            entry.path,
            "untracked" if entry.code == "??" else f"not committed (git status {entry.code})",
        )
        for entry in entries
    }
    return tuple(sorted(hits, key=lambda h: (h.path, h.detail)))
