"""``ralph serve``: the runs of an event store in a browser (I/O: reads the store, serves HTTP).

Pages are built on the server from the same views the terminal uses (``state_rows``, the
report); every text an agent wrote is escaped, and the page's script (served from ``/app.js``,
no inline script: the Content-Security-Policy allows none) writes only with ``textContent``.
A run page follows its run live (server-sent events), scrubs through its history (the state
folded at any point of the log, and what changed since the point before), and guides it or
answers its question through forms that carry the page's token (see ``_serve_guard``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any, Final

import orjson
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from pipeline.cli._render import describe_event, state_rows
from pipeline.cli._report import html_report
from pipeline.cli._safe import terminal_safe
from pipeline.cli._serve_guard import TOKEN_COOKIE, Access
from pipeline.engine import AnswerError, GuidanceError, guidable_hats, guide, load_state, respond
from pipeline.events import PipelineEvent, RunId
from pipeline.handlers.store import NamedStore, StoreError, UnknownRunError, open_store_at
from pipeline.serialization import CONVERTER
from pipeline.state import PipelineState, is_terminal
from pipeline.views import state_changes, states_at, timeline, topic_log

__all__ = ["make_app"]

POLL_S: Final = 0.3
"""How often a live page's stream looks for new facts."""

_SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
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
"""


def make_app(location: str, workspace: Path, access: Access) -> Starlette:
    """The web app over the store at ``location`` (``workspace``: the root ``ralph guide``
    and ``ralph respond`` would use), served to whom ``access`` lets in."""

    def opened() -> NamedStore:
        return open_store_at(location, must_exist=True, read_only=True)

    async def runs_page(request: Request) -> Response:
        with opened() as store:
            rows = []
            for summary in store.runs():
                state, _ = load_state(store, summary.run_id)
                rows.append((summary.run_id, state, summary.events, summary.started_at))
            label = store.label
        body = "".join(
            f'<tr><td><a href="/runs/{escape(run_id)}">{_text(run_id)}</a></td>'
            f"<td>{_text(_phase(state))}</td><td>{events}</td>"
            f"<td>{_text(_cost(state))}</td><td>{_text(started)}</td></tr>"
            for run_id, state, events, started in rows
        )
        table = (
            "<table><thead><tr><th>run</th><th>phase</th><th>events</th><th>cost</th>"
            f"<th>started</th></tr></thead><tbody>{body}</tbody></table>"
        )
        return _page(f"Runs in {label}", table if rows else "<p>No runs yet.</p>")

    async def run_page(request: Request) -> Response:
        run_id = RunId(request.path_params["run_id"])
        with opened() as store:
            events = list(store.read(run_id))
        if not events:
            return _page("No such run", f"<p>No run {_text(run_id)} here.</p>", 404)
        state = states_at(events, (len(events),))[0]
        said = request.query_params.get("said", "")
        notice = f'<p class="notice">{_text(said)}</p>' if said else ""
        facts = "".join(f"<li value={n}>{_text(describe_event(e))}</li>" for n, e in _tail(events))
        topics = "".join(
            f"<tr><td>{_text(t.topic)}</td><td>{_text(t.hat or '')}</td>"
            f"<td>{_text(t.payload)}</td></tr>"
            for t in topic_log(events)
        )
        body = (
            f"{notice}<p><a href='/'>All runs</a> · "
            f"<a href='/runs/{escape(run_id)}/report'>Report</a></p>"
            f"<h2>State</h2><p>After <output id='at-label'>{len(events)}</output> of "
            f"<span id='total'>{len(events)}</span> facts</p>"
            f"<input id='at' type='range' min='0' max='{len(events)}' value='{len(events)}'>"
            f"<table id='state'><tbody>{_rows(state_rows(state))}</tbody></table>"
            "<h3>Changed by the last step</h3><table id='changes'><tbody></tbody></table>"
            f"{_steering(access, run_id, state)}"
            f"<h2>Facts</h2><ol class='facts' id='facts'>{facts}</ol>"
            "<h2>Topics</h2><table><thead><tr><th>topic</th><th>hat</th><th>payload</th></tr>"
            f"</thead><tbody>{topics}</tbody></table>"
        )
        data = {"run": run_id, "events": str(len(events))}
        return _page(f"Run {run_id}", body, data=data)

    async def report_page(request: Request) -> Response:
        run_id = RunId(request.path_params["run_id"])
        with opened() as store:
            events = list(store.read(run_id))
        if not events:
            return _page("No such run", f"<p>No run {_text(run_id)} here.</p>", 404)
        return HTMLResponse(html_report(timeline(events), f"Run {run_id}"), headers=_HEADERS)

    async def state_at(request: Request) -> Response:
        run_id = RunId(request.path_params["run_id"])
        try:
            point = int(request.query_params.get("n", "-1"))
        except ValueError:
            return JSONResponse({"error": "n must be a number"}, 400, headers=_HEADERS)
        with opened() as store:
            events = list(store.read(run_id))
        if not events or not 0 <= point <= len(events):
            why = f"run {run_id} has {len(events)} facts; n is from 0 to that"
            return JSONResponse({"error": why}, 400, headers=_HEADERS)
        before, after = states_at(events, (max(point - 1, 0), point))
        changes = [
            [change.path, _json_text(change.before), _json_text(change.after)]
            for change in state_changes(before, after)
        ]
        document = {"n": point, "rows": state_rows(after), "changes": changes}
        return JSONResponse(document, headers=_HEADERS)

    async def stream(request: Request) -> Response:
        run_id = RunId(request.path_params["run_id"])
        try:
            after = int(request.query_params.get("after", "0"))
        except ValueError:
            after = 0
        return EventSourceResponse(_facts(opened, run_id, after, request.is_disconnected))

    async def guide_form(request: Request) -> Response:
        return await _changing(request, access, _guided(workspace, location))

    async def respond_form(request: Request) -> Response:
        return await _changing(request, access, _answered(workspace, location))

    async def script(_request: Request) -> Response:
        text = resources.files("pipeline.cli").joinpath("serve_app.js").read_text()
        return Response(text, media_type="text/javascript", headers=_HEADERS)

    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        refused = access.refusal(request)
        if refused is not None:
            return Response(refused[1], refused[0], media_type="text/plain", headers=_HEADERS)
        try:
            response = await call_next(request)
        except StoreError as error:
            return Response(str(error), 503, media_type="text/plain", headers=_HEADERS)
        if access.remote and request.query_params.get("token"):
            response.set_cookie(TOKEN_COOKIE, access.secret, httponly=True, samesite="strict")
        return response

    return Starlette(
        routes=[
            Route("/", runs_page),
            Route("/app.js", script),
            Route("/runs/{run_id}", run_page),
            Route("/runs/{run_id}/report", report_page),
            Route("/runs/{run_id}/at", state_at),
            Route("/runs/{run_id}/stream", stream),
            Route("/runs/{run_id}/guide", guide_form, methods=["POST"]),
            Route("/runs/{run_id}/respond", respond_form, methods=["POST"]),
        ],
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
    )


_HEADERS: Final = dict(_SECURITY_HEADERS)


def _text(value: object) -> str:
    """Any text for a page: control characters shown, then HTML-escaped."""
    return escape(terminal_safe(str(value)))


def _json_text(value: Any) -> str:
    data = CONVERTER.unstructure(value)
    return data if isinstance(data, str) else orjson.dumps(data, default=str).decode()


def _phase(state: PipelineState) -> str:
    return state.termination.value if state.termination else state.phase.value


def _cost(state: PipelineState) -> str:
    rows = dict(state_rows(state))
    return rows.get("cost", "-")


def _rows(rows: list[tuple[str, str]]) -> str:
    return "".join(
        f"<tr><th>{_text(what)}</th><td>{_text(value)}</td></tr>" for what, value in rows
    )


def _tail(events: list[PipelineEvent], last: int = 300) -> list[tuple[int, PipelineEvent]]:
    start = max(len(events) - last, 0)
    return list(enumerate(events[start:], start + 1))


def _steering(access: Access, run_id: RunId, state: PipelineState) -> str:
    """The guide form and, while the run waits on a question, the answer form."""
    if is_terminal(state) and state.termination is not None and state.phase.value != "interrupted":
        return "<p>The run has ended: nothing to steer.</p>"
    token = f"<input type='hidden' name='csrf' value='{escape(access.secret)}'>"
    hats = "".join(
        f"<option value='{escape(hat)}'>{_text(hat)}</option>" for hat in guidable_hats(state)
    )
    forms = (
        f"<h2>Guide</h2><form method='post' action='/runs/{escape(run_id)}/guide'>{token}"
        "<textarea name='text' required maxlength='4000'></textarea><br>"
        f"<select name='hat'><option value=''>every hat</option>{hats}</select> "
        "<button>Guide the next prompt</button></form>"
    )
    question = state.ledger.pending_question
    if question is not None and question.asked:
        forms += (
            f"<h2>Question</h2><p>{_text(question.question)}</p>"
            f"<form method='post' action='/runs/{escape(run_id)}/respond'>{token}"
            f"<input type='hidden' name='question' value='{escape(question.question_id)}'>"
            "<textarea name='text' required></textarea><br><button>Answer</button></form>"
        )
    return forms


Change = Callable[[str, dict[str, str]], str]
"""What a form does with its fields for a run; returns what to tell the person."""


def _guided(workspace: Path, location: str) -> Change:
    def act(run_id: str, fields: dict[str, str]) -> str:
        hat = fields.get("hat") or None
        _run, number = guide(workspace, fields.get("text", ""), hat, run_id, location)
        who = f"the {hat}" if hat else "every hat"
        return f"Guidance {number} kept: {who}'s next prompt carries it."

    return act


def _answered(workspace: Path, location: str) -> Change:
    def act(run_id: str, fields: dict[str, str]) -> str:
        respond(workspace, fields.get("text", ""), fields.get("question", ""), run_id, location)
        return "Answered: the run goes on."

    return act


async def _changing(request: Request, access: Access, act: Change) -> Response:
    """A form's POST: refused unless it is the page's own; then ``act``, and back to the run."""
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    forged = access.forged(request, fields.get("csrf"))
    if forged is not None:
        return Response(forged, 403, media_type="text/plain", headers=_HEADERS)
    run_id = request.path_params["run_id"]
    try:
        said = await asyncio.to_thread(act, run_id, fields)
    except (GuidanceError, AnswerError, UnknownRunError) as error:
        return _page("Refused", f"<p class='notice error'>{_text(error)}</p>", 400)
    target = request.url_for("run_page", run_id=run_id).include_query_params(said=said)
    return RedirectResponse(str(target), 303, headers=_HEADERS)


async def _facts(
    opened: Callable[[], NamedStore],
    run_id: RunId,
    after: int,
    disconnected: Callable[[], Awaitable[bool]],
) -> AsyncIterator[dict[str, str]]:
    """The run's facts after the first ``after``, as they are appended, until it stops."""
    seen = after
    while not await disconnected():
        with opened() as store:
            new = list(store.read(run_id, seen))
            ended = is_terminal(load_state(store, run_id)[0]) if new or seen else False
        for event in new:
            seen += 1
            line = {"n": seen, "text": terminal_safe(describe_event(event))}
            yield {"event": "fact", "data": orjson.dumps(line).decode()}
        if ended and not new:
            yield {"event": "end", "data": str(seen)}
            return
        await asyncio.sleep(POLL_S)


def _page(
    title: str,
    body: str,
    status: int = 200,
    data: dict[str, str] | None = None,
) -> HTMLResponse:
    """A whole page: ``title`` (text) and ``body`` (HTML already escaped)."""
    attributes = "".join(f" data-{k}='{escape(v)}'" for k, v in (data or {}).items())
    page = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_text(title)}</title><style>{_STYLE}</style>"
        "<script src='/app.js' defer></script></head>"
        f"<body{attributes}><h1>{_text(title)}</h1>{body}</body></html>\n"
    )
    return HTMLResponse(page, status, headers=_HEADERS)
