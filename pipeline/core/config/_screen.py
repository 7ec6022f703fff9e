"""``[tamper]`` and ``[postconditions]``: the screen of a run's changes before its gates run
(pure). Both are on by default once the workspace has a gate. See
``docs/architecture/gates.md``."""

from __future__ import annotations

from typing import Final, final

from attrs import field, frozen

from pipeline.events import (
    POSTCONDITION_KINDS,
    GateAction,
    GatePin,
    PostconditionPolicy,
    ScreenKind,
    TamperPolicy,
)

__all__ = ["PostconditionConfig", "TamperConfig", "check_screen"]

_ACTIONS: Final = {a.value for a in GateAction}
_KINDS: Final = {
    k.value
    for k in ScreenKind
    if k not in POSTCONDITION_KINDS and k is not ScreenKind.SCREEN_INCOMPLETE
}
"""The tamper detectors ``[tamper] actions`` may name (the postconditions act by their own
``on_failure``; a screen cut short only warns)."""


@final
@frozen(kw_only=True)
class TamperConfig:
    """``[tamper]``: the tamper screen (tests deleted, skipped or weakened; protected files
    changed)."""

    enabled: bool | None = None
    """None: on when the workspace has a gate."""
    test_paths: tuple[str, ...] = ()
    """Globs of more test files than the built-in patterns."""
    protect: tuple[str, ...] = ()
    """Globs of more files no change may touch."""
    allow: tuple[str, ...] = ()
    """Globs of paths whose changes are never hits."""
    actions: dict[str, str] = field(factory=dict)
    """Per detector (``test_removed = "warn"``), what its hit does instead of ``on_hit``."""
    on_hit: GateAction = GateAction.BLOCK
    pin: GatePin = GatePin.BASE
    """``base``: gates and blocking hooks run with the tests, the test configuration and the
    files their commands name as the run's base commit has them; ``off``: on the work tree
    as it is (what ``ralph run --tests-editable`` asks for one run). Read whether or not the
    screen is on."""

    def policy(self, has_gates: bool) -> TamperPolicy | None:
        """The policy a run records (None: the screen is off)."""
        if not (has_gates if self.enabled is None else self.enabled):
            return None
        return TamperPolicy(
            test_paths=self.test_paths,
            protect=self.protect,
            allow=self.allow,
            actions=tuple((ScreenKind(k), GateAction(v)) for k, v in sorted(self.actions.items())),
            on_hit=self.on_hit,
        )


@final
@frozen(kw_only=True)
class PostconditionConfig:
    """``[postconditions]``: what the finished work must hold before completion."""

    enabled: bool | None = None
    """None: on when the workspace has a gate."""
    no_todo: bool = True
    todo_markers: tuple[str, ...] = ("TODO", "FIXME")
    no_skipped_tests: bool = True
    no_secrets: bool = True
    clean_tree: bool = False
    on_failure: GateAction = GateAction.BLOCK

    def policy(self, has_gates: bool) -> PostconditionPolicy | None:
        """The policy a run records (None: no postconditions)."""
        if not (has_gates if self.enabled is None else self.enabled):
            return None
        return PostconditionPolicy(
            todo_markers=self.todo_markers if self.no_todo else (),
            no_skipped_tests=self.no_skipped_tests,
            no_secrets=self.no_secrets,
            clean_tree=self.clean_tree,
            on_failure=self.on_failure,
        )


def _globs(key: str, globs: tuple[str, ...]) -> list[str]:
    problems = []
    for glob in globs:
        parts = glob.replace("\\", "/").split("/")
        if not glob.strip() or glob.startswith("/") or ".." in parts:
            problems.append(f"{key}: {glob!r} must be a glob relative to the workspace, no '..'")
    return problems


def check_screen(
    tamper: TamperConfig, postconditions: PostconditionConfig, commits: bool
) -> list[str]:
    """Every problem with ``[tamper]`` and ``[postconditions]``, one line each, naming the key.
    ``commits`` False (a read-only topology) refuses ``clean_tree``: its work is never
    committed."""
    problems: list[str] = []
    for name in ("test_paths", "protect", "allow"):
        problems.extend(_globs(f"tamper.{name}", getattr(tamper, name)))
    for kind, action in tamper.actions.items():
        if kind not in _KINDS:
            known = ", ".join(sorted(_KINDS))
            problems.append(f"tamper.actions: {kind!r} is not a detector ({known})")
        if action not in _ACTIONS:
            problems.append(f"tamper.actions.{kind}: {action!r} is not block, warn or stop")
    if any(not marker.strip() for marker in postconditions.todo_markers):
        problems.append("postconditions.todo_markers: a marker is blank")
    if postconditions.clean_tree and not commits:
        problems.append(
            "postconditions.clean_tree: a workflow with [loop] commits = false never commits "
            "its work, so its tree is never clean"
        )
    return problems
