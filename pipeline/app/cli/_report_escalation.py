"""The hats' moves along their escalation ladders shown to people (pure: strings in, strings
out): ``ralph report``'s Escalation table in HTML and in Markdown. A run without moves gets
none of it. Model names come from ``ralph.toml``; they are escaped all the same."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pipeline.app.cli._report_layout import markdown_table, rows_html, table_html
from pipeline.reducers.views import LadderMove

__all__ = ["moves_html", "moves_markdown"]

_HEADS: Final = ("after invocation", "when", "hat", "from", "to", "why")


def _cells(move: LadderMove) -> tuple[str, ...]:
    return (
        str(move.invocations),
        move.at.isoformat(timespec="seconds"),
        move.hat,
        move.before or "its own model",
        move.after or "its own model",
        move.why,
    )


def moves_html(moves: Sequence[LadderMove]) -> str:
    """The moves as an HTML table captioned Escalation (empty without moves)."""
    if not moves:
        return ""
    rows = rows_html(map(_cells, moves))
    return table_html(_HEADS, rows, ' class="escalation"', "Escalation")


def moves_markdown(moves: Sequence[LadderMove]) -> list[str]:
    """The moves as Markdown lines: a heading and a table (none without moves)."""
    if not moves:
        return []
    return ["", "#### Escalation", *markdown_table(_HEADS, "rlllll", map(_cells, moves))]
