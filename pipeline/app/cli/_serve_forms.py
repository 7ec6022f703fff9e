"""What ``ralph serve``'s forms do (I/O: the store, the workspace, the queue): guide, answer,
interrupt and fork a run, and cancel a queue ticket, each as its command does, once the
request proved it is a page's own (``_serve_guard``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pipeline.app.cli._queue import queue_tickets
from pipeline.app.cli._serve_guard import Access
from pipeline.app.cli._serve_html import HEADERS, page, text, up_of
from pipeline.app.workspace import ForkError, NotInterruptedError, fork_run, interrupt_run
from pipeline.engine import AnswerError, GuidanceError, guide, respond
from pipeline.handlers.store import NamedStore, StoreError, UnknownRunError

if TYPE_CHECKING:  # psycopg comes with the optional extra; serve must load without it
    from pipeline.handlers.store.queue import Ticket

__all__ = [
    "Change",
    "answered",
    "cancelling",
    "changing",
    "forked",
    "guided",
    "interrupted",
    "ticket_of",
]


Change = Callable[[str, dict[str, str]], str]
"""What a form does with its fields for a run (one of the functions below, given the
workspace and the store); returns the key of what to tell the person (:data:`SAID`)."""


def guided(workspace: Path, location: str, run_id: str, fields: dict[str, str]) -> str:
    """Guide the run (``ralph guide``)."""
    guide(workspace, fields.get("text", ""), fields.get("hat") or None, run_id, location)
    return "guided"


def answered(workspace: Path, location: str, run_id: str, fields: dict[str, str]) -> str:
    """Answer the run's question (``ralph respond``)."""
    respond(workspace, fields.get("text", ""), fields.get("question", ""), run_id, location)
    return "answered"


def interrupted(workspace: Path, run_id: str, _fields: dict[str, str]) -> str:
    """Ask the run to stop (``ralph interrupt``)."""
    interrupt_run(workspace, run_id)
    return "interrupted"


def forked(workspace: Path, location: str, run_id: str, fields: dict[str, str]) -> str:
    """Fork the run after the facts the form names (``ralph fork``)."""
    try:
        at = int(fields.get("at", ""))
    except ValueError:
        raise ForkError("the point to fork at must be a number of facts") from None
    fork, _target, _point = fork_run(
        workspace,
        run_id,
        at,
        prompt=fields.get("prompt") or None,
        store=location,
        agent=fields.get("agent") or None,
        model=fields.get("model") or None,
    )
    return f"forked:{fork}"


async def changing(request: Request, access: Access, act: Change) -> Response:
    """A form's POST: refused unless it is the page's own; then ``act``, and back to the run."""
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    forged = access.forged(request, fields.get("csrf"))
    if forged is not None:
        return Response(forged, 403, media_type="text/plain", headers=HEADERS)
    run_id = request.path_params["run_id"]
    try:
        said = await asyncio.to_thread(act, run_id, fields)
    except (GuidanceError, AnswerError, UnknownRunError, NotInterruptedError, ForkError) as error:
        return page(up_of(request), "Refused", f"<p class='notice error'>{text(error)}</p>", 400)
    target = request.url_for("run_page", run_id=run_id).include_query_params(said=said)
    return RedirectResponse(str(target), 303, headers=HEADERS)


def ticket_of(store: NamedStore, run_id: str) -> Ticket | None:
    """The queue ticket that started ``run_id`` (None: none, or a SQLite store, which has no
    queue)."""
    return next((t for t in queue_tickets(store) or [] if t.run_id == run_id), None)


async def cancelling(request: Request, access: Access, location: str) -> Response:
    """A cancel form's POST: refused unless it is a page's own; then the ticket is cancelled
    as ``ralph cancel`` does, and back to the runs."""
    form = await request.form()
    token = form.get("csrf")
    forged = access.forged(request, token if isinstance(token, str) else None)
    if forged is not None:
        return Response(forged, 403, media_type="text/plain", headers=HEADERS)
    from pipeline.app.workers import CancelError, cancel

    try:
        await asyncio.to_thread(cancel, location, request.path_params["ticket"], why="cancelled")
    except (CancelError, StoreError) as error:
        return page(up_of(request), "Refused", f"<p class='notice error'>{text(error)}</p>", 400)
    target = request.url_for("runs_page").include_query_params(said="cancelled")
    return RedirectResponse(str(target), 303, headers=HEADERS)
