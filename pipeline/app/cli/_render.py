"""Turning events and states into lines and tables for people (pure formatting, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from rich.table import Table

from pipeline.app.cli._console import text_table
from pipeline.app.cli._describe import describe, show
from pipeline.app.cli._safe import terminal_safe
from pipeline.core.serialization import CONVERTER, encode_event
from pipeline.core.state import PipelineState
from pipeline.events import PipelineEvent
from pipeline.reducers.views import SandboxView, ScreenRun, answer_command, status_rows

__all__ = [
    "describe_event",
    "state_rows",
    "state_table",
    "value_text",
    "waiting_line",
]


def describe_event(event: PipelineEvent) -> str:
    """One line: the event's wire tag and its fields but the time (see
    :func:`pipeline.app.cli._describe.describe`, which renders its wire form)."""
    return describe(orjson.loads(encode_event(event)))


def waiting_line(state: PipelineState, workspace: Path | None = None) -> str | None:
    """One line saying the run waits for a person: the question, its deadline and how to
    answer it (None when it waits for nobody)."""
    command = answer_command(state, workspace)
    question = state.ledger.pending_question
    if command is None or question is None:
        return None
    return (
        f"waiting for a person until {show(question.deadline.isoformat(timespec='seconds'))}: "
        f"{question.question!r}; answer with: {command}"
    )


def state_rows(
    state: PipelineState,
    screens: Sequence[ScreenRun] | None = None,
    sandbox: SandboxView | None = None,
) -> list[tuple[str, str]]:
    """The state's headline figures as (what, value) pairs, for tables in any format; values
    that agents wrote (the question, the last error, a screen's paths, an endpoint) are
    :func:`terminal_safe`. ``screens`` (read from the log: the state only counts hits) adds
    a ``screen`` row for a run that screens its changes; ``sandbox`` (read from the log: the
    state keeps nothing of it) the ``sandbox`` and ``refused connections`` rows of a run
    that recorded its sandbox."""
    rows = status_rows(state, screens, sandbox)
    return [(what, terminal_safe(value)) for what, value in rows]


def state_table(
    state: PipelineState,
    title: str = "Run state",
    screens: Sequence[ScreenRun] | None = None,
    sandbox: SandboxView | None = None,
) -> Table:
    """The state's headline figures as a two-column table (its text never read as rich
    markup or emoji codes: ``root:x:0:0`` stays itself); ``screens`` and ``sandbox`` as for
    :func:`state_rows`."""
    return text_table(("what", "value"), state_rows(state, screens, sandbox), title, pairs=True)


def value_text(value: Any) -> str:
    """A state value on one line: a string as it is, anything else as the JSON of its
    converter form (``ralph diff`` and ``ralph serve``'s time travel show changes so)."""
    data = CONVERTER.unstructure(value)
    return data if isinstance(data, str) else orjson.dumps(data, default=str).decode()
