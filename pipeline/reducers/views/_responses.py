"""The agent response log: one row per structured response an agent submitted (pure).

A projection of the event log: each accepted ``ResponseSubmitted`` carries its verdict, so the
rows can be rebuilt from the events alone and always equal the ones written live.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from typing import final

from attrs import frozen

from pipeline.core.state import PipelineState
from pipeline.events import PipelineEvent, ResponseStatus, ResponseSubmitted
from pipeline.reducers import steps

__all__ = ["LoggedStatus", "ResponseLogRow", "response_log", "response_row"]


@enum.unique
class LoggedStatus(enum.StrEnum):
    """How the ``agent_response_log`` table names a response's verdict."""

    SUCCESS = "SUCCESS"
    MALFORMED = "MALFORMED"
    SCHEMA_VIOLATION = "SCHEMA_VIOLATION"


_LOGGED = {
    ResponseStatus.VALID: LoggedStatus.SUCCESS,
    ResponseStatus.INVALID_JSON: LoggedStatus.MALFORMED,
    ResponseStatus.SCHEMA_VIOLATION: LoggedStatus.SCHEMA_VIOLATION,
}


@final
@frozen(kw_only=True)
class ResponseLogRow:
    """One row of ``agent_response_log`` (its ``id`` and ``run_id`` are the store's)."""

    task_id: str
    """The task the response belongs to: ``role:phase:iteration:review_pass``."""
    turn_number: int
    """1 for the task's first response, then one more per correction turn."""
    raw_response: str
    status: LoggedStatus
    violations: tuple[str, ...]
    """``pointer: message`` per schema violation; why a malformed one is no JSON."""
    correction_attempt: int
    """0 for the original answer, then 1, 2, ... for correction turns."""
    timestamp: str
    """When the handler read the response (ISO 8601)."""


def response_row(
    before: PipelineState, event: PipelineEvent, after: PipelineState
) -> ResponseLogRow | None:
    """The row ``event`` adds, folded from ``before`` into ``after`` (None for other events
    and for a response the run did not take: an anomaly)."""
    if not isinstance(event, ResponseSubmitted):
        return None
    check = after.ledger.response
    if check is None or after.ledger.anomalies != before.ledger.anomalies:
        return None
    turn = check.failures + 1 if check.valid else check.failures
    progress = before.progress
    task = f"{event.role.value}:{progress.phase.value}:{progress.iteration}:{progress.review_pass}"
    return ResponseLogRow(
        task_id=task,
        turn_number=turn,
        raw_response=event.raw_response,
        status=_LOGGED[event.status],
        violations=event.problems,
        correction_attempt=turn - 1,
        timestamp=event.at.isoformat(),
    )


def response_log(events: Iterable[PipelineEvent]) -> Iterator[ResponseLogRow]:
    """The rows of one run's ``events``, in log order."""
    for before, event, after in steps(events):
        row = response_row(before, event, after)
        if row is not None:
            yield row
