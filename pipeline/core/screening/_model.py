"""The screen's values: what a change is, what the screen is told, what it finds; and git's
listings of a change read into them (pure).

``ScreenKind`` and ``ScreenHit`` belong to the event vocabulary (``ChangesScreened`` carries
them) and are re-exported from here.

The handler runs ``git diff --name-status -z -M`` and ``git status --porcelain=v1 -z``; with
``-z`` git writes every path verbatim (spaces, newlines, non-ASCII), so nothing is unquoted.
"""

from __future__ import annotations

import enum
from typing import Final, final

from attrs import frozen

from pipeline import PipelineError
from pipeline.events.screen import ScreenHit, ScreenKind
from pipeline.events.values import Count

__all__ = [
    "ChangeStatus",
    "FileChange",
    "Language",
    "Marker",
    "Protection",
    "ScreenHit",
    "ScreenKind",
    "ScreenRules",
    "ScreeningError",
    "StatusEntry",
    "TestItem",
    "file_hit",
    "parse_name_status",
    "parse_porcelain",
    "tree_dirty",
]

DETAIL_CHARS: Final = 200
"""A quoted line is cut to this many characters in a hit's detail, so a hit stays one line."""


def file_hit(kind: ScreenKind, path: str, detail: str) -> ScreenHit:
    """A hit about ``path`` as a whole (line 0), not one of its lines."""
    return ScreenHit(kind=kind, path=path, line=Count(0), detail=detail)


class ScreeningError(PipelineError, ValueError):
    """Git's output handed to a parser is not in the expected shape (names the bad record)."""


@enum.unique
class ChangeStatus(enum.StrEnum):
    """How a path changed between the base and the work tree."""

    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"


@enum.unique
class Language(enum.StrEnum):
    """A language whose test frameworks the screen knows how to count."""

    PYTHON = "python"
    """pytest and unittest."""
    JAVASCRIPT = "javascript"
    """JavaScript and TypeScript: jest, mocha, vitest, jasmine."""
    GO = "go"
    RUST = "rust"
    JVM = "jvm"
    """Java and Kotlin: JUnit 4 and 5, TestNG's ``enabled = false``."""


@final
@frozen(kw_only=True)
class FileChange:
    """One changed path: its texts before and after (None: absent, binary or too large).

    ``old_path`` is set for a rename and names where the old text was.
    """

    path: str
    old_path: str | None
    status: ChangeStatus
    old_text: str | None
    new_text: str | None

    @property
    def before(self) -> str:
        """The path the old text was read from."""
        return self.old_path if self.old_path is not None else self.path


@final
@frozen(kw_only=True)
class Protection:
    """A glob no change may touch, and why (``"a CI file"``, ``"gate 'tests' runs it"``)."""

    pattern: str
    reason: str


@final
@frozen(kw_only=True)
class ScreenRules:
    """What one screen looks for; built by a handler from the run's recorded policy.

    ``tamper`` turns on the tamper detectors (section 8); ``no_skipped_tests`` alone turns on
    ``skip_added`` (the run-scope postcondition); ``todo_markers`` empty means no TODO check.
    """

    tamper: bool = True
    no_skipped_tests: bool = False
    todo_markers: tuple[str, ...] = ()
    test_paths: tuple[str, ...] = ()
    protect: tuple[Protection, ...] = ()
    allow: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class TestItem:
    """A test the counters found: its name and the 1-based line that declares it."""

    __test__ = False  # a value, not a test class (pytest collects Test* names)

    name: str
    line: int


@final
@frozen(kw_only=True)
class Marker:
    """A line holding one or more markers (skips, TODOs...): its number, text and weight."""

    line: int
    text: str
    count: int = 1


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
