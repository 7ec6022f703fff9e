"""``ralph serve``: the runs of an event store in a browser (I/O: reads the store, serves HTTP).

Pages are built on the server from the same views the terminal uses (``state_rows``, the
report); every text an agent wrote is escaped, and the page's script (served from ``/app.js``,
no inline script: the Content-Security-Policy allows none) writes only with ``textContent``.
A run page follows its run live (server-sent events), scrubs through its history (the state
folded at any point of the log, and what changed since the point before), and guides it or
answers its question through forms that carry the page's token. Every request names the
access token in its path (``/t/<token>/``), which :class:`_Guard` checks and moves into the
root path, so the routes below know nothing of it (see ``_serve_guard``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Final, final

import orjson
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from pipeline.app.cli._queue import queue_tickets, runs_rows, ticket_text
from pipeline.app.cli._render import describe_event, state_rows, value_text
from pipeline.app.cli._report import html_report, phase_of
from pipeline.app.cli._report_layout import pairs_html, rows_html, table_html
from pipeline.app.cli._safe import terminal_safe
from pipeline.app.cli._serve_forms import (
    Change,
    answered,
    cancelling,
    changing,
    forked,
    guided,
    interrupted,
    ticket_of,
)
from pipeline.app.cli._serve_guard import Access
from pipeline.app.cli._serve_html import (
    HEADERS,
    agent_rows,
    cancel_form,
    href,
    page,
    pictures,
    said_text,
    steering,
    tail,
    text,
    up_of,
)
from pipeline.core.state import PipelineState, is_terminal
from pipeline.engine import load_state
from pipeline.events import PipelineEvent, RunId
from pipeline.handlers.store import (
    NamedStore,
    StoreError,
    open_store_at,
)
from pipeline.reducers import reduce
from pipeline.reducers.views import (
    gate_runs,
    sandbox_view,
    screen_runs,
    spent,
    state_changes,
    states_at,
    timeline,
    topic_log,
)

__all__ = ["make_app"]

POLL_S: Final = 0.3
"""How often a live page's stream looks for new facts."""


