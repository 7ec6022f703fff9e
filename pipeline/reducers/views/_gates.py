"""The run's gate runs, one per ``GateStarted``, with how it ended and what its failure did;
and its screens of its changes, which open a gates round, one per ``ChangesScreened``, each
hit with the action the run's policy gives it (pure). ``ralph report`` draws both and
``ralph status`` shows the screens; anything else may read them.

The log is folded alongside, so each knows the iteration it ran in and reads the policy
``RunStarted`` recorded as the reducer reads it. What a gate's failure did comes from
``LoopPolicy.gates``, by the reducer's own ``gate_action`` (a gate it does not name blocks).
A gate started and never reported is cut short when the run stopped, or started the gate
again, before it reported (a resume runs it whole again), and running when the log ends with
it at work. A hit's action comes from ``LoopPolicy.tamper`` and ``postconditions``, by the
reducer's own ``screen_action``. Scopes and kinds are enums shown by their values, so a new
one shows with no change here.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Final, final

import attrs
from attrs import frozen

from pipeline.core.state import PipelineState
from pipeline.events import (
    ChangesScreened,
    ExitCode,
    GateAction,
    GateBoundary,
    GateFinished,
    GateStarted,
    GateStatus,
    Instant,
    LoopPolicy,
    PipelineEvent,
    RunAbandoned,
    RunCompleted,
    RunInterrupted,
    RunResumed,
    RunSalvaged,
    ScreenHit,
    ScreenScope,
)
from pipeline.reducers import gate_action, screen_action, steps

__all__ = [
    "GateOutcome",
    "GateRun",
    "JudgedHit",
    "ScreenOutcome",
    "ScreenRun",
    "gate_runs",
    "screen_runs",
]


class GateOutcome(enum.Enum):
    """How a gate run ended, for people: passed, or what its failure did."""

    PASSED = "passed"
    BLOCKED = "blocked"
    """It failed and its gate blocks: the work went back to the developer."""
    WARNED = "warned"
    """It failed and its gate only warns: the developer was told, the run went on."""
    STOPPED = "stopped"
    """It failed and its gate stops: the run ended ``gate_failed``."""
    CUT_SHORT = "cut_short"
    """The run stopped (or crashed and resumed) before the gate reported."""
    RUNNING = "running"
    """The log ends with the gate at work."""


_OUTCOMES = {
    GateAction.BLOCK: GateOutcome.BLOCKED,
    GateAction.WARN: GateOutcome.WARNED,
    GateAction.STOP: GateOutcome.STOPPED,
}


@final
@frozen(kw_only=True)
class GateRun:
    """One run of a gate's command."""

    number: int
    """Its place among the run's gate runs, from 1."""
    gate: str
    boundary: GateBoundary
    iteration: int
    """The development iteration the run was at when the gate started."""
    started_at: Instant
    ended_at: Instant | None = None
    """When it reported, or when the run stopped before it did (None: still at work)."""
    status: GateStatus | None = None
    """How its command ended (None: it never reported)."""
    exit_code: ExitCode | None = None
    duration_ms: int | None = None
    """How long its command ran, as the handler measured it (None: it never reported)."""
    argv: tuple[str, ...] = ()
    log_path: str | None = None
    """Where its whole output is, relative to the workspace (None: it never reported)."""
    tail: str = ""
    """The end of its output, as the agent is shown it: the command's own text, untrusted."""
    action: GateAction | None = None
    """What its failure did (None: it passed, or never reported)."""
    outcome: GateOutcome = GateOutcome.RUNNING
    pinned: str | None = None
    """The commit its checks were pinned to (None: it ran on the work tree as it was)."""
    restored: tuple[str, ...] = ()
    """The files whose agent version it did not use (the base's instead, or none)."""

    @property
    def duration_s(self) -> float | None:
        """How long it ran: the handler's measure once reported, else the time until the run
        stopped (None while running)."""
        if self.duration_ms is not None:
            return self.duration_ms / 1000
        if self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


def gate_runs(events: Iterable[PipelineEvent]) -> tuple[GateRun, ...]:
    """Every gate run of a run's ``events``, in the order they started."""
    runs: list[GateRun] = []
    current: GateRun | None = None  # the gate at work, not yet reported
    for before, event, _after in steps(events):
        match event:
            case GateStarted():
                if current is not None:
                    runs.append(_cut_short(current, event.at))
                current = _begun(event, len(runs) + 1, before)
            case GateFinished():
                if current is None or current.gate != event.gate:
                    # Reported with no start of its own (a damaged log): it ran all the same.
                    if current is not None:
                        runs.append(_cut_short(current, event.at))
                    current = _begun(event, len(runs) + 1, before)
                runs.append(_finished(current, event, _loop(before)))
                current = None
            case RunInterrupted() | RunAbandoned() | RunResumed() | RunSalvaged() | RunCompleted():
                if current is not None:
                    runs.append(_cut_short(current, event.at))
                    current = None
            case _:
                pass
    if current is not None:
        runs.append(current)
    return tuple(runs)


