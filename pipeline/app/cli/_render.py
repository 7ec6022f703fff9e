"""Turning events and states into lines and tables for people (pure formatting, no I/O)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import orjson
from rich.table import Table
from rich.text import Text

from pipeline.app.cli._safe import terminal_safe
from pipeline.core.serialization import CONVERTER
from pipeline.core.state import PipelineState
from pipeline.events import (
    WIRE_TAGS,
    ChangesScreened,
    GateFinished,
    Json,
    PipelineEvent,
    RoleChain,
    SandboxChecked,
    ScreenBaseRecorded,
)
from pipeline.reducers.views import SandboxView, ScreenRun, answer_command, status_rows

__all__ = [
    "describe_event",
    "state_rows",
    "state_table",
    "value_text",
    "waiting_line",
]

_MAX_VALUE = 60
_MAX_PATH = 240
"""A log's path is shown whole up to this (a path cut short cannot be opened)."""
_HITS_NAMED = 3
"""Hits a one-line account of screens names; the rest are counted."""
_SHORT_SHA = 12


def _plain(value: Any) -> str:
    """``value`` as people read it: enum values, not reprs; a chain as ``role:a>b``."""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, Json):
        return value.text
    if isinstance(value, RoleChain):
        return f"{value.role.value}:{'>'.join(value.agents)}"
    if attrs.has(type(value)):
        return type(value).__name__
    if isinstance(value, tuple):
        return ",".join(_plain(item) for item in value)
    return str(value)


def _show(value: Any, limit: int = _MAX_VALUE) -> str:
    text = terminal_safe(_plain(value))  # agent text: never a control sequence
    if len(text) == 64 and all(c in "0123456789abcdef" for c in text):
        return text[:12]  # a sha256 digest: the prefix identifies it for people
    # One fact, one line: a multi-line value (a commit message) keeps its breaks as \n.
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_event(event: PipelineEvent) -> str:
    """One line: the event's wire tag and its fields but the time; a gate's report says how
    it ended, the last line of its output and where the whole output is; a screen, what it
    found."""
    if isinstance(event, GateFinished):
        return _gate_finished(event)
    if isinstance(event, ChangesScreened):
        return _changes_screened(event)
    if isinstance(event, ScreenBaseRecorded):
        return f"{WIRE_TAGS[type(event)]} sha={_commit(event.sha)}"
    if isinstance(event, SandboxChecked):
        # The withheld names can be many: how many, here; which, in the log and the report.
        withheld = f" withheld={len(event.withheld)} variables" if event.withheld else ""
        return f"{WIRE_TAGS[type(event)]} mode={event.mode.value} {_show(event.said)}{withheld}"
    fields = [
        f"{f.name}={_show(getattr(event, f.name))}"
        for f in attrs.fields(type(event))
        if f.name != "at" and getattr(event, f.name) is not None
    ]
    return f"{WIRE_TAGS[type(event)]} " + " ".join(fields)


def _gate_finished(event: GateFinished) -> str:
    """A gate's report on one line. Its command and output digest are left to the log: the
    command can be a whole script, and the first characters of its output say less than its
    last line (a test runner's summary)."""
    fields = [
        f"gate={_show(event.gate)}",
        f"boundary={event.boundary.value}",
        f"status={event.status.value}",
    ]
    if event.exit_code is not None:
        fields.append(f"exit_code={event.exit_code}")
    fields.append(f"duration={event.duration_ms / 1000:.3f}s")
    last = event.tail.rstrip().rsplit("\n", 1)[-1].strip()
    if last:
        fields.append(f"last_line={_show(last)}")
    fields.append(f"log_path={_show(event.log_path, _MAX_PATH)}")
    pinned = "" if event.pinned is None else f" pinned={_commit(event.pinned)}"
    return f"{WIRE_TAGS[type(event)]} " + " ".join(fields) + pinned


def _commit(sha: str | None) -> str:
    """A commit as people read it: its first characters, or ``empty-tree`` for none."""
    return "empty-tree" if sha is None else _show(sha[:_SHORT_SHA])


def _changes_screened(event: ChangesScreened) -> str:
    """A screen's report on one line: where from, how many files, and its first hits (kind
    and place; their details are in the log and the report)."""
    hits = event.hits
    named = "; ".join(
        _show(f"{h.kind.value} {h.path}:{h.line}" if h.line else f"{h.kind.value} {h.path}")
        for h in hits[:_HITS_NAMED]
    )
    more = f"; and {len(hits) - _HITS_NAMED} more" if len(hits) > _HITS_NAMED else ""
    found = f"({named}{more})" if hits else "(clean)"
    return (
        f"{WIRE_TAGS[type(event)]} scope={event.scope.value} base={_commit(event.base)} "
        f"files={event.files} hits={len(hits)} {found}"
    )


def waiting_line(state: PipelineState, workspace: Path | None = None) -> str | None:
    """One line saying the run waits for a person: the question, its deadline and how to
    answer it (None when it waits for nobody)."""
    command = answer_command(state, workspace)
    question = state.ledger.pending_question
    if command is None or question is None:
        return None
    return (
        f"waiting for a person until {_show(question.deadline)}: {question.question!r}; "
        f"answer with: {command}"
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
    table = Table(title=Text(terminal_safe(title)), show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    for what, value in state_rows(state, screens, sandbox):
        table.add_row(Text(what), Text(value))
    return table


def value_text(value: Any) -> str:
    """A state value on one line: a string as it is, anything else as the JSON of its
    converter form (``ralph diff`` and ``ralph serve``'s time travel show changes so)."""
    data = CONVERTER.unstructure(value)
    return data if isinstance(data, str) else orjson.dumps(data, default=str).decode()
