"""``ralph report``: a run's timeline as one self-contained HTML page or as Markdown (pure:
strings in, strings out; the command writes the file).

The HTML page fetches nothing: its style is inline and it needs no script. Each invocation is
one ``div.bar`` placed on its phase's lane by start time and duration, coloured by outcome,
marked when it was a retry or a fallback, and flagged when its agent wrote malformed lines or
published outside its hat's scope; its tooltip gives the tokens and cost it reported. A small
table gives the cost and tokens per role and per iteration (an unknown cost is named, never
counted as $0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from html import escape
from typing import Final

from pipeline.cli._render import state_rows
from pipeline.cli._report_bars import (
    agent_cell,
    bar_cells,
    cost_cell,
    marks,
    notes,
    tokens_cell,
    worn,
)
from pipeline.cli._report_escalation import moves_html, moves_markdown
from pipeline.cli._report_gates import (
    GATE_STYLE,
    gate_lane_html,
    gate_legend_html,
    gates_markdown,
    gates_summary,
    gates_table_html,
)
from pipeline.cli._report_layout import placed, seconds_text
from pipeline.cli._report_sandbox import (
    SANDBOX_STYLE,
    sandbox_html,
    sandbox_markdown,
    sandbox_summary,
)
from pipeline.cli._report_screens import (
    SCREEN_STYLE,
    screen_legend_html,
    screens_markdown,
    screens_summary,
    screens_table_html,
)
from pipeline.cli._safe import markdown_text
from pipeline.state import Phase, PipelineState
from pipeline.views import (
    GateRun,
    InvocationBar,
    Outcome,
    SandboxView,
    ScreenRun,
    Timeline,
    cost_text,
    spend_line,
    spend_summary,
    usage_text,
)

__all__ = ["html_report", "markdown_report", "spend_rows"]

_STYLE: Final = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1f2328; }
h1 { font-size: 20px; margin: 0 0 4px; }
.summary { color: #57606a; margin-bottom: 16px; }
.timeline { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px; }
.lane { display: flex; align-items: center; height: 30px; border-bottom: 1px dashed #eaeef2; }
.lane:last-child { border-bottom: none; }
.lane-name { width: 150px; flex: none; font-weight: 600; font-size: 12px; }
.track { position: relative; flex: 1; height: 22px; }
.bar { position: absolute; top: 2px; height: 18px; border-radius: 3px; color: #fff;
       font-size: 11px; line-height: 18px; overflow: hidden; white-space: nowrap;
       box-sizing: border-box; padding: 0 2px; }
.bar.succeeded { background: #2da44e; }
.bar.failed { background: #cf222e; }
.bar.timed_out { background: #bc4c00; }
.bar.cut_short { background: #6e7781; }
.bar.running { background: #0969da; }
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
table { border-collapse: collapse; margin-top: 16px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
"""

_COLOURS: Final = {
    Outcome.SUCCEEDED: "#2da44e",
    Outcome.FAILED: "#cf222e",
    Outcome.TIMED_OUT: "#bc4c00",
    Outcome.LIMITED: "#8250df",
    Outcome.CUT_SHORT: "#6e7781",
    Outcome.RUNNING: "#0969da",
}


def _verdict(final: PipelineState) -> str:
    """How the run ended, or the phase it is in while it goes on."""
    return final.termination.value if final.termination else final.phase.value


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


def _iteration(bar: InvocationBar) -> str:
    return f"iteration {bar.iteration}" if bar.iteration else "before iteration 1"


def spend_rows(timeline: Timeline) -> list[tuple[str, str, str, str]]:
    """The cost table: (by what, which, cost, tokens) per role, per iteration, then the run's
    total."""
    rows: list[tuple[str, str, str, str]] = []
    groups: tuple[tuple[str, Callable[[InvocationBar], str]], ...] = (
        ("role", lambda bar: bar.role.value),
        ("iteration", _iteration),
    )
    for what, key in groups:
        keys = list(dict.fromkeys(key(bar) for bar in timeline.bars))
        for name in keys:
            line = spend_line(bar.usage for bar in timeline.bars if key(bar) == name)
            rows.append((what, name, cost_text(line), f"{line.tokens:,}"))
    total = timeline.final.ledger.spend.total
    rows.append(("run", "total", cost_text(total), f"{total.tokens:,}"))
    return rows


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


def _lanes(timeline: Timeline) -> list[Phase]:
    """The phases the run's invocations ran in, in the order first seen."""
    return list(dict.fromkeys(bar.phase for bar in timeline.bars))


