"""``ralph emit``, ``ralph mcp``, ``ralph respond``, ``ralph guide`` and ``ralph interrupt``:
what agents and people call while a run is under way."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.app.cli._app import (
    StoreOption,
    WorkspaceOption,
    _configured_store,
    _print,
    _said_failures,
    app,
    out,
)
from pipeline.app.cli._emit import HELP as EMIT_HELP
from pipeline.app.cli._emit import main as emit_main
from pipeline.app.cli._safe import terminal_safe
from pipeline.engine import (
    guide,
    respond,
)


@app.command(
    help=EMIT_HELP,
    add_help_option=False,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def emit(ctx: typer.Context) -> None:
    """Forwarded to the lean ``ralph emit`` (``pipeline.app.cli._emit``), its one parser."""
    raise typer.Exit(emit_main(ctx.args))


@app.command(
    help="Serve ralph's tools over MCP on stdio: an agent's (--card PATH, started by its CLI) "
    "or, with --control -C DIR [--store URL], a person's (list, read, start, submit, guide, "
    "answer, interrupt and fork the workspace's runs).",
    add_help_option=False,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def mcp(ctx: typer.Context) -> None:
    """Forwarded to ``ralph mcp``'s own parsers, which ``ralph`` reaches before typer: this
    command only names it in the help."""
    from pipeline.app.cli._mcp_agent import main as mcp_main

    raise typer.Exit(mcp_main(ctx.args))


@app.command(name="respond")
def respond_command(
    text: Annotated[str, typer.Argument(help="The answer to the agent's question.")],
    question_id: Annotated[
        str | None,
        typer.Option(
            "--question",
            help="The id of the question answered, as the run shows it (ralph status); "
            "without it, ralph says which question the run waits on.",
        ),
    ] = None,
    run: Annotated[str | None, typer.Option("--run", help="The run (default: the latest).")] = None,
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
) -> None:
    """Answer the question a run is waiting on (an agent's human.interact)."""
    location = _configured_store(workspace, store)
    with _said_failures():
        run_id, question = respond(workspace, text, question_id, run, location)
    asked = terminal_safe(question.question)  # an agent's words
    out.print(f"Answered {question.question_id} of run {run_id}: {asked}", markup=False)


@app.command(name="guide")
def guide_command(
    text: Annotated[str, typer.Argument(help="What to tell the agents, in a sentence or two.")],
    hat: Annotated[
        str | None,
        typer.Option(
            "--hat",
            help="The hat whose next prompt carries it: a role (developer, reviewer, ...) or a "
            "hat of the run's topology (default: the next working prompt, whichever hat's).",
        ),
    ] = None,
    run: Annotated[str | None, typer.Option("--run", help="The run (default: the latest).")] = None,
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
) -> None:
    """Guide a run while it goes on: the chosen hat's next prompt carries TEXT, as a person's
    guidance. A stopped run takes it in when it is resumed."""
    location = _configured_store(workspace, store)
    with _said_failures():
        run_id, number = guide(workspace, text, hat, run, location)
    where = f"the {hat}'s next prompt" if hat is not None else "the next working prompt"
    out.print(f"Guidance {number} for run {run_id}: {where} will carry it.", markup=False)


@app.command(name="interrupt")
def interrupt_command(
    run: Annotated[
        str | None, typer.Argument(help="The run to stop (default: the one in progress).")
    ] = None,
    workspace: WorkspaceOption = Path(),
) -> None:
    """Stop the run in progress in a workspace from another terminal, as Ctrl-C in its own
    would: its agent is stopped, a checkpoint saved, and ralph resume goes on."""
    from pipeline.app.workspace import interrupt_run

    with _said_failures():
        stopped, pid = interrupt_run(workspace, run)
    name = f"run {stopped}" if stopped else "the run (its id not yet known)"
    out.print(
        f"Asked {name} (pid {pid}) to stop; it saves a checkpoint and ralph resume goes on.",
        markup=False,
    )


@app.command(name="fork")
def fork_command(
    at: Annotated[int, typer.Option("--at", help="Fork after its first AT facts.", min=1)],
    run: Annotated[
        str | None, typer.Argument(help="The run to fork (default: the latest).")
    ] = None,
    to: Annotated[
        Path | None,
        typer.Option(
            "--to", help="The new worktree (default: beside this one, named by the fork)."
        ),
    ] = None,
    prompt: Annotated[
        str | None, typer.Option("--prompt", "-p", help="A new prompt for the fork.")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="An agent of ralph.toml's [agents] that goes first in every chain of the "
            "fork (the chains' own agents stay its fallbacks).",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The model every invocation of the fork asks for (a ladder's "
            "higher rung still outranks it).",
        ),
    ] = None,
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
) -> None:
    """Try again from any step: a new run from the first AT facts of RUN (or the nearest
    earlier point where it was about to make a prompt on committed work), in a new git
    worktree at the commit recorded by then, on a branch of its own; the original is
    untouched. Go on with ralph resume -C DIR."""
    from pipeline.app.workspace import fork_run, resume_hint

    with _said_failures():
        fork, target, point = fork_run(
            workspace, run, at, to=to, prompt=prompt, store=store, agent=agent, model=model
        )
    _print(
        f"Forked run {fork} after fact {point} into {target}; go on with: "
        f"{resume_hint(fork, target, store)}"
    )