def _loop(state: PipelineState) -> LoopPolicy:
    """The policy the reducer reads in ``state`` (a log with no RunStarted: its defaults)."""
    return state.run.loop if state.run is not None else LoopPolicy.off()


def _finished(run: GateRun, event: GateFinished, loop: LoopPolicy) -> GateRun:
    # What the reducer does with a failure (None: it passed).
    action = None if event.status is GateStatus.PASSED else gate_action(loop, event.gate)
    return attrs.evolve(
        run,
        ended_at=event.at,
        status=event.status,
        exit_code=event.exit_code,
        duration_ms=event.duration_ms,
        argv=event.argv,
        log_path=event.log_path,
        tail=event.tail,
        action=action,
        outcome=GateOutcome.PASSED if action is None else _OUTCOMES[action],
        pinned=event.pinned,
        restored=event.restored,
    )


def _cut_short(run: GateRun, at: Instant) -> GateRun:
    return attrs.evolve(run, ended_at=at, outcome=GateOutcome.CUT_SHORT)


def _begun(event: GateStarted | GateFinished, number: int, state: PipelineState) -> GateRun:
    """The gate run ``event`` begins in ``state``: its start, or a report with no start of
    its own (drawn where it reported)."""
    return GateRun(
        number=number,
        gate=event.gate,
        boundary=event.boundary,
        iteration=state.progress.iteration,
        started_at=event.at,
    )


_SHORT_SHA: Final = 12
"""The characters of a commit people are shown (as the reducer's notices name the base)."""


class ScreenOutcome(enum.Enum):
    """What a screen did to the run, for people: nothing, or the strongest of its hits'
    actions (a stop ends the run whatever else was found, a block sends the work back).
    Members go from the weakest to the strongest."""

    CLEAN = "clean"
    WARNED = "warned"
    BLOCKED = "blocked"
    STOPPED = "stopped"


_SCREEN_OUTCOMES: Final = {
    GateAction.WARN: ScreenOutcome.WARNED,
    GateAction.BLOCK: ScreenOutcome.BLOCKED,
    GateAction.STOP: ScreenOutcome.STOPPED,
}
_STRENGTH: Final = tuple(ScreenOutcome)
"""The outcomes, weakest first."""


@final
@frozen(kw_only=True)
class JudgedHit:
    """One hit of a screen and the action the run's policy gives it."""

    hit: ScreenHit
    action: GateAction

    @property
    def where(self) -> str:
        """``path:line``, or the path alone for a hit about a whole file."""
        return f"{self.hit.path}:{self.hit.line}" if self.hit.line else self.hit.path


@final
@frozen(kw_only=True)
class ScreenRun:
    """One screen of the run's changes."""

    number: int
    """Its place among the run's screens, from 1."""
    at: Instant
    iteration: int
    """The development iteration the run was at when it screened."""
    scope: ScreenScope
    base: str | None
    """The commit the change was screened from (None: the empty tree)."""
    files: int
    """How many changed paths it looked at."""
    hits: tuple[JudgedHit, ...] = ()
    """What it found: the paths and details are the agent's own text, untrusted."""

    @property
    def short_base(self) -> str:
        """The base as people read it: its first characters, or ``empty tree``."""
        return "empty tree" if self.base is None else self.base[:_SHORT_SHA]

    @property
    def outcome(self) -> ScreenOutcome:
        """Clean, or the strongest action among its hits."""
        found = (_SCREEN_OUTCOMES[h.action] for h in self.hits)
        return max(found, key=_STRENGTH.index, default=ScreenOutcome.CLEAN)


def screen_runs(events: Iterable[PipelineEvent]) -> tuple[ScreenRun, ...]:
    """Every screen of a run's ``events``, in the order they were recorded."""
    runs: list[ScreenRun] = []
    for before, event, _after in steps(events):
        if isinstance(event, ChangesScreened):
            runs.append(_screen(event, len(runs) + 1, before))
    return tuple(runs)


def _screen(event: ChangesScreened, number: int, before: PipelineState) -> ScreenRun:
    loop = _loop(before)
    return ScreenRun(
        number=number,
        at=event.at,
        iteration=before.progress.iteration,
        scope=event.scope,
        base=event.base,
        files=event.files,
        hits=tuple(JudgedHit(hit=h, action=screen_action(loop, h.kind)) for h in event.hits),
    )