def make_app(location: str, workspace: Path, access: Access) -> Starlette:
    """The web app over the store at ``location`` (``workspace``: the root ``ralph guide``
    and ``ralph respond`` would use), served to whom ``access`` lets in."""

    def opened() -> NamedStore:
        return open_store_at(location, must_exist=True, read_only=True)

    def logged(request: Request) -> tuple[RunId, list[PipelineEvent]]:
        """The run the request names, and its log (empty for a run the store lacks)."""
        run_id = RunId(request.path_params["run_id"])
        with opened() as store:
            return run_id, list(store.read(run_id))

    def runs_page(request: Request) -> Response:
        with opened() as store:
            summaries = store.runs()
            states: dict[str, PipelineState] = {
                r.run_id: load_state(store, r.run_id)[0] for r in summaries
            }
            queued = queue_tickets(store)
            label = store.label
        up = up_of(request)
        said = said_text(request.query_params.get("said", ""), workspace, location)
        notice = f'<p class="notice">{text(said)}</p>' if said else ""
        if not summaries and not queued:
            return page(up, f"Runs in {label}", f"{notice}<p>No runs yet.</p>")
        # Each run's known cost so far, as ``ralph status`` shows it.
        costs = {run_id: spent(state.ledger.spend.total) for run_id, state in states.items()}
        heads, listed = runs_rows(queued, summaries, costs)
        linked = heads.index("run")  # and the phase beside it
        heads = (*heads[: linked + 1], "phase", *heads[linked + 1 :])
        phases = {run_id: phase_of(state) for run_id, state in states.items()}
        rows = [
            [*row[: linked + 1], phases.get(row[linked], "-"), *row[linked + 1 :]] for row in listed
        ]
        actions = [""] * len(rows)
        if queued is not None:
            heads = (*heads, "")
            # A ticket that is queued or running can be cancelled (ralph cancel).
            cancellable = {t.ticket for t in queued if t.cancellable}
            actions = [
                cancel_form(access, up, row[0]) if row[0] in cancellable else "" for row in rows
            ]
        body = "".join(
            "<tr>"
            + "".join(
                f'<td><a href="{href(up, "runs", cell)}">{text(cell)}</a></td>'
                if i == linked and cell in states
                else f"<td>{text(cell)}</td>"
                for i, cell in enumerate(row)
            )
            + (f"<td>{action}</td>" if queued is not None else "")
            + "</tr>"
            for row, action in zip(rows, actions, strict=True)
        )
        return page(up, f"Runs in {label}", notice + table_html(heads, body))

    def run_page(request: Request) -> Response:
        run_id = RunId(request.path_params["run_id"])
        up = up_of(request)
        with opened() as store:  # the log and its queue ticket, in one opening
            events = list(store.read(run_id))
            ticket = ticket_of(store, run_id) if events else None
        if not events:
            return page(up, "No such run", f"<p>No run {text(run_id)} here.</p>", 404)
        drawn = timeline(events)  # one fold: the state and the agents
        state = drawn.final
        queued = ""
        if ticket is not None:
            queued = f"<h2>Ticket</h2><p>Run by {text(ticket_text(ticket))}.</p>"
            if ticket.cancellable:
                stop = "Cancel the ticket (its worker stops the run)"
                queued += cancel_form(access, up, ticket.ticket, stop)
        said = said_text(request.query_params.get("said", ""), workspace, location)
        notice = f'<p class="notice">{text(said)}</p>' if said else ""
        facts = "".join(f"<li value={n}>{text(describe_event(e))}</li>" for n, e in tail(events))
        topics = rows_html((t.topic, t.hat or "", t.payload) for t in topic_log(events))
        body = (
            f"{notice}<p><a href='{href(up)}'>All runs</a> · "
            f"<a href='{href(up, 'runs', run_id, 'report')}'>Report</a></p>"
            f"<h2>State</h2><p>After <output id='at-label'>{len(events)}</output> of "
            f"<span id='total'>{len(events)}</span> facts</p>"
            f"<input id='at' type='range' min='0' max='{len(events)}' value='{len(events)}'>"
            f"<table id='state'><tbody>{pairs_html(state_rows(state))}</tbody></table>"
            "<h3>Changed by the last step</h3><table id='changes'><tbody></tbody></table>"
            f"{pictures(drawn, events)}"
            f"{steering(access, up, run_id, state)}{queued}"
            f"<h2>Facts</h2><ol class='facts' id='facts'>{facts}</ol>"
            f"<h2>Topics</h2>{table_html(('topic', 'hat', 'payload'), topics)}"
        )
        data = {"run": run_id, "events": str(len(events))}
        return page(up, f"Run {run_id}", body, data=data)

    def report_page(request: Request) -> Response:
        run_id, events = logged(request)
        if not events:
            return page(up_of(request), "No such run", f"<p>No run {text(run_id)} here.</p>", 404)
        report = html_report(
            timeline(events),
            f"Run {run_id}",
            gate_runs(events),
            screen_runs(events),
            sandbox_view(events),
        )
        return HTMLResponse(report, headers=HEADERS)

    def state_at(request: Request) -> Response:
        try:
            point = int(request.query_params.get("n", "-1"))
        except ValueError:
            return JSONResponse({"error": "n must be a number"}, 400, headers=HEADERS)
        run_id, events = logged(request)
        if not events or not 0 <= point <= len(events):
            why = f"run {run_id} has {len(events)} facts; n is from 0 to that"
            return JSONResponse({"error": why}, 400, headers=HEADERS)
        before, after = states_at(events, (max(point - 1, 0), point))
        changes = [
            [change.path, value_text(change.before), value_text(change.after)]
            for change in state_changes(before, after)
        ]
        document = {"n": point, "rows": state_rows(after), "changes": changes}
        return JSONResponse(document, headers=HEADERS)

    def agents(request: Request) -> Response:
        _run_id, events = logged(request)
        return JSONResponse({"rows": agent_rows(timeline(events))}, headers=HEADERS)

    def pictures_fragment(request: Request) -> Response:
        _run_id, events = logged(request)
        if not events:
            return Response("no such run", 404, media_type="text/plain", headers=HEADERS)
        fragment = pictures(timeline(events), events)
        return HTMLResponse(fragment, headers=HEADERS)

    async def stream(request: Request) -> Response:
        run_id = RunId(request.path_params["run_id"])
        try:
            after = int(request.query_params.get("after", "0"))
        except ValueError:
            after = 0
        return EventSourceResponse(_facts(opened, run_id, after, request.is_disconnected))

    def form(act: Callable[..., str], *given: object) -> Callable[[Request], Awaitable[Response]]:
        """The POST of a form that does ``act`` (given the workspace, and the store)."""
        change: Change = partial(act, *given)

        async def post(request: Request) -> Response:
            return await changing(request, access, change)

        return post

    async def cancel_ticket(request: Request) -> Response:
        return await cancelling(request, access, location)

    async def script(_request: Request) -> Response:
        text = resources.files("pipeline.app.cli").joinpath("serve_app.js").read_text()
        return Response(text, media_type="text/javascript", headers=HEADERS)

    def unavailable(_request: Request, error: Exception) -> Response:
        return Response(str(error), 503, media_type="text/plain", headers=HEADERS)

    return Starlette(
        routes=[
            Route("/", runs_page),
            Route("/app.js", script),
            Route("/runs/{run_id}", run_page),
            Route("/runs/{run_id}/report", report_page),
            Route("/runs/{run_id}/at", state_at),
            Route("/runs/{run_id}/agents", agents),
            Route("/runs/{run_id}/pictures", pictures_fragment),
            Route("/runs/{run_id}/stream", stream),
            Route("/runs/{run_id}/guide", form(guided, workspace, location), methods=["POST"]),
            Route("/runs/{run_id}/respond", form(answered, workspace, location), methods=["POST"]),
            Route("/runs/{run_id}/interrupt", form(interrupted, workspace), methods=["POST"]),
            Route("/runs/{run_id}/fork", form(forked, workspace, location), methods=["POST"]),
            Route("/tickets/{ticket}/cancel", cancel_ticket, methods=["POST"]),
        ],
        middleware=[Middleware(_Guard, access=access)],
        exception_handlers={StoreError: unavailable},
    )


