"""``ralph diff``: what changed in a run's state between two points of its log, and the facts
in between (time travel; ``ralph replay --until N`` shows the whole state at one point)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import orjson
import typer
from rich.text import Text

from pipeline.app.cli._app import (
    ReadWorkspaceOption,
    RunOption,
    SourceArgument,
    _fail,
    _reading_log,
    app,
    out,
)
from pipeline.app.cli._console import text_table
from pipeline.app.cli._render import describe_event, value_text
from pipeline.app.cli._safe import terminal_safe
from pipeline.core.serialization import CONVERTER, unstructure_event
from pipeline.reducers.views import Change, state_changes, states_at

__all__ = ["diff"]


@app.command()
def diff(
    source: SourceArgument = None,
    workspace: ReadWorkspaceOption = None,
    run: RunOption = None,
    start: Annotated[
        int, typer.Option("--from", help="The earlier point: after its first FROM events.", min=0)
    ] = 0,
    end: Annotated[
        int | None,
        typer.Option(
            "--to", help="The later point: after its first TO events (default: all).", min=0
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the changes as JSON.")] = False,
) -> None:
    """What changed in a run's state between two points of its log (``--from A --to B``:
    after its first A and B events), field by field, and the facts in between. The state at
    each point is folded from the log: nothing is stored twice."""
    with _reading_log(source, run, workspace) as log:
        events = list(log.events())
    for point, flag in ((start, "--from"), (end, "--to")):
        if point is not None and point > len(events):
            raise _fail(f"{flag} {point}: {log.label} holds {len(events)} events")
    last = len(events) if end is None else end
    if start > last:
        raise _fail(f"--from {start} is after --to {last}")
    before, after = states_at(events, (start, last))
    changes = state_changes(before, after)
    between = events[start:last]
    if as_json:
        document = {
            "from": start,
            "to": last,
            "changes": [_change_json(change) for change in changes],
            "events": [unstructure_event(event) for event in between],
        }
        sys.stdout.write(orjson.dumps(document).decode() + "\n")
        return
    cells = [(change.path, _shown(change.before), _shown(change.after)) for change in changes]
    title = f"{log.label}: after {start} events → after {last}"
    out.print(text_table(("field", "before", "after"), cells, title))
    out.print(f"{len(changes)} fields changed by {len(between)} facts:")
    for number, event in enumerate(between, start + 1):
        out.print(Text(f"{number:>6}  {terminal_safe(describe_event(event))}"))


def _change_json(change: Change) -> dict[str, Any]:
    """A change as JSON data, its values in the converter's own form."""
    before, after = CONVERTER.unstructure(change.before), CONVERTER.unstructure(change.after)
    return {"field": change.path, "before": before, "after": after}


def _shown(value: Any) -> str:
    """A value on one line, at most 120 characters, safe for a terminal."""
    text = terminal_safe(value_text(value))
    return text if len(text) <= 120 else text[:117] + "..."
