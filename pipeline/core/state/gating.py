"""Where a run stands with its gates: the round under way at final validation (the screen of
the run's changes, then the gates) and what it found so far, where the screen starts, and the
counts of the run (pure data).

A run with no gates keeps the empty :class:`Gating` for its whole life.
"""

from __future__ import annotations

import enum
from typing import Final, final

from attrs import frozen

from pipeline.core.state.phase import Phase
from pipeline.events.screen import ScreenScope
from pipeline.events.values import GateAction, GateBoundary

__all__ = ["SCREEN", "GateFailure", "GateRound", "GateThen", "Gating"]

SCREEN: Final = "tamper screen"
"""The name a screen's failures go by (no gate can be called this: a gate's name has no space)."""


@enum.unique
class GateThen(enum.StrEnum):
    """Where a round that passes goes on to."""

    VALIDATE = "validate"
    """The final check (final validation's round)."""
    COMMIT = "commit"
    """Commit the developer task's work, then ``GateRound.after``."""
    DEVELOP = "develop"
    """The next development iteration (a read-only workflow commits nothing)."""


@final
@frozen(kw_only=True)
class GateFailure:
    """A gate that did not pass (or the screen's hits of one action), and what it does."""

    gate: str
    """The gate's name, or :data:`SCREEN` for the screen's hits."""
    action: GateAction
    summary: str
    """One line: the command, how it ended, where its whole output is."""
    tail: str
    """The end of its output, as the agent is shown it."""


@final
@frozen(kw_only=True)
class GateRound:
    """The screen and the gates still to run at this boundary, in order, and the failures so
    far."""

    screen_due: bool = False
    """The changes are still to be screened (before any gate runs)."""
    scope: ScreenScope = ScreenScope.RUN
    """Whose changes: the run's (final validation) or the last developer task's."""
    then: GateThen = GateThen.VALIDATE
    after: Phase | None = None
    """Where the run goes after the commit ``then`` asks for."""
    pending: tuple[tuple[str, GateBoundary], ...]
    """Each gate still to run, with the boundary that put it in the round."""
    in_flight: str | None = None
    """The gate whose command was started and has not reported (a crash re-runs it)."""
    failures: tuple[GateFailure, ...] = ()


@final
@frozen(kw_only=True)
class Gating:
    """The gating part of the state (see the module's documentation)."""

    round: GateRound | None = None
    base_recorded: bool = False
    """Whether the run recorded where its screen starts (``ScreenBaseRecorded``)."""
    run_base: str | None = None
    """The commit the run's changes are screened from (None: the empty tree)."""
    work_base: str | None = None
    """The commit a developer task's changes are screened from: the last one ralph made or
    rebased to, else the run's base."""
    ran: int = 0
    """Gate commands that reported, in the whole run."""
    blocked: int = 0
    """Rounds a blocking failure sent back to development."""
    warned: int = 0
    """Gate failures that only warned."""
    hits: int = 0
    """Screen hits in the whole run."""
    last_block: str | None = None
    """The summary of the last blocking failure (for status and the panel)."""
