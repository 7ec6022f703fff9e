"""Where ``ralph report`` draws things on a lane of its timeline, how it writes a duration and
what a failure did, and the shape of its tables in HTML and in Markdown (pure): shared by the
invocations' lanes, the gates' lane, every table of the report and ``ralph serve``'s."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Final, TypeVar

from pipeline.app.cli._safe import markdown_text, terminal_safe
from pipeline.events import GateAction
from pipeline.reducers.views import counted

__all__ = [
    "MIN_WIDTH_PCT",
    "action_text",
    "cells_html",
    "counted",
    "legend_html",
    "markdown_row",
    "markdown_table",
    "outcome_rules",
    "pairs_html",
    "placed",
    "rows_html",
    "seconds_text",
    "shortened",
    "table_html",
]

Outcome = TypeVar("Outcome", bound=enum.Enum)
"""A gate run's or a screen's outcome, coloured on the lane."""

MIN_WIDTH_PCT: Final = 0.6
"""A bar never narrower than this, so that an invocation of a millisecond still shows."""


def shortened(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis saying where (the log has it all)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def seconds_text(value: float | None) -> str:
    """A duration in seconds as people read it (``running`` when it has none yet)."""
    return "running" if value is None else f"{value:.3f} s" if value < 10 else f"{value:.1f} s"


_DOES: Final = {
    GateAction.BLOCK: "block (work sent back)",
    GateAction.WARN: "warn (developer told)",
    GateAction.STOP: "stop (run ended)",
}


def action_text(action: GateAction | None) -> str:
    """What a gate's failure or a screen's hit did, in words (``-``: nothing)."""
    if action is None:
        return "-"
    return _DOES.get(action, action.value)


def outcome_rules(css_class: str, colours: Mapping[Outcome, str]) -> str:
    """One CSS rule per outcome: ``.CLASS.OUTCOME { background: COLOUR; }``."""
    return "".join(f".{css_class}.{o.value} {{ background: {c}; }}\n" for o, c in colours.items())


def legend_html(noun: str, colours: Mapping[Outcome, str], mark_style: str = "") -> str:
    """One legend entry per outcome, ``NOUN OUTCOME`` beside its colour (``mark_style``: more
    CSS for the colour's mark, as the lane draws it)."""
    more = f";{mark_style}" if mark_style else ""
    return "".join(
        f'<span><i style="background:{colour}{more}"></i>{noun} {o.value}</span>'
        for o, colour in colours.items()
    )


def _position(at: datetime, start: datetime, total: float) -> float:
    return 100.0 * (at - start).total_seconds() / total


def placed(
    spans: Sequence[tuple[datetime, datetime | None]], start: datetime, end: datetime, total: float
) -> list[tuple[float, float]]:
    """Each span's (left, width) on a lane, in percent, for spans in start order: placed by
    its time but never over the one before (a failure of a millisecond is drawn wider than it
    was, so it must not be hidden); a span with no end runs to ``end``."""
    places = []
    cursor = 0.0
    for began, ended in spans:
        left = max(_position(began, start, total), cursor)
        right = _position(ended or end, start, total)
        width = max(right - left, MIN_WIDTH_PCT)
        left = max(0.0, min(left, 100.0 - width))
        cursor = left + width
        places.append((left, width))
    return places


def table_html(heads: Sequence[str], body: str, attrs: str = "", caption: str = "") -> str:
    """A table of ``heads`` (ralph's own words) over ``body`` (its rows' HTML); ``attrs`` are
    the table's own (`` class="gates"``), ``caption`` names it."""
    head = "".join(f"<th>{h}</th>" for h in heads)
    named = f"<caption>{caption}</caption>" if caption else ""
    return f"<table{attrs}>{named}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cells_html(cells: Iterable[object]) -> str:
    """``cells`` as table cells, each with its control characters shown, HTML-escaped."""
    return "".join(f"<td>{escape(terminal_safe(str(cell)))}</td>" for cell in cells)


def rows_html(rows: Iterable[Iterable[object]]) -> str:
    """``rows`` as table rows, every cell as :func:`cells_html` has it."""
    return "".join(f"<tr>{cells_html(row)}</tr>" for row in rows)


def pairs_html(pairs: Iterable[tuple[str, str]]) -> str:
    """(what, value) pairs as table rows, the what a head, both escaped as a cell is."""
    safe = ((escape(terminal_safe(what)), escape(terminal_safe(value))) for what, value in pairs)
    return "".join(f"<tr><th>{what}</th><td>{value}</td></tr>" for what, value in safe)


def markdown_row(cells: Iterable[object]) -> str:
    """One row of a Markdown table, every cell literal text."""
    return f"| {' | '.join(markdown_text(cell) for cell in cells)} |"


def markdown_table(heads: Sequence[str], align: str, rows: Iterable[Iterable[object]]) -> list[str]:
    """A Markdown table's lines, after a blank one: ``heads``, their alignment (``align``: an
    ``l`` or ``r`` per column) and ``rows``, every cell literal text."""
    rule = " | ".join("---:" if side == "r" else "---" for side in align)
    return ["", markdown_row(heads), f"| {rule} |", *map(markdown_row, rows)]
