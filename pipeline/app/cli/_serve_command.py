"""``ralph serve``: the runs of an event store, live, in a browser (the ``serve`` extra)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated

import typer

from pipeline.app.cli._app import StoreArgument, WorkspaceOption, _fail, _print, app
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import store_path

__all__ = ["serve"]


@app.command()
def serve(
    store: StoreArgument = None,
    workspace: WorkspaceOption = Path(),
    host: Annotated[
        str, typer.Option(help="The address to listen on (any but loopback needs --token).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port to listen on.", min=1, max=65535)] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="RALPH_SERVE_TOKEN",
            help="The secret a browser must bring, in the address printed (at least 16 "
            "letters, digits or -._~; default: one drawn at start). Required to listen beyond "
            "this machine.",
        ),
    ] = None,
) -> None:
    """Watch, scrub through, guide and answer the runs of an event store from a browser:
    every run with its phase and cost, a run page that follows the run live, a slider over its
    log showing the state at any point and what changed, and forms to guide its next prompt or
    answer its question. Listens on 127.0.0.1 unless told otherwise; the address it prints
    holds the token (no cookie does: every port of this machine would receive it)."""
    try:
        # The serve extra's modules, before any of ralph's serve modules (which import them).
        import uvicorn

        from pipeline.app.cli._serve_app import make_app
        from pipeline.app.cli._serve_guard import Access, is_loopback, usable_token
    except ImportError as error:
        raise _fail(
            f"ralph serve needs the serve extra ({error.name} is missing): "
            "pip install 'ralph-pipeline[serve]'"
        ) from error
    location = store if store is not None else str(WorkspaceLayout(root=workspace).store)
    path = store_path(location)
    if path is not None and not path.is_file():
        raise _fail(f"no event store at {path}: run a pipeline first, or name a store")
    if path is None:
        try:
            # Pages open the store as they are asked for: say it now, not on every page.
            import pipeline.handlers.store.postgres  # noqa: F401
        except ImportError as error:
            raise _fail(
                f"a PostgreSQL store needs the postgres extra ({error.name} is missing): "
                "pip install 'ralph-pipeline[postgres]'"
            ) from error
    remote = not is_loopback(host)
    if remote and token is None:
        raise _fail(
            f"--host {host} lets other machines in: give a --token (or RALPH_SERVE_TOKEN) "
            "that their browsers must bring"
        )
    if token is not None and not usable_token(token):
        raise _fail(
            "--token: at least 16 characters (or anyone could guess it), each a letter, "
            "a digit or one of -._~ (it is part of the address)"
        )
    secret = token if token is not None else secrets.token_urlsafe(24)
    access = Access(secret=secret, remote=remote)
    web = make_app(location, workspace, access)
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{port}{access.root}/"
    _print(f"Serving {location} at {address} (Ctrl-C stops)")
    uvicorn.run(web, host=host, port=port, log_level="warning", access_log=False)
