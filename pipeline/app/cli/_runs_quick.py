"""``ralph runs`` on a SQLite store, kept lean: the runs and their cost come from the
store's ``run_summaries`` projection (written with the events, see
``pipeline.handlers.store._summaries``), printed through rich without typer, the events or
the converter (about 5x a bare interpreter start instead of 60x).

It answers only where it gives exactly what the full command gives: the plain shapes
(``ralph runs`` and ``ralph runs PATH``), a SQLite file this release can read, every run's
summary current (at its run's head). Anything else (an option, a URL, a store written before
the projection, a summary behind, a file that cannot be opened) returns None and the full
command runs, folding each run's log as before.
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.app.cli._lean_store import named_store, snapshot, tail_holds

# ``typing`` is imported for the type checker only, as in ``pipeline.app.cli._emit``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from typing import Final

__all__ = ["cost_cell", "main"]

_RUNS: Final = (
    "SELECT r.run_id, r.head, r.tip, r.started_at, s.sequence, s.invocations, s.cost_usd, "
    "s.unknown_cost FROM runs r LEFT JOIN run_summaries s ON s.run_id = r.run_id "
    # rowid: the order the logs began in (a fork keeps its source's start), as the store lists
    "ORDER BY r.started_at, r.rowid"
)


def _dollars(amount: float) -> str:
    # As pipeline.reducers.views.dollars (a test holds the two equal): four decimals under a dollar.
    return f"${amount:.4f}" if amount < 1 else f"${amount:,.2f}"


def cost_cell(invocations: int, cost_usd: float, unknown_cost: int) -> str:
    """The cost column of ``ralph runs`` for a run's spend in all: ``-`` when no invocation
    reported usage, else :func:`pipeline.reducers.views.cost_text` of it (a test holds them
    equal)."""
    if not invocations:
        return "-"
    if invocations - unknown_cost <= 0:
        return "unknown"
    if unknown_cost:
        return f"{_dollars(cost_usd)} + {unknown_cost} of unknown cost"
    return _dollars(cost_usd)


def _location(argv: list[str]) -> Path | None:
    """The store file ``ralph runs ARGV`` reads, or None for a shape this path leaves to
    the full command."""
    if len(argv) > 1 or (argv and (argv[0].startswith("-") or not argv[0])):
        return None
    return named_store(argv[0] if argv else os.environ.get("RALPH_STORE"))


def _rows(path: Path) -> list[tuple[str, str, str, str]] | None:
    """(run, events, cost, started) of every run, oldest first, from the projection; None
    when the store cannot be read so, a summary is not current, or a run's log does not
    read as the full command's fold of it reads it (a checkpoint it would skip and report,
    damage after the checkpoint)."""

    def read(db: sqlite3.Connection) -> list[tuple[str, str, str, str]] | None:
        rows = []
        for run_id, head, tip, started, sequence, invocations, cost, unknown in db.execute(_RUNS):
            if sequence != head or not tail_holds(db, run_id, head, tip):
                return None
            rows.append((str(run_id), str(head), cost_cell(invocations, cost, unknown), started))
        return rows

    # 8 added the summaries; one snapshot: the heads, the summaries and the logs agree.
    return snapshot(path, 8, read)


def main(argv: list[str]) -> int | None:
    """Print the runs of the store ``ralph runs ARGV`` names and return 0, or return None
    (printing nothing) when the full command must answer."""
    path = _location(argv)
    if path is None or not path.is_file():
        return None
    rows = _rows(path)
    if rows is None:
        return None
    from pipeline.app.cli._console import output_console, text_table

    heads = ("run", "events", "cost", "started")
    output_console().print(text_table(heads, rows, f"Runs in {path}"))
    return 0
