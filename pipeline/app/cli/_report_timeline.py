"""The timeline of a run as HTML (pure: a timeline in, markup out), for ``ralph report``'s
page and ``ralph serve``'s run page: a lane per phase, each invocation one ``div.bar``
placed on its phase's lane by start time and duration, coloured by outcome, marked when it
was a retry or a fallback, and flagged when its agent wrote malformed lines or published
outside its hat's scope; its tooltip gives the tokens and cost it reported. A lane for the
gates and screens, an axis of the time since the run started, and a legend."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Final

from pipeline.app.cli._report_bars import agent_cell, cost_cell, marks, tokens_cell, worn
from pipeline.app.cli._report_gates import (
    GATE_COLOURS,
    GATE_STYLE,
    SCREEN_COLOURS,
    SCREEN_STYLE,
    gate_lane_html,
)
from pipeline.app.cli._report_layout import legend_html, outcome_rules, placed, seconds_text
from pipeline.reducers.views import GateRun, InvocationBar, Outcome, ScreenRun, Timeline, usage_text

__all__ = ["timeline_html", "timeline_style"]

_COLOURS: Final = {
    Outcome.SUCCEEDED: "#2da44e",
    Outcome.FAILED: "#cf222e",
    Outcome.TIMED_OUT: "#bc4c00",
    Outcome.LIMITED: "#8250df",
    Outcome.CUT_SHORT: "#6e7781",
    Outcome.RUNNING: "#0969da",
}

_STYLE: Final = """
.timeline { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px; }
.lane { display: flex; align-items: center; height: 30px; border-bottom: 1px dashed #eaeef2; }
.lane:last-child { border-bottom: none; }
.lane-name { width: 150px; flex: none; font-weight: 600; font-size: 12px; }
.track { position: relative; flex: 1; height: 22px; }
.bar { position: absolute; top: 2px; height: 18px; border-radius: 3px; color: #fff;
       font-size: 11px; line-height: 18px; overflow: hidden; white-space: nowrap;
       box-sizing: border-box; padding: 0 2px; }
.bar.retry { outline: 2px dashed #1f2328; }
.bar.fallback { border-left: 4px solid #8250df; }
.bar.flagged::after { content: "\\26A0"; position: absolute; right: 2px; }
.axis { height: 18px; border-bottom: none; }
.tick { position: absolute; font-size: 11px; color: #57606a; transform: translateX(-50%);
        white-space: nowrap; }
.tick:first-child { transform: none; }
.tick:last-child { transform: translateX(-100%); }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 12px; height: 12px; border-radius: 2px;
            vertical-align: middle; margin-right: 4px; }
""" + outcome_rules("bar", _COLOURS)


def timeline_style(gates: bool = True, screens: bool = True) -> str:
    """The style rules :func:`timeline_html`'s markup needs (with its gates' and screens'
    when it has any)."""
    return _STYLE + (GATE_STYLE if gates else "") + (SCREEN_STYLE if screens else "")


def timeline_html(
    timeline: Timeline, gates: Sequence[GateRun] = (), screens: Sequence[ScreenRun] = ()
) -> str:
    """The legend and the timeline (``div#timeline``): a lane per phase the run's
    invocations ran in, a lane for its ``gates`` and ``screens``, and the time axis."""
    start, end = timeline.started_at, timeline.ended_at
    total = max((end - start).total_seconds(), 1e-3) if start and end else 1.0
    lanes = []
    for phase in dict.fromkeys(bar.phase for bar in timeline.bars):  # in the order first seen
        in_lane = [bar for bar in timeline.bars if bar.phase is phase]
        bars = _lane_html(in_lane, start, end, total) if start and end else ""
        lanes.append(
            f'<div class="lane" data-phase="{phase.value}"><div class="lane-name">'
            f'{phase.value}</div><div class="track">{bars}</div></div>'
        )
    if start and end:
        lanes.append(gate_lane_html(gates, start, end, total, screens))
    if timeline.bars or gates or screens:
        lanes.append(_axis(total))
    legend = (
        "".join(
            f'<span><i style="background:{colour}"></i>{outcome.value}</span>'
            for outcome, colour in _COLOURS.items()
        )
        + '<span><i style="outline:2px dashed #1f2328"></i>retry</span>'
        '<span><i style="border-left:4px solid #8250df;background:#eee"></i>fallback</span>'
        "<span>\u26a0 malformed lines or scope violations</span>"
        + (legend_html("gate", GATE_COLOURS) if gates else "")
        + (legend_html("screen", SCREEN_COLOURS, "border-radius:6px") if screens else "")
    )
    return (
        f'<div class="legend">{legend}</div>'
        f'<div class="timeline" id="timeline">{"".join(lanes)}</div>'
    )


def _title(bar: InvocationBar) -> str:
    parts = [
        f"#{bar.number} {worn(bar)} via {agent_cell(bar)}",
        f"{bar.phase.value}, iteration {bar.iteration}, review pass {bar.review_pass}",
        f"{bar.outcome.value}: {bar.detail}" if bar.detail else bar.outcome.value,
        f"duration {seconds_text(bar.duration_s)}",
        usage_text(bar.usage),
        *marks(bar),
    ]
    return "\n".join(parts)


def _bar_html(bar: InvocationBar, left: float, width: float) -> str:
    classes = ["bar", bar.outcome.value]
    if bar.is_retry:
        classes.append("retry")
    if bar.is_fallback:
        classes.append("fallback")
    if bar.malformed_lines or bar.scope_violations:
        classes.append("flagged")
    return (
        f'<div class="{" ".join(classes)}" data-number="{bar.number}" '
        f'data-role="{bar.role.value}" data-agent="{escape(bar.agent)}" '
        f'data-outcome="{bar.outcome.value}" data-tokens="{tokens_cell(bar)}" '
        f'data-cost="{escape(cost_cell(bar))}" style="left:{left:.3f}%;width:{width:.3f}%" '
        f'title="{escape(_title(bar))}">{bar.number} {escape(bar.agent)}</div>'
    )


def _lane_html(bars: list[InvocationBar], start: datetime, end: datetime, total: float) -> str:
    """A lane's bars, in start order, each placed by its time but never over the one before."""
    in_order = sorted(bars, key=lambda b: (b.started_at, b.number))
    places = placed([(bar.started_at, bar.ended_at) for bar in in_order], start, end, total)
    return "".join(
        _bar_html(bar, left, width) for bar, (left, width) in zip(in_order, places, strict=True)
    )


def _axis(total: float) -> str:
    """Tick labels under the lanes: the time since the run started."""
    ticks = "".join(
        f'<span class="tick" style="left:{pct}%">{seconds_text(total * pct / 100)}</span>'
        for pct in (0, 25, 50, 75, 100)
    )
    return (
        '<div class="lane axis"><div class="lane-name">time</div>'
        f'<div class="track">{ticks}</div></div>'
    )
