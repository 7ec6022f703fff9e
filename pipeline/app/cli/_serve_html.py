"""The HTML of ``ralph serve``'s pages (pure but for reading nothing: strings in, strings out):
the page frame with its security headers and style, the tables, and the steering forms. Every
text is escaped here, with its control characters shown, before it reaches a page.

Every address a page holds (links, forms, its script) is relative to the page (``up``: the
way from the page to the root of the pages, ``./`` or ``../``), so the pages work under
``/t/<token>/`` (``_serve_guard``) and their HTML never holds the token."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Final
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse

from pipeline.app.cli._report import SPEND_HEADS, spend_rows
from pipeline.app.cli._report_bars import HEADS, bar_cells
from pipeline.app.cli._report_layout import rows_html, table_html
from pipeline.app.cli._report_timeline import timeline_html, timeline_style
from pipeline.app.cli._safe import terminal_safe
from pipeline.app.cli._serve_guard import Access
from pipeline.app.graph import run_svg
from pipeline.app.workspace import fork_folder, resume_hint
from pipeline.core.state import PipelineState, is_terminal
from pipeline.engine import guidable_hats
from pipeline.events import PipelineEvent, RunId
from pipeline.reducers.views import Timeline, gate_runs, screen_runs

__all__ = [
    "HEADERS",
    "SAID",
    "agent_rows",
    "cancel_form",
    "href",
    "page",
    "pictures",
    "said_text",
    "steering",
    "tail",
    "text",
    "up_of",
]

HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    # The token is in every address: same-origin sends a Referer to this server alone (never
    # to another port or site), and lets a form's own POST name its origin (no-referrer
    # makes a browser send "Origin: null" there, and the Origin check could tell nothing).
    "Referrer-Policy": "same-origin",
}
"""Sent with every answer: no script but ``/app.js`` runs, whatever a page holds."""

_STYLE: Final = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1f2328; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top;
         max-width: 60em; overflow-wrap: anywhere; }
ol.facts { font-family: ui-monospace, monospace; font-size: 12px; max-height: 28em;
           overflow: auto; }
form { margin: 0.5em 0 1em; } textarea { width: 40em; height: 4em; }
input[type=range] { width: 60em; max-width: 100%; }
.notice { background: #fff8c5; padding: 6px 10px; } .error { background: #ffebe9; }
.graph-box { overflow-x: auto; border: 1px solid #d0d7de; border-radius: 6px; }
td form { margin: 0; }
""" + timeline_style()


SAID: Final = {
    "guided": "Guidance kept: the chosen hat's next prompt carries it.",
    "answered": "Answered: the run goes on.",
    "interrupted": "Asked the run to stop: it saves a checkpoint, and ralph resume goes on.",
    "cancelled": "Cancelled: a queued ticket never runs; a running one's worker stops it.",
}
"""What a run page says after a form did its work (``?said=``: a key, never a text, so no
link can make the page say something of its own)."""


_FORKED = re.compile(r"forked:([0-9]{8}-[0-9]{6}-[0-9a-f]{6})")


def said_text(key: str, workspace: Path, store: str | None = None) -> str:
    """What a run page says for ``key`` (:data:`SAID`, or ``forked:RUN`` with the command
    that goes on with the fork); "" for anything else."""
    forked = _FORKED.fullmatch(key)
    if forked is None:
        return SAID.get(key, "")
    root = workspace.resolve()
    target = fork_folder(root, forked.group(1))
    # Only a fork that is there: a link cannot point a person at a folder of its choosing.
    # (Its log may be in a shared store rather than the worktree's own.)
    if not (target / ".git").is_file():
        return ""
    return f"Forked: go on with {resume_hint(forked.group(1), target, store)}"


def up_of(request: Request) -> str:
    """The way from the page ``request`` asks for to the root of the pages, relative: ``./``
    from the runs, ``../`` from ``runs/R``, ``../../`` from ``runs/R/guide``."""
    root: str = request.scope.get("root_path", "")
    path: str = request.scope["path"]
    route = path[len(root) :] if path.startswith(root) else path
    return "../" * (route.count("/") - 1) or "./"


def href(up: str, *parts: str) -> str:
    """The address, from a page ``up`` from the root, of the page at ``parts`` (each one
    percent-encoded, the whole HTML-escaped)."""
    return escape(up + "/".join(quote(part, safe="") for part in parts))


def text(value: object) -> str:
    """Any text for a page: control characters shown, then HTML-escaped."""
    return escape(terminal_safe(str(value)))


