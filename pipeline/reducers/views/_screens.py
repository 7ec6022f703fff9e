"""The run's screens of its changes: one per ``ChangesScreened``, each hit with the action the
run's policy gives it (pure). ``ralph report`` and ``ralph status`` show them.

The log is folded alongside, so each screen knows the iteration it ran in and the policy
``RunStarted`` recorded (``LoopPolicy.tamper`` and ``postconditions``). A hit's action is read
from that policy by the reducer's own ``screen_action``. Scopes and kinds are enums shown by
their values, so a new one shows with no change here.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Final, final

from attrs import frozen

from pipeline.core.state import PipelineState
from pipeline.events import (
    ChangesScreened,
    GateAction,
    Instant,
    LoopPolicy,
    PipelineEvent,
    ScreenHit,
    ScreenScope,
)
from pipeline.reducers import reduce, screen_action

__all__ = ["JudgedHit", "ScreenOutcome", "ScreenRun", "screen_runs"]

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


_OUTCOMES: Final = {
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
        found = (_OUTCOMES[h.action] for h in self.hits)
        return max(found, key=_STRENGTH.index, default=ScreenOutcome.CLEAN)


def screen_runs(events: Iterable[PipelineEvent]) -> tuple[ScreenRun, ...]:
    """Every screen of a run's ``events``, in the order they were recorded."""
    state = PipelineState()
    runs: list[ScreenRun] = []
    for event in events:
        if isinstance(event, ChangesScreened):
            runs.append(_screen(event, len(runs) + 1, state))
        state = reduce(state, event)
    return tuple(runs)


def _screen(event: ChangesScreened, number: int, before: PipelineState) -> ScreenRun:
    # A log with no RunStarted: the reducer's defaults apply.
    loop = before.run.loop if before.run is not None else LoopPolicy.off()
    return ScreenRun(
        number=number,
        at=event.at,
        iteration=before.progress.iteration,
        scope=event.scope,
        base=event.base,
        files=event.files,
        hits=tuple(JudgedHit(hit=h, action=screen_action(loop, h.kind)) for h in event.hits),
    )
