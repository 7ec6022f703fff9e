"""The tamper screen and the pure postconditions: what a change did to the tests (pure).

A handler gathers a change set (``FileChange``: a path's texts before and after) and hands it
to :func:`screen` with the run's :class:`ScreenRules`; the screen returns :class:`ScreenHit`
values in one order. Nothing here reads a file, a clock or git: the parsers read git's output
as text. The design is ``docs/research/gates-design.md``, sections 8 and 9.
"""

from pipeline.core.screening._added import find_skips, find_todos
from pipeline.core.screening._classify import Image, classify
from pipeline.core.screening._collected import (
    Collected,
    CollectedTest,
    Runner,
    collection_steps,
    lost_by_collection,
    npm_test_args,
    package_test_command,
    parse_cargo,
    parse_go,
    parse_listed,
    parse_pytest,
    parse_vitest,
    runner_of,
)
from pipeline.core.screening._languages import language_of
from pipeline.core.screening._lines import MAX_LINE_CHARS
from pipeline.core.screening._model import (
    ChangeStatus,
    FileChange,
    Language,
    Marker,
    Protection,
    ScreenHit,
    ScreeningError,
    ScreenKind,
    ScreenRules,
    StatusEntry,
    TestItem,
    parse_name_status,
    parse_porcelain,
    tree_dirty,
)
from pipeline.core.screening._pins import PinKind, named_files, pin_kind, splice
from pipeline.core.screening._screen import count_assertions, count_items, screen

__all__ = [
    "MAX_LINE_CHARS",
    "ChangeStatus",
    "Collected",
    "CollectedTest",
    "FileChange",
    "Image",
    "Language",
    "Marker",
    "PinKind",
    "Protection",
    "Runner",
    "ScreenHit",
    "ScreenKind",
    "ScreenRules",
    "ScreeningError",
    "StatusEntry",
    "TestItem",
    "classify",
    "collection_steps",
    "count_assertions",
    "count_items",
    "find_skips",
    "find_todos",
    "language_of",
    "lost_by_collection",
    "named_files",
    "npm_test_args",
    "package_test_command",
    "parse_cargo",
    "parse_go",
    "parse_listed",
    "parse_name_status",
    "parse_porcelain",
    "parse_pytest",
    "parse_vitest",
    "pin_kind",
    "runner_of",
    "screen",
    "splice",
    "tree_dirty",
]
