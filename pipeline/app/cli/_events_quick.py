"""``ralph events`` on a SQLite store, kept lean: each stored row is printed from its JSON
(:func:`pipeline.app.cli._describe.event_line`, the line the full command prints from the
decoded event) without typer, the events or the converter (about a quarter of the full
command's time, most of it the interpreter's start and rich's import).

It answers only where it gives exactly what the full command gives: the plain shapes
(``ralph events [PATH] [--run RUN]``) on a SQLite file this release writes, a run whose rows
all carry the current schema version and a digest, and a log that passes the checks the
store's reader makes (no row missing, the hash chain intact, the run's head and tip at its
last row). The rows so checked are the ones the store's append encoded from typed events,
so their fields are as the events have them. Anything else (an option, a ``.jsonl`` log, a
URL, ``RALPH_STORE``, an older schema to upcast, an unknown run, a damaged log, a file that
cannot be opened) returns None, having printed nothing, and the full command runs: it reads,
decodes and reports as before.
"""

from __future__ import annotations

import os

import orjson

from pipeline.app.cli._describe import event_line
from pipeline.app.cli._lean_store import LOG, SCHEMA_READ, chain_holds, named_store, snapshot
from pipeline.app.cli._plain import PLAIN_SHAPES, arguments

# ``typing`` is imported for the type checker only, as in ``pipeline.app.cli._emit``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from typing import Final

__all__ = ["EVENTS_READ", "main"]

EVENTS_READ: Final = 21
"""The event schema version whose rows this path prints (a test holds it to
``pipeline.events.SCHEMA_VERSION``: rows of another version are upcast by the full command)."""

_RUNS: Final = "SELECT run_id, head, tip, started_at FROM runs ORDER BY started_at, rowid"
"""Every run, oldest first: the order ``choose_run`` takes the latest from (with each one's
start, which that reader decodes too: a start that is not text is damage it reports)."""
_AT_ONCE: Final = 1_000
"""Lines printed in one call: the console's work per call (its size, read from the
environment) cost as much as the lines themselves; the output is the same."""


def _line_made(sequence: int, _tag: str, version: int, body: bytes | str) -> bool:
    """Whether the row is at the schema this path prints and its line can be made (made
    once to check, before any is printed: the chain is no signature)."""
    if version != EVENTS_READ:
        return False
    try:
        event_line(sequence, orjson.loads(body))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return False
    return True


def _print(db: sqlite3.Connection, wanted: str | None) -> bool:
    """Print run ``wanted``'s events (the latest run's when None) and return True, or return
    False, having printed nothing, when this path cannot print them exactly as the full
    command does. The rows are read twice in one snapshot, to check and to print, so that a
    long log is never held whole (a read that fails while printing, the disk's fault, leaves
    the log to the full command, which reads it again from the start and reports it)."""
    runs: dict[str, tuple[int, str | None]] = {r: (h, t) for r, h, t, _ in db.execute(_RUNS)}
    run_id = next(reversed(runs), None) if wanted is None else wanted
    if run_id is None or run_id not in runs:
        return False  # no runs, or not this one: the full command says so
    if not chain_holds(run_id, db.execute(LOG, (run_id, 0)), *runs[run_id], each=_line_made):
        return False  # not as the store's reader reads it: the full command says why
    from pipeline.app.cli._console import output_console

    out, rows, number = output_console(), db.execute(LOG, (run_id, 0)), 0
    while batch := rows.fetchmany(_AT_ONCE):
        lines = (event_line(number + i, orjson.loads(row[3])) for i, row in enumerate(batch))
        out.print("\n".join(lines), soft_wrap=True, markup=False)
        number += len(batch)
    return True


def main(argv: list[str]) -> int | None:
    """Print the events ``ralph events ARGV`` names and return 0, or return None (printing
    nothing) when the full command must answer."""
    given = arguments(PLAIN_SHAPES["events"], argv)
    if given is None or "RALPH_STORE" in os.environ:
        return None
    source, run = given.get("source"), given.get("run")
    wanted = None if run is None else str(run)
    path = named_store(None if source is None else str(source))  # as ``ralph runs`` finds it
    if path is None or path.suffix == ".jsonl" or not path.is_file():
        return None
    try:
        # One snapshot: the rows, the head and the tip agree.
        return 0 if snapshot(path, SCHEMA_READ, lambda db: _print(db, wanted)) else None
    except KeyboardInterrupt:
        return 130  # as the full command ends on one
