"""``ralph report``'s gates and screens: a lane on the timeline with one bar per gate run,
coloured by outcome, and a small mark per screen of the run's changes, coloured by what it
did; a table of the gate runs and a Screen table of every hit, in HTML and in Markdown (pure:
strings in, strings out).

A gate's output is the text of a command the agent may have written, and a hit's path and
detail are the agent's own text (a detail quotes a line of its files): every text is escaped
(HTML, or literal Markdown), never markup. A run with no gate run, or that never screened,
gets none of that part. Scopes, kinds and actions are shown by their values, so a new one
needs no change here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Final

from pipeline.app.cli._report_layout import (
    action_text,
    cells_html,
    counted,
    markdown_table,
    outcome_rules,
    placed,
    seconds_text,
    shortened,
    table_html,
)
from pipeline.app.cli._safe import terminal_safe
from pipeline.reducers.views import GateOutcome, GateRun, JudgedHit, ScreenOutcome, ScreenRun

__all__ = [
    "GATE_COLOURS",
    "GATE_STYLE",
    "SCREEN_COLOURS",
    "SCREEN_STYLE",
    "gate_lane_html",
    "gates_markdown",
    "gates_summary",
    "gates_table_html",
    "screen_mark_html",
    "screens_markdown",
    "screens_summary",
    "screens_table_html",
]

GATE_COLOURS: Final = {
    GateOutcome.PASSED: "#2da44e",
    GateOutcome.BLOCKED: "#cf222e",
    GateOutcome.WARNED: "#bf8700",
    GateOutcome.STOPPED: "#82071e",
    GateOutcome.CUT_SHORT: "#6e7781",
    GateOutcome.RUNNING: "#0969da",
}
"""The colour of each gate run's outcome, on its lane and in the legend."""

GATE_STYLE: Final = (
    outcome_rules("gate-bar", GATE_COLOURS)
    + """
.gate-bar { position: absolute; top: 2px; height: 18px; border-radius: 3px; color: #fff;
            font-size: 11px; line-height: 18px; overflow: hidden; white-space: nowrap;
            box-sizing: border-box; padding: 0 2px; }
table.gates caption { text-align: left; font-weight: 600; padding-bottom: 4px; }
table.gates pre { margin: 0; max-width: 60em; overflow-x: auto; font-size: 12px; }
"""
)
"""The gates' part of the page's style (only in a page that has gate runs)."""

_LAST_LINE_CHARS: Final = 120
"""The most of a gate's last output line the Markdown table shows (the log has it all)."""


def gates_summary(runs: Sequence[GateRun]) -> str:
    """The gate runs in a few words: ``4 gate runs (2 passed, 1 blocked, 1 warned)`` (empty
    when there is none)."""
    if not runs:
        return ""
    counts = {o: sum(r.outcome is o for r in runs) for o in GateOutcome}
    parts = ", ".join(f"{n} {o.value.replace('_', ' ')}" for o, n in counts.items() if n)
    return f"{counted(len(runs), 'gate run')} ({parts})"


def _status(run: GateRun) -> str:
    """How the command ended, with its exit code: ``failed, exit 1``; ``cut short`` when the
    run stopped before it reported."""
    if run.outcome is GateOutcome.CUT_SHORT:
        return "cut short (never reported)"
    if run.status is None:
        return "running"
    if run.exit_code is None:
        return run.status.value
    return f"{run.status.value}, exit {run.exit_code}"


def _rows(runs: Sequence[GateRun]) -> list[tuple[str, ...]]:
    """Each run's cells, as text: number, gate, boundary, iteration, duration, status,
    action, log."""
    return [
        (
            str(run.number),
            run.gate,
            run.boundary.value,
            str(run.iteration),
            seconds_text(run.duration_s),
            _status(run),
            action_text(run.action),
            run.log_path or "-",
        )
        for run in runs
    ]


_HEADS: Final = ("#", "gate", "boundary", "iteration", "duration", "status", "action", "log")


def _title(run: GateRun) -> str:
    parts = [
        f"gate {run.gate} ({run.boundary.value}), iteration {run.iteration}",
        _status(run),
        f"duration {seconds_text(run.duration_s)}",
        f"action: {action_text(run.action)}",
        f"log: {run.log_path or '-'}",
    ]
    pinning = pinning_text(run)
    if pinning:
        parts.append(pinning)
    return "\n".join(parts)


