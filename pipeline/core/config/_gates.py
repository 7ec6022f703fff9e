"""``[[gates]]``: the commands ralph runs at final validation, which a completion must pass;
and ``[tamper]`` and ``[postconditions]``: the screen of a run's changes before its gates run,
both on by default once the workspace has a gate (pure). See ``docs/architecture/gates.md``."""

from __future__ import annotations

import re
from typing import Final, final

from attrs import field, frozen

from pipeline.events import (
    POSTCONDITION_KINDS,
    Count,
    GateAction,
    GateBoundary,
    GatePin,
    GateSpec,
    PatternError,
    PostconditionPolicy,
    ScreenKind,
    TamperPolicy,
    check_pattern,
    topic_matches,
)

__all__ = ["GateConfig", "PostconditionConfig", "TamperConfig", "check_gates", "check_screen"]

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_BOUNDARIES: Final = {b.value for b in GateBoundary if b is not GateBoundary.TOPIC}
_TOPIC: Final = "topic:"
"""``on = ["topic:review.ready"]``: the gate runs after a hat's activation publishes it."""


@final
@frozen(kw_only=True)
class GateConfig:
    """``[[gates]]``: one gate."""

    name: str
    argv: tuple[str, ...]
    """The command, as an argv (never a shell string; ``["sh", "-c", "..."]`` on purpose)."""
    timeout_s: int = 600
    inactivity_timeout_s: int | None = None
    """How long its output may stay silent (None: no limit, only ``timeout_s``)."""
    on: tuple[str, ...] = ("final",)
    """``final``: at every final validation; ``completion``: when an accepted completion
    takes the run there; ``iteration``: after each developer task that did work, before its
    commit; ``commit``: as ``iteration``, only where a commit follows; ``topic:PATTERN`` (in a
    workflow of hats): after an activation that published a matching topic, which reaches no
    hat unless the gate passes."""
    on_failure: GateAction = GateAction.BLOCK
    """``block``: the agent is told and works on; ``warn``: told only; ``stop``: the run ends."""
    env: dict[str, str] = field(factory=dict)
    """Added to the gate's environment (not recorded in the log: it may hold secrets)."""
    collect: tuple[str, ...] | None = None
    """A command that prints the gate's test ids, one a line, for the tamper screen's
    collection check (None: ralph collects pytest's, jest's, vitest's, ``go test``'s and
    ``cargo test``'s itself, others not)."""

    def spec(self) -> GateSpec:
        """The gate as the run records it (a checked configuration's only)."""
        timeout = self.inactivity_timeout_s
        return GateSpec(
            name=self.name,
            argv=self.argv,
            timeout_s=Count(self.timeout_s),
            inactivity_timeout_s=None if timeout is None else Count(timeout),
            on=tuple(dict.fromkeys(_boundary(b) for b in self.on)),
            on_failure=self.on_failure,
            topics=tuple(b.removeprefix(_TOPIC) for b in self.on if b.startswith(_TOPIC)),
        )


def _boundary(on: str) -> GateBoundary:
    return GateBoundary.TOPIC if on.startswith(_TOPIC) else GateBoundary(on)


def check_gates(
    gates: tuple[GateConfig, ...], commits: bool, promises: tuple[str, ...] | None
) -> list[str]:
    """Every problem with ``[[gates]]``, one line each, naming the gate's key. ``commits``
    False (a read-only workflow) refuses ``commit``: such a gate would never run.
    ``promises`` are the topics the loop acts on itself (completion, cancellation, a
    question), which a ``topic:`` gate may not name; None: the built-in pipeline, where
    topics route no work, so ``topic:`` is refused."""
    problems: list[str] = []
    seen: set[str] = set()
    for index, gate in enumerate(gates):
        key = f"gates.{index}"
        if not _NAME.fullmatch(gate.name):
            problems.append(f"{key}.name: {gate.name!r} must be 1 to 64 letters, digits, _ and -")
        elif gate.name in seen:
            problems.append(f"{key}.name: {gate.name!r} is given twice")
        seen.add(gate.name)
        if not gate.argv or not gate.argv[0].strip():
            problems.append(f"{key}.argv: must name a program")
        if gate.collect is not None and (not gate.collect or not gate.collect[0].strip()):
            problems.append(f"{key}.collect: must name a program")
        if not gate.on:
            problems.append(f"{key}.on: empty; give final, completion, iteration or commit")
        for boundary in gate.on:
            if boundary.startswith(_TOPIC):
                problems.extend(_topic_problem(key, boundary.removeprefix(_TOPIC), promises))
            elif boundary not in _BOUNDARIES:
                problems.append(
                    f"{key}.on: {boundary!r} is not one of final, completion, iteration, "
                    "commit, topic:PATTERN"
                )
        if "commit" in gate.on and not commits:
            problems.append(
                f"{key}.on: commit never runs in a workflow with [loop] commits = false "
                "(use iteration)"
            )
        if len(set(gate.on)) != len(gate.on):
            problems.append(f"{key}.on: names a boundary twice")
    return problems


def _topic_problem(key: str, pattern: str, promises: tuple[str, ...] | None) -> list[str]:
    if promises is None:
        return [
            f"{key}.on: topic:{pattern} needs a workflow of hats ([hats.NAME] with triggers); "
            "in the built-in pipeline use iteration"
        ]
    try:
        check_pattern(pattern)
    except PatternError as error:
        return [f"{key}.on: topic:{pattern}: {error}"]
    if any(topic_matches(pattern, promise) for promise in promises):
        return [f"{key}.on: topic:{pattern} names a topic the loop acts on; use completion"]
    return []


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
