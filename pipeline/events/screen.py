"""The tamper screen's vocabulary: what a screen finds, and the policies a run records for it
(pure data).

ralph screens the work before final validation's gates run: the change from the run's base to
the work tree is searched for reward hacks (tests deleted, skipped or weakened, the gates' own
files changed) and checked against postconditions (no new TODO, no secret added, a clean
tree). ``RunStarted`` records both policies in its :class:`~pipeline.events.policy.LoopPolicy`,
so an agent editing ``ralph.toml`` cannot turn its own run's screen off. The detectors are in
:mod:`pipeline.core.screening`; ``docs/architecture/gates.md`` says how a screen's hits act.
"""

from __future__ import annotations

import enum
from typing import Final, final

from attrs import field, frozen

from pipeline.events.values import COUNT_VALIDATOR, Count, GateAction

__all__ = [
    "POSTCONDITION_KINDS",
    "PostconditionPolicy",
    "ScreenHit",
    "ScreenKind",
    "ScreenScope",
    "TamperPolicy",
]


@enum.unique
class ScreenKind(enum.StrEnum):
    """What a hit is about: one tamper detector or postcondition."""

    TEST_FILE_DELETED = "test_file_deleted"
    TEST_FILE_EMPTIED = "test_file_emptied"
    TEST_REMOVED = "test_removed"
    TEST_LOST = "test_lost"
    """A test the base's collection ran is no longer collected, or is now skipped (found by
    running the gate's test runner's collection on both trees, never by the pure detectors)."""
    COLLECTION_FAILED = "collection_failed"
    """The collection of the agent's tree failed or timed out: its tests cannot be counted."""
    SKIP_ADDED = "skip_added"
    ASSERTIONS_REMOVED = "assertions_removed"
    TAUTOLOGY_ADDED = "tautology_added"
    EXIT_FORCED = "exit_forced"
    TEST_CONFIG_CHANGED = "test_config_changed"
    RUNNER_DETECTED = "runner_detected"
    """Code under test looks for the test runner (``"pytest" in sys.modules``)."""
    NAME_REBOUND = "name_rebound"
    """Test code rebinds a name it imports (``add = lambda ...``, ``calc.add = ...``)."""
    PROTECTED_CHANGED = "protected_changed"
    TODO_ADDED = "todo_added"
    SECRET_ADDED = "secret_added"
    """Found by the secret scanner (a handler), never by the pure detectors."""
    TREE_DIRTY = "tree_dirty"
    SCREEN_INCOMPLETE = "screen_incomplete"
    """The screen stopped gathering changes at its file limit (it only warns)."""


POSTCONDITION_KINDS: Final = frozenset(
    {ScreenKind.TODO_ADDED, ScreenKind.SECRET_ADDED, ScreenKind.TREE_DIRTY}
)
"""The kinds only the postconditions find; their failure action is the postconditions'."""


@enum.unique
class ScreenScope(enum.StrEnum):
    """Which change a screen looked at."""

    RUN = "run"
    """The whole run's, from its base to the work tree (final validation)."""
    ITERATION = "iteration"
    """One developer task's, from the last commit (or the run's base) to the work tree."""


@final
@frozen(kw_only=True)
class ScreenHit:
    """One finding, named precisely: ``line`` is 1-based, or 0 when it is about a whole file.
    ``detail`` never quotes a secret."""

    kind: ScreenKind
    path: str
    line: Count = field(validator=COUNT_VALIDATOR)
    detail: str

    @property
    def summary(self) -> str:
        """The one-line form for notices and reports: ``kind path:line: detail``."""
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{self.kind} {where}: {self.detail}"


@final
@frozen(kw_only=True)
class TamperPolicy:
    """The tamper screen a run started with (``[tamper]``): extra test paths and protected
    paths (globs), paths whose changes never count, and what a hit does."""

    test_paths: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    actions: tuple[tuple[ScreenKind, GateAction], ...] = ()
    """Per-detector overrides of ``on_hit``."""
    on_hit: GateAction = GateAction.BLOCK

    def action_for(self, kind: ScreenKind) -> GateAction:
        """What a hit of ``kind`` does under this policy."""
        for overridden, action in self.actions:
            if overridden is kind:
                return action
        return self.on_hit


@final
@frozen(kw_only=True)
class PostconditionPolicy:
    """What the finished work must hold before completion (``[postconditions]``), and what a
    failure does. ``todo_markers`` empty turns the TODO check off."""

    todo_markers: tuple[str, ...] = ("TODO", "FIXME")
    no_skipped_tests: bool = True
    no_secrets: bool = True
    clean_tree: bool = False
    on_failure: GateAction = GateAction.BLOCK
