"""The screen's values: what a change is, what the screen is told, what it finds (pure data).

``ScreenKind`` and ``ScreenHit`` belong to the event vocabulary (``ChangesScreened`` carries
them) and are re-exported from here.
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
    "TestItem",
    "file_hit",
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
