"""``ralph report``: a run's timeline as one self-contained HTML page or as Markdown (pure:
strings in, strings out; the command writes the file).

The HTML page fetches nothing: its style is inline and it needs no script. Its timeline is
``_report_timeline``'s (``ralph serve``'s run page shows the same). A small table gives the
cost and tokens per role and per iteration (an unknown cost is named, never counted as $0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Final

from pipeline.app.cli._render import state_rows
from pipeline.app.cli._report_bars import HEADS, bar_cells, notes
from pipeline.app.cli._report_gates import (
    gates_markdown,
    gates_summary,
    gates_table_html,
    screens_markdown,
    screens_summary,
    screens_table_html,
)
from pipeline.app.cli._report_layout import (
    markdown_table,
    pairs_html,
    rows_html,
    seconds_text,
    table_html,
)
from pipeline.app.cli._report_sandbox import (
    SANDBOX_STYLE,
    sandbox_html,
    sandbox_markdown,
    sandbox_summary,
)
from pipeline.app.cli._report_timeline import timeline_html, timeline_style
from pipeline.app.cli._safe import markdown_text
from pipeline.core.state import PipelineState
from pipeline.reducers.views import (
    GateRun,
    InvocationBar,
    LadderMove,
    SandboxView,
    ScreenRun,
    Timeline,
    cost_text,
    spend_line,
    spend_summary,
)

__all__ = ["SPEND_HEADS", "html_report", "markdown_report", "phase_of", "spend_rows"]

_STYLE: Final = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1f2328; }
h1 { font-size: 20px; margin: 0 0 4px; }
.summary { color: #57606a; margin-bottom: 16px; }
table { border-collapse: collapse; margin-top: 16px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
"""


def phase_of(state: PipelineState) -> str:
    """How the run ended, or the phase it is in while it goes on."""
    return state.termination.value if state.termination else state.phase.value


def _iteration(bar: InvocationBar) -> str:
    return f"iteration {bar.iteration}" if bar.iteration else "before iteration 1"


SPEND_HEADS: Final = ("by", "", "cost", "tokens")
"""The heads of :func:`spend_rows`."""


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


_TASK_HEADS: Final = ("task", "status", "by", "title")
_MOVE_HEADS: Final = ("after invocation", "when", "hat", "from", "to", "why")
_TASKS: Final = ' class="tasks"'


def _task_rows(state: PipelineState) -> list[tuple[str, ...]]:
    """The run's tasks, each with its status and who added it (titles are agents' and
    people's words, shown literally)."""
    return [(t.task_id, t.status_text, t.by, t.title) for t in state.context.tasks]


def _move_rows(moves: Sequence[LadderMove]) -> list[tuple[str, ...]]:
    """The hats' moves along their escalation ladders (model names come from ``ralph.toml``;
    escaped all the same)."""
    return [
        (
            str(move.invocations),
            move.at.isoformat(timespec="seconds"),
            move.hat,
            move.before or "its own model",
            move.after or "its own model",
            move.why,
        )
        for move in moves
    ]


def _extras(
    gates: Sequence[GateRun], screens: Sequence[ScreenRun], sandboxed: SandboxView | None
) -> list[str]:
    """What the summary says of the gate runs, the screens and the sandbox, for a run that
    has them."""
    sandbox = sandbox_summary(sandboxed) if sandboxed else ""
    said = (gates_summary(gates), screens_summary(screens), sandbox)
    return [part for part in said if part]


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
    verdict = phase_of(final)
    total = max((end - start).total_seconds(), 1e-3) if start and end else 1.0
    rows = rows_html(
        (
            *bar_cells(bar),
            bar.topics,
            bar.malformed_lines,
            bar.scope_violations,
            notes(bar),
        )
        for bar in timeline.bars
    )
    invocations = table_html(
        (*HEADS, "topics", "malformed", "scope violations", "notes"), rows, ' class="invocations"'
    )
    spend = table_html(SPEND_HEADS, rows_html(spend_rows(timeline)), ' class="spend"')
    state = pairs_html(state_rows(final, screens, sandboxed))
    summary = " · ".join(
        (
            verdict,
            f"{len(timeline.bars)} invocations",
            *_extras(gates, screens, sandboxed),
            spend_summary(final.ledger.spend.total),
            seconds_text(total if start and end else None),
            *([f"started {start.isoformat(timespec='seconds')}"] if start else []),
        )
    )
    moves, tasks = _move_rows(timeline.moves), _task_rows(final)
    escalation = table_html(_MOVE_HEADS, rows_html(moves), ' class="escalation"', "Escalation")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}{timeline_style(bool(gates), bool(screens))}"
        f"{SANDBOX_STYLE if sandboxed else ''}</style>"
        "</head><body>"
        f'<h1>{escape(title)}</h1><div class="summary">{escape(summary)}</div>'
        f"{timeline_html(timeline, gates, screens)}"
        f"{invocations}"
        f"{escalation if moves else ''}"
        f"{screens_table_html(screens)}{gates_table_html(gates)}"
        f"{sandbox_html(sandboxed) if sandboxed else ''}"
        f"{table_html(_TASK_HEADS, rows_html(tasks), _TASKS) if tasks else ''}"
        f"{spend}"
        f'<table class="state"><tbody>{state}</tbody></table>'
        "</body></html>\n"
    )


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
    verdict = phase_of(final)
    lines = [
        # agent text (names, failure messages, models): literal, never HTML or Markdown
        f"### {markdown_text(title)}",
        "",
        f"**{verdict}** after {len(timeline.bars)} agent invocations, "
        f"{final.ledger.commits} commits, {final.ledger.agent_failures} agent failures; "
        + "".join(f"{said}; " for said in _extras(gates, screens, sandboxed))
        + f"spent {spend_summary(final.ledger.spend.total)}.",
    ]
    lines += markdown_table(
        (*HEADS, "notes"),
        "rlllrlrrrl",
        ((*bar_cells(bar), notes(bar)) for bar in timeline.bars),
    )
    moves, tasks = _move_rows(timeline.moves), _task_rows(final)
    lines += ["", "#### Escalation", *markdown_table(_MOVE_HEADS, "rlllll", moves)] if moves else []
    lines += screens_markdown(screens)
    lines += gates_markdown(gates)
    lines += sandbox_markdown(sandboxed) if sandboxed else []
    lines += markdown_table(_TASK_HEADS, "llll", tasks) if tasks else []
    lines += markdown_table(SPEND_HEADS, "llrr", spend_rows(timeline))
    lines += markdown_table(("", ""), "ll", state_rows(final, screens, sandboxed))
    return "\n".join(lines) + "\n"
