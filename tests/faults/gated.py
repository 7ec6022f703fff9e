"""The fault sweep's gated workspaces: a ``[[gates]]`` table with ``on = ["iteration",
"final"]`` (so the tamper screen is on by default), and the points of the gate rounds where
:mod:`tests.faults.sweep` stops a run.

A round records the screen's base with ``RunStarted``, screens the task's (or the run's)
changes, then runs each gate between ``GateStarted`` and ``GateFinished``; a fault at each
of those facts, and inside a gate's command, must leave a run that resumes to the end it
would have had. Two gates: one that sleeps and passes (the rounds all go through), and one
that fails its first complete run (a marker under ``.ralph/``, which the screen leaves out)
and passes after, so the first task round blocks and the work stays out of the commit
until the developer's next iteration.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.events import (
    ChangesScreened,
    CommitCreated,
    GateBoundary,
    GateFinished,
    GateStarted,
    GateStatus,
    PipelineEvent,
)
from tests.runtime.workspace import make_workspace, processes_with, scripted

__all__ = ["CALM", "GATE_POINTS", "SLOW_GATE", "STUBBORN_GATE", "gate_problems"]

_REPORTS = """
write."work.txt" = "the work\\n"
write.".agent/out/plan.md" = "1. do it"
write.".agent/out/status" = "completed\\ndone"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Do it"
"""

WORK = f"""
[[development]]
save_prompt = ".ralph/dev-1.md"
{_REPORTS}
[[development]]
save_prompt = ".ralph/dev-2.md"
{_REPORTS}
[[default]]
{_REPORTS}"""
"""Every role succeeds; each developer iteration leaves work for the task round, and saves
its prompt (the second one must carry a block's notice)."""

CALM = ".ralph/calm"
"""Once this file is in the workspace (:func:`tests.faults.sweep.run_trial` makes it when the
faulted ``ralph`` has ended), the gates no longer take their second: only a fault needs it."""

SLOW_GATE = f"import os, time\nif not os.path.exists('{CALM}'): time.sleep(1.0)\nprint('checked')\n"
"""A gate that takes a second (time for a fault to land inside it) and passes."""

STUBBORN_GATE = (
    "import os, pathlib, sys, time\n"
    f"if not os.path.exists('{CALM}'): time.sleep(1.0)\n"
    "marker = pathlib.Path('.ralph/gate-failed-once')\n"
    "if marker.exists(): print('checked'); sys.exit(0)\n"
    "marker.touch(); print('not yet'); sys.exit(1)\n"
)
"""A gate whose first complete run fails (a block) and every later one passes; a run cut
short inside it touches no marker, so it still fails once."""


_TASK_BOUNDARIES = (GateBoundary.ITERATION, GateBoundary.COMMIT)
_BLOCKED = "`build.blocked`: Gate 'check' failed:"


def _marker(root: Path) -> str:
    """A comment naming the workspace, in its gate's command line, to find its processes."""
    return f"# ralph fault gate in {root}"


def _gated(code: str) -> Callable[[Path], Path]:
    """A workspace whose every role is the scripted agent, gated by ``code`` at each
    iteration and at final validation."""

    def build(root: Path) -> Path:
        # The marker is the workspace's own, by its absolute path: a pinned gate runs in a
        # scratch worktree, remade by every ralph process.
        marked = code.replace("'.ralph/gate-failed-once'", repr(f"{root}/.ralph/gate-failed-once"))
        marked = marked.replace(f"'{CALM}'", repr(f"{root}/{CALM}"))
        argv = f'["{sys.executable}", "-c", """{marked}{_marker(root)}\n"""]'
        gate = (
            f'[[gates]]\nname = "check"\nargv = {argv}\ntimeout_s = 60\n'
            'on = ["iteration", "final"]\n'
        )
        return make_workspace(
            root,
            scripts={"s.toml": WORK},
            agents={"main": scripted("s.toml")},
            budgets="max_iterations = 3\nmax_review_passes = 1\nmax_retries_per_agent = 2\n"
            "backoff_base_ms = 10\nbackoff_cap_ms = 20",
            extra=gate,
        )

    return build


GATE_POINTS: tuple[tuple[str, Callable[[Path], Path], str, int], ...] = (
    ("screen base", _gated(SLOW_GATE), "validation.screen_base_recorded:1", 0),
    ("screen", _gated(SLOW_GATE), "validation.changes_screened:1", 0),
    ("gate", _gated(SLOW_GATE), "validation.gate_started:1:0.5", 0),
    ("gate", _gated(SLOW_GATE), "validation.gate_finished:1", 0),
    ("final screen", _gated(SLOW_GATE), "validation.changes_screened:2", 0),
    ("final gate", _gated(SLOW_GATE), "validation.gate_started:2:0.5", 0),
    ("gate blocked", _gated(STUBBORN_GATE), "validation.gate_finished:1", 0),
    ("gate blocked", _gated(STUBBORN_GATE), "validation.gate_started:2:0.5", 0),
)
"""``(phase, workspace, <wire tag>:<k>[:<delay s>], expected exit)``: the first screen's
base, the first (task) screen, inside the first gate's command and right after its report,
the final round's screen of the run's changes and inside its gate; then, for the gate that
fails once, right after the failure (before the block is acted on) and inside the gate's
second run (the task round after the block)."""


def gate_problems(root: Path, events: Sequence[PipelineEvent]) -> list[str]:
    """What a resumed gated run must not show (nothing for a run without gates): a screen
    with a hit (the workspaces change nothing a screen flags, so a hit is ralph misreading
    its own resume); a commit after a task round's failure with no pass since (blocked work
    committed); a gate cut short that the resume did not run again, whole; a gate failing
    other than as its workspace says (``STUBBORN_GATE`` once, ``SLOW_GATE`` never); a block
    the developer's next prompt does not name; a gate's process still alive once the run has
    ended."""
    problems = []
    for event in events:
        if isinstance(event, ChangesScreened) and event.hits:
            kinds = ", ".join(f"{hit.kind} {hit.path}" for hit in event.hits)
            problems.append(f"a {event.scope} screen hit: {kinds}")
    blocked = False
    running: GateStarted | None = None
    for event in events:
        if isinstance(event, GateStarted):
            again = (event.gate, event.boundary)
            if running is not None and again != (running.gate, running.boundary):
                problems.append(f"gate {running.gate} cut short and not run again")
            running = event
        elif isinstance(event, GateFinished):
            running = None
            if event.boundary in _TASK_BOUNDARIES:
                blocked = event.status is not GateStatus.PASSED
        elif isinstance(event, CommitCreated) and blocked:
            problems.append(f"commit {event.sha[:12]} took work a task round blocked")
    if running is not None:
        problems.append(f"the log ends inside gate {running.gate}")
    failed = sum(isinstance(e, GateFinished) and e.status is not GateStatus.PASSED for e in events)
    expected = 1 if (root / ".ralph" / "gate-failed-once").exists() else 0
    if failed != expected:
        problems.append(f"{failed} gate failures, not {expected}")
    told = root / ".ralph" / "dev-2.md"
    if expected and (not told.exists() or _BLOCKED not in told.read_text()):
        problems.append("the developer was never told of the block")
    if left := processes_with(_marker(root)):
        problems.append(f"gate processes left behind: {left}")
    return problems