def html_report(
    timeline: Timeline,
    title: str,
    gates: Sequence[GateRun] = (),
    screens: Sequence[ScreenRun] = (),
    sandbox: SandboxView | None = None,
) -> str:
    """The run as one HTML page: a summary, the timeline (with a lane for its ``gates`` and
    ``screens``), every invocation, every hit of a screen, every gate run, its ``sandbox``
    and the connections it refused, and the final state."""
    sandboxed = sandbox if sandbox is not None and sandbox.recorded else None
    start, end = timeline.started_at, timeline.ended_at
    final = timeline.final
    verdict = _verdict(final)
    total = max((end - start).total_seconds(), 1e-3) if start and end else 1.0
    lanes = []
    for phase in _lanes(timeline):
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
    legend = "".join(
        f'<span><i style="background:{colour}"></i>{outcome.value}</span>'
        for outcome, colour in _COLOURS.items()
    )
    legend += (
        (
            '<span><i style="outline:2px dashed #1f2328"></i>retry</span>'
            '<span><i style="border-left:4px solid #8250df;background:#eee"></i>fallback</span>'
            "<span>\u26a0 malformed lines or scope violations</span>"
        )
        + gate_legend_html(gates)
        + screen_legend_html(screens)
    )
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(str(cell))}</td>"
            for cell in (
                bar.number,
                bar.phase.value,
                worn(bar),
                agent_cell(bar),
                bar.attempt,
                bar.outcome.value,
                seconds_text(bar.duration_s),
                tokens_cell(bar),
                cost_cell(bar),
                bar.topics,
                bar.malformed_lines,
                bar.scope_violations,
                notes(bar),
            )
        )
        + "</tr>"
        for bar in timeline.bars
    )
    heads = "".join(
        f"<th>{h}</th>"
        for h in (
            "#",
            "phase",
            "role",
            "agent",
            "attempt",
            "outcome",
            "duration",
            "tokens",
            "cost",
            "topics",
            "malformed",
            "scope violations",
            "notes",
        )
    )
    state = "".join(
        f"<tr><th>{escape(what)}</th><td>{escape(value)}</td></tr>"
        for what, value in state_rows(final, screens, sandboxed)
    )
    spend = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>"
        for row in spend_rows(timeline)
    )
    summary = (
        f"{verdict} · {len(timeline.bars)} invocations · "
        + (f"{gates_summary(gates)} · " if gates else "")
        + (f"{screens_summary(screens)} · " if screens else "")
        + (f"{sandbox_summary(sandboxed)} · " if sandboxed else "")
        + f"{spend_summary(final.ledger.spend.total)} · "
        f"{seconds_text(total if start and end else None)}"
        + (f" · started {start.isoformat(timespec='seconds')}" if start else "")
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}{GATE_STYLE if gates else ''}"
        f"{SCREEN_STYLE if screens else ''}{SANDBOX_STYLE if sandboxed else ''}</style>"
        "</head><body>"
        f'<h1>{escape(title)}</h1><div class="summary">{escape(summary)}</div>'
        f'<div class="legend">{legend}</div>'
        f'<div class="timeline" id="timeline">{"".join(lanes)}</div>'
        f'<table class="invocations"><thead><tr>{heads}</tr></thead><tbody>{rows}</tbody></table>'
        f"{moves_html(timeline.moves)}"
        f"{screens_table_html(screens)}{gates_table_html(gates)}"
        f"{sandbox_html(sandboxed) if sandboxed else ''}"
        '<table class="spend"><thead><tr><th>by</th><th></th><th>cost</th><th>tokens</th>'
        f"</tr></thead><tbody>{spend}</tbody></table>"
        f'<table class="state"><tbody>{state}</tbody></table>'
        "</body></html>\n"
    )


def _cell(text: object) -> str:
    # agent text (names, failure messages, models): literal, never HTML or Markdown
    return markdown_text(text)


def markdown_report(
    timeline: Timeline,
    title: str,
    gates: Sequence[GateRun] = (),
    screens: Sequence[ScreenRun] = (),
    sandbox: SandboxView | None = None,
) -> str:
    """The run as Markdown for a pull request: a summary line, the invocations, the hits of
    its ``screens``, the ``gates`` run, its ``sandbox`` and the connections it refused, and
    the final state."""
    sandboxed = sandbox if sandbox is not None and sandbox.recorded else None
    final = timeline.final
    verdict = _verdict(final)
    lines = [
        f"### {_cell(title)}",
        "",
        f"**{verdict}** after {len(timeline.bars)} agent invocations, "
        f"{final.ledger.commits} commits, {final.ledger.agent_failures} agent failures; "
        + (f"{gates_summary(gates)}; " if gates else "")
        + (f"{screens_summary(screens)}; " if screens else "")
        + (f"{sandbox_summary(sandboxed)}; " if sandboxed else "")
        + f"spent {spend_summary(final.ledger.spend.total)}.",
        "",
        "| # | phase | role | agent | attempt | outcome | duration | tokens | cost | notes |",
        "| ---: | --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for bar in timeline.bars:
        cells = (*bar_cells(bar, seconds_text(bar.duration_s)), notes(bar))
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    lines += moves_markdown(timeline.moves)
    lines += screens_markdown(screens)
    lines += gates_markdown(gates)
    lines += sandbox_markdown(sandboxed) if sandboxed else []
    lines += ["", "| by | | cost | tokens |", "| --- | --- | ---: | ---: |"]
    lines += [f"| {' | '.join(_cell(cell) for cell in row)} |" for row in spend_rows(timeline)]
    lines += ["", "| | |", "| --- | --- |"]
    rows = state_rows(final, screens, sandboxed)
    lines += [f"| {_cell(what)} | {_cell(value)} |" for what, value in rows]
    return "\n".join(lines) + "\n"
