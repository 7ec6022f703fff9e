"""The hats' moves along their escalation ladders shown to people (pure: strings in, strings
out): ``ralph report``'s Escalation table in HTML and in Markdown. A run without moves gets
none of it. Model names come from ``ralph.toml``; they are escaped all the same."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final

from pipeline.app.cli._safe import markdown_text
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
    heads = "".join(f"<th>{head}</th>" for head in _HEADS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in _cells(move)) + "</tr>"
        for move in moves
    )
    return (
        '<table class="escalation"><caption>Escalation</caption>'
        f"<thead><tr>{heads}</tr></thead><tbody>{rows}</tbody></table>"
    )


def moves_markdown(moves: Sequence[LadderMove]) -> list[str]:
    """The moves as Markdown lines: a heading and a table (none without moves)."""
    if not moves:
        return []
    lines = ["", "#### Escalation", "", "| " + " | ".join(_HEADS) + " |"]
    lines.append("| ---: | --- | --- | --- | --- | --- |")
    lines += [
        "| " + " | ".join(markdown_text(cell) for cell in _cells(move)) + " |" for move in moves
    ]
    return lines