@final
class _Guard:
    """Serves only the requests ``access`` lets in (``_serve_guard``), each with the token's
    part of its path (``/t/<token>``) moved into its root path: the routes see ``/runs/R``,
    and every address the app makes (a redirect's) keeps the token."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        admitted = self.access.admitted(Request(scope))
        if isinstance(admitted, tuple):
            status, why = admitted
            answer = Response(why, status, media_type="text/plain", headers=HEADERS)
            await answer(scope, receive, send)
            return
        await self.app({**scope, "root_path": admitted}, receive, send)


async def _facts(
    opened: Callable[[], NamedStore],
    run_id: RunId,
    after: int,
    disconnected: Callable[[], Awaitable[bool]],
) -> AsyncIterator[dict[str, str]]:
    """The run's facts after the first ``after``, as they are appended, until it stops."""
    seen = after
    with opened() as store:
        # Folded once; each new fact is folded into it as it is sent.
        state, _ = load_state(store, run_id)
    if state.sequence == 0:
        yield {"event": "end", "data": "no such run"}
        return
    while not await disconnected():
        with opened() as store:
            new = list(store.read(run_id, seen))
        for event in new:
            seen += 1
            if seen > state.sequence:
                state = reduce(state, event)
            line = {"n": seen, "text": terminal_safe(describe_event(event))}
            yield {"event": "fact", "data": orjson.dumps(line).decode()}
        if is_terminal(state) and not new:
            yield {"event": "end", "data": str(seen)}
            return
        await asyncio.sleep(POLL_S)