def agent_rows(drawn: Timeline) -> list[list[str]]:
    """Every invocation of the run ``drawn`` as the cells under :data:`HEADS` (the report's),
    newest last; one still at work shows as running."""
    return [list(bar_cells(bar)) for bar in drawn.bars]


def tail(events: list[PipelineEvent], last: int = 300) -> list[tuple[int, PipelineEvent]]:
    """The last ``last`` events, each with its number in the log (from 1)."""
    start = max(len(events) - last, 0)
    return list(enumerate(events[start:], start + 1))


def pictures(drawn: Timeline, events: Sequence[PipelineEvent]) -> str:
    """The run drawn: its agents (every invocation), its timeline (the report's: agents at
    work, gates, screens), what it cost by role and iteration, and its path through its
    graph (``div#pictures``, which a live page fetches again as the run goes on); ``drawn``
    is the timeline of ``events``."""
    agents = table_html(HEADS, rows_html(agent_rows(drawn)), " id='agents'")
    spend = table_html(SPEND_HEADS, rows_html(spend_rows(drawn)), " class='spend'")
    return (
        f"<div id='pictures'><h2>Agents</h2>{agents}"
        f"<h2>Timeline</h2>{timeline_html(drawn, gate_runs(events), screen_runs(events))}"
        f"<h2>Cost</h2>{spend}"
        f"<h2>Graph</h2><div class='graph-box'>{run_svg(events)}</div></div>"
    )


def cancel_form(access: Access, up: str, ticket: str, label: str = "Cancel") -> str:
    """A form that cancels queue ticket ``ticket`` (``ralph cancel``), on a page ``up`` from
    the root."""
    token = f"<input type='hidden' name='csrf' value='{escape(access.form_token)}'>"
    return (
        f"<form method='post' action='{href(up, 'tickets', ticket, 'cancel')}'>{token}"
        f"<button>{text(label)}</button></form>"
    )


def steering(access: Access, up: str, run_id: RunId, state: PipelineState) -> str:
    """The forms (on a page ``up`` from the root): fork (any run, from any step); and while
    the run goes on, guide, interrupt and, while it waits on a question, answer."""
    token = f"<input type='hidden' name='csrf' value='{escape(access.form_token)}'>"

    def action(what: str) -> str:
        return href(up, "runs", run_id, what)

    fork = (
        f"<h2>Fork</h2><form method='post' action='{action('fork')}'>{token}"
        "After <input name='at' id='fork-at' type='number' min='1' required> facts, with a "
        "new prompt (optional): <input name='prompt' size='40'>, agent (optional): "
        "<input name='agent' size='12'>, model (optional): <input name='model' size='16'> "
        "<button>Fork</button> "
        "(a new run in a git worktree of its own; the slider sets the point)</form>"
    )
    interrupted = state.phase.value == "interrupted"
    if is_terminal(state) and state.termination is not None and not interrupted:
        return "<p>The run has ended: nothing to steer.</p>" + fork
    hats = "".join(
        f"<option value='{escape(hat)}'>{text(hat)}</option>" for hat in guidable_hats(state)
    )
    forms = (
        f"<h2>Guide</h2><form method='post' action='{action('guide')}'>{token}"
        "<textarea name='text' required maxlength='4000'></textarea><br>"
        f"<select name='hat'><option value=''>the next working prompt</option>{hats}</select> "
        "<button>Guide the next prompt</button></form>"
    )
    if not interrupted:
        forms += (
            f"<form method='post' action='{action('interrupt')}'>{token}"
            "<button>Interrupt the run</button> (it saves a checkpoint; ralph resume goes on)"
            "</form>"
        )
    question = state.ledger.pending_question
    if question is not None and question.asked:
        forms += (
            f"<h2>Question</h2><p>{text(question.question)}</p>"
            f"<form method='post' action='{action('respond')}'>{token}"
            f"<input type='hidden' name='question' value='{escape(question.question_id)}'>"
            "<textarea name='text' required></textarea><br><button>Answer</button></form>"
        )
    return forms + fork


def page(
    up: str,
    title: str,
    body: str,
    status: int = 200,
    data: dict[str, str] | None = None,
) -> HTMLResponse:
    """A whole page, ``up`` from the root (:func:`up_of`): ``title`` (text) and ``body``
    (HTML already escaped)."""
    attributes = "".join(f" data-{k}='{escape(v)}'" for k, v in (data or {}).items())
    page = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{text(title)}</title><style>{_STYLE}</style>"
        f"<script src='{href(up, 'app.js')}' defer></script></head>"
        f"<body{attributes}><h1>{text(title)}</h1>{body}</body></html>\n"
    )
    return HTMLResponse(page, status, headers=HEADERS)
