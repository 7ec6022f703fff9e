"""Where a run stands with its gates: the round of gates under way at final validation and
what it found so far, and the counts of the run (pure data).

A run with no gates keeps the empty :class:`Gating` for its whole life.
"""

from __future__ import annotations

from typing import final

from attrs import frozen

from pipeline.events.values import GateAction, GateBoundary

__all__ = ["GateFailure", "GateRound", "Gating"]


@final
@frozen(kw_only=True)
class GateFailure:
    """A gate that did not pass, and what its failure does."""

    gate: str
    action: GateAction
    summary: str
    """One line: the command, how it ended, where its whole output is."""
    tail: str
    """The end of its output, as the agent is shown it."""


@final
@frozen(kw_only=True)
class GateRound:
    """The gates still to run at this boundary, in order, and the failures so far."""

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
    ran: int = 0
    """Gate commands that reported, in the whole run."""
    blocked: int = 0
    """Rounds a blocking failure sent back to development."""
    warned: int = 0
    """Gate failures that only warned."""
    last_block: str | None = None
    """The summary of the last blocking failure (for status and the panel)."""
