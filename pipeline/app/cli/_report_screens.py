"""``ralph report``'s screens of the run's changes: a small mark per screen on the gates lane,
coloured by what it did, and a Screen table of every hit, in HTML and in Markdown (pure:
strings in, strings out).

A hit's path and detail are the agent's own text (a detail quotes a line of its files): every
text is escaped (HTML, or literal Markdown), never markup. A run that never screened gets none
of it. Scopes, kinds and actions are shown by their values, so a new one needs no change here.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final

from pipeline.app.cli._report_layout import (
    action_text,
    counted,
    markdown_table,
    outcome_rules,
    shortened,
    table_html,
)
from pipeline.app.cli._safe import terminal_safe
from pipeline.reducers.views import JudgedHit, ScreenOutcome, ScreenRun

__all__ = [
    "SCREEN_COLOURS",
    "SCREEN_STYLE",
    "screen_mark_html",
    "screens_markdown",
    "screens_summary",
    "screens_table_html",
]

SCREEN_COLOURS: Final = {
    ScreenOutcome.CLEAN: "#2da44e",
    ScreenOutcome.WARNED: "#bf8700",
    ScreenOutcome.BLOCKED: "#cf222e",
    ScreenOutcome.STOPPED: "#82071e",
}
"""The colour of what each screen did, on the gates lane and in the legend."""

SCREEN_STYLE: Final = (
    outcome_rules("screen-mark", SCREEN_COLOURS)
    + """
.screen-mark { position: absolute; top: 4px; height: 14px; border-radius: 7px;
               box-sizing: border-box; border: 2px solid #1f2328; }
table.screens caption { text-align: left; font-weight: 600; padding-bottom: 4px; }
table.screens td.detail { max-width: 60em; overflow-wrap: anywhere; }
"""
)
"""The screens' part of the page's style (only in a page that has screens)."""

_DETAIL_CHARS: Final = 160
"""The most of a hit's detail the Markdown table shows (the log has it all)."""


def screens_summary(screens: Sequence[ScreenRun]) -> str:
    """The screens in a few words: ``2 screens, 3 hits (1 blocked, 1 clean)`` (empty when
    the run never screened)."""
    if not screens:
        return ""
    counts = {o: sum(s.outcome is o for s in screens) for o in ScreenOutcome}
    parts = ", ".join(f"{n} {o.value}" for o, n in counts.items() if n)
    hits = sum(len(s.hits) for s in screens)
    return f"{counted(len(screens), 'screen')}, {counted(hits, 'hit')} ({parts})"


def _screen_cells(screen: ScreenRun) -> tuple[str, ...]:
    """A screen's own cells: number, when, iteration, scope, base, files."""
    return (
        str(screen.number),
        screen.at.isoformat(timespec="seconds"),
        str(screen.iteration),
        screen.scope.value,
        screen.short_base,
        str(screen.files),
    )


def _hit_cells(hit: JudgedHit | None) -> tuple[str, ...]:
    """A hit's cells: kind, where, detail, action (a clean screen: ``clean`` and dashes)."""
    if hit is None:
        return ("clean", "-", "-", "-")
    return (hit.hit.kind.value, hit.where, hit.hit.detail, action_text(hit.action))


_HEADS: Final = (
    "#",
    "when",
    "iteration",
    "scope",
    "base",
    "files",
    "hit",
    "where",
    "detail",
    "action",
)


def _title(screen: ScreenRun) -> str:
    lines = [
        f"screen {screen.number} ({screen.scope.value}), iteration {screen.iteration}",
        f"{screen.files} files since {screen.short_base}: {screen.outcome.value}",
        *(f"{h.hit.kind.value} {h.where} ({h.action.value})" for h in screen.hits),
    ]
    return "\n".join(lines)


def screen_mark_html(screen: ScreenRun, left: float, width: float) -> str:
    """One screen's mark on the gates lane, coloured by what it did; its tooltip names the
    hits (escaped)."""
    return (
        f'<div class="screen-mark {screen.outcome.value}" data-number="{screen.number}" '
        f'data-outcome="{screen.outcome.value}" data-hits="{len(screen.hits)}" '
        f'style="left:{left:.3f}%;width:{width:.3f}%" '
        f'title="{escape(terminal_safe(_title(screen), newlines=True))}"></div>'
    )


def _rows_html(screen: ScreenRun) -> str:
    """A screen's rows: one per hit (one saying clean when it found none), its own cells
    spanning them."""
    hits: Sequence[JudgedHit | None] = screen.hits or (None,)
    span = f' rowspan="{len(hits)}"' if len(hits) > 1 else ""
    own = "".join(f"<td{span}>{escape(cell)}</td>" for cell in _screen_cells(screen))
    rows = []
    for index, hit in enumerate(hits):
        action = "clean" if hit is None else hit.action.value
        kind, where, detail, does = (escape(terminal_safe(c)) for c in _hit_cells(hit))
        rows.append(
            f'<tr data-screen="{screen.number}" data-action="{escape(action)}">'
            + (own if index == 0 else "")
            + f'<td>{kind}</td><td>{where}</td><td class="detail">{detail}</td><td>{does}</td>'
            + "</tr>"
        )
    return "".join(rows)


def screens_table_html(screens: Sequence[ScreenRun]) -> str:
    """The Screen table: one row per hit of every screen (empty when the run never
    screened)."""
    if not screens:
        return ""
    body = "".join(_rows_html(screen) for screen in screens)
    return table_html(_HEADS, body, ' class="screens" id="screens"', "Screen")


def screens_markdown(screens: Sequence[ScreenRun]) -> list[str]:
    """The Screen table in Markdown, each cell literal text, one row per hit (no line when
    the run never screened)."""
    if not screens:
        return []
    cells = []
    for screen in screens:
        for hit in screen.hits or (None,):
            kind, where, detail, does = _hit_cells(hit)
            cells.append(
                (*_screen_cells(screen), kind, where, shortened(detail, _DETAIL_CHARS), does)
            )
    return ["", "**Screen**", *markdown_table(_HEADS, "rlrllrllll", cells)]