def pinning_text(run: GateRun) -> str:
    """What the gate's world was: pinned to which base, with which of the agent's files not
    used (empty for a gate that ran on the work tree as it was)."""
    if run.pinned is None:
        return ""
    text = f"pinned to {run.pinned[:12]}"
    if run.restored:
        text += f"; the base's {', '.join(run.restored)} (the agent's changes to them not used)"
    return text


def gate_lane_html(
    runs: Sequence[GateRun],
    start: datetime,
    end: datetime,
    total: float,
    screens: Sequence[ScreenRun] = (),
) -> str:
    """The timeline's gates lane: one bar per run and a small mark per screen, placed by
    their time, coloured by their outcome (empty when there is neither)."""
    if not runs and not screens:
        return ""
    # Screens and gate runs share the lane in time order, so no mark hides a bar (a screen
    # comes before the gates of its round).
    both: list[GateRun | ScreenRun] = [*runs, *screens]
    items = sorted(both, key=_lane_order)
    places = placed([_span(item) for item in items], start, end, total)
    drawn = "".join(
        _bar_html(item, left, width)
        if isinstance(item, GateRun)
        else screen_mark_html(item, left, width)
        for item, (left, width) in zip(items, places, strict=True)
    )
    return (
        '<div class="lane" data-lane="gates"><div class="lane-name">gates</div>'
        f'<div class="track">{drawn}</div></div>'
    )


def _lane_order(item: GateRun | ScreenRun) -> tuple[datetime, bool, int]:
    return (_span(item)[0], isinstance(item, GateRun), item.number)


def _span(item: GateRun | ScreenRun) -> tuple[datetime, datetime | None]:
    """When a gate run began and ended; a screen reports no start, so it is a moment."""
    if isinstance(item, GateRun):
        return item.started_at, item.ended_at
    return item.at, item.at


def _bar_html(run: GateRun, left: float, width: float) -> str:
    return (
        f'<div class="gate-bar {run.outcome.value}" data-number="{run.number}" '
        f'data-gate="{escape(run.gate)}" data-outcome="{run.outcome.value}" '
        f'style="left:{left:.3f}%;width:{width:.3f}%" title="{escape(_title(run))}">'
        f"{escape(run.gate)}</div>"
    )


def _output_html(run: GateRun) -> str:
    pinning = pinning_text(run)
    said = f'<p class="pinned">{escape(terminal_safe(pinning))}</p>' if pinning else ""
    return said + _tail_html(run)


def _tail_html(run: GateRun) -> str:
    """The end of the gate's output, folded under its last line, escaped."""
    if not run.tail:
        return ""
    last = run.tail.rstrip().rsplit("\n", 1)[-1]
    return (
        f"<details><summary>{escape(terminal_safe(last))}</summary>"
        f"<pre>{escape(terminal_safe(run.tail, newlines=True))}</pre></details>"
    )


def gates_table_html(runs: Sequence[GateRun]) -> str:
    """The Gates table: one row per run, with the end of its output (empty when there is no
    run)."""
    if not runs:
        return ""
    body = "".join(
        f'<tr data-outcome="{run.outcome.value}">{cells_html(row)}<td>{_output_html(run)}</td></tr>'
        for run, row in zip(runs, _rows(runs), strict=True)
    )
    return table_html((*_HEADS, "end of output"), body, ' class="gates" id="gates"', "Gates")


def gates_markdown(runs: Sequence[GateRun]) -> list[str]:
    """The Gates table in Markdown, each cell literal text, with the last line of each run's
    output (no line when there is no run)."""
    if not runs:
        return []
    cells = []
    for run, row in zip(runs, _rows(runs), strict=True):
        pinning = pinning_text(run)
        last = shortened(run.tail.rstrip().rsplit("\n", 1)[-1], _LAST_LINE_CHARS)
        cells.append((*row, f"[{pinning}] {last}" if pinning else last))
    heads = (*_HEADS, "last line of output")
    return ["", "**Gates**", *markdown_table(heads, "rllrrllll", cells)]


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


_SCREEN_HEADS: Final = (
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


def _screen_title(screen: ScreenRun) -> str:
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
        f'title="{escape(terminal_safe(_screen_title(screen), newlines=True))}"></div>'
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
    return table_html(_SCREEN_HEADS, body, ' class="screens" id="screens"', "Screen")


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
    return ["", "**Screen**", *markdown_table(_SCREEN_HEADS, "rlrllrllll", cells)]
