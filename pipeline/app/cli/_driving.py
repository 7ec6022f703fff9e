"""Driving a run from a command: start or resume it in the workspace's store, show it, and
say how it ended (the summary and the exit status). ``ralph run``, ``resume``, ``demo`` and
the runs of a preset chain all go through here."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import orjson
import typer
from attrs import frozen
from rich.markup import escape

from pipeline.app.cli._app import (
    BUSY,
    _fail,
    _said_failures,
    _stop,
    _warn,
    err,
    lost_runs,
    out,
)
from pipeline.app.cli._faults import faulting
from pipeline.app.cli._progress import Display, showing
from pipeline.app.cli._render import state_table
from pipeline.app.cli._safe import terminal_safe
from pipeline.app.cli._shutdown import run_interruption
from pipeline.app.cli._tracing import tracing
from pipeline.app.workspace import (
    RunDivergedError,
    RunSetupError,
    Workspace,
    WorkspaceBusyError,
    check_clean,
    check_identity,
    drive,
    ensure_idle,
    open_store,
    resolve_prompt,
)
from pipeline.core.state import Phase, PipelineState
from pipeline.engine import DurableRun, Observers, RunObserver, TracingObserver
from pipeline.events import GatePin, PipelineEvent, RunId, SandboxChecked
from pipeline.handlers.runtime import PromptSource
from pipeline.handlers.store import NamedStore, UnknownRunError


@frozen(kw_only=True)
class _Watching:
    """How a run command shows and traces the run it drives."""

    display: Display
    otel: bool = False
    otel_file: Path | None = None


def _with_options(
    opened: Workspace, *, max_iterations: int | None, tests_editable: bool
) -> Workspace:
    """``opened`` with ``--max-iterations`` as its budget (None: the configured one) and, with
    ``--tests-editable``, gates that run on the tests as the agent leaves them (``[tamper]
    pin = "off"``). ``RunStarted`` records both, so a replay or resume needs no flag."""
    config = opened.config
    if max_iterations is not None:
        budgets = attrs.evolve(config.budgets, max_iterations=max_iterations)
        config = attrs.evolve(config, budgets=budgets)
    if tests_editable:
        config = attrs.evolve(config, tamper=attrs.evolve(config.tamper, pin=GatePin.OFF))
    return attrs.evolve(opened, config=config)


def _ready_to_start(
    opened: Workspace,
    prompt: str | PromptSource | None,
    prompt_file: Path | None,
    store: str | None,
    *,
    allow_dirty: bool,
) -> tuple[PromptSource, tuple[str, ...]]:
    """The prompt of a new run (``prompt``: ``--prompt``, or a source made already) and the
    uncommitted paths its commits leave alone; exits when it cannot start (exit 2, or
    :data:`BUSY` when another run holds the workspace)."""
    try:
        source = (
            prompt
            if isinstance(prompt, PromptSource)
            else resolve_prompt(opened, prompt, prompt_file)
        )
        ensure_idle(opened.layout.ralph_dir)
        kept = check_clean(opened, store, allow_dirty=allow_dirty)
        check_identity(opened)
    except RunSetupError as error:
        raise _fail(str(error)) from error
    except WorkspaceBusyError as error:
        # Before the tree is judged: its changes are then the other run's, not the person's.
        raise _stop(error, BUSY) from error
    return source, kept


def withheld_note(event: SandboxChecked) -> str | None:
    """What a run says when its sandbox withholds variables from agents: their names (never
    a value) and how to pass one (None: nothing is withheld)."""
    if not event.withheld:
        return None
    names = ", ".join(event.withheld)
    return (
        f"the sandbox withholds {len(event.withheld)} of this environment's variables from "
        f"agents: {names}. An agent that needs one gets it with [sandbox] pass_env = "
        '["NAME"] (or a pattern, "NAME_*") in ralph.toml (docs/architecture/sandbox.md)'
    )


class Warned(RunObserver):
    """Says a run's warnings on standard error."""

    __slots__ = ()

    def warning(self, message: str, /) -> None:
        """Say it on standard error."""
        _warn(message)


class _Shown(Warned):
    """What a run command shows: each fact the way the display says (``show``), the withheld
    variables when the sandbox is checked (at the start of a run and of each resumption),
    and each warning, on standard error."""

    __slots__ = ("_show",)

    def __init__(self, show: Callable[[PipelineState, PipelineEvent], None]) -> None:
        self._show = show

    def event(self, state: PipelineState, event: PipelineEvent, /) -> None:
        """Show the fact, and the note on withheld variables it may call for."""
        self._show(state, event)
        note = withheld_note(event) if isinstance(event, SandboxChecked) else None
        if note is not None:
            err.print(f"[cyan]note:[/] {escape(terminal_safe(note))}", soft_wrap=True)


@frozen(kw_only=True)
class _Resume:
    """Resume ``run_id`` (None: the latest run) of the workspace's store."""

    run_id: str | None


def _drive(
    command: str,
    workspace: Workspace,
    what: PromptSource | _Resume,
    watching: _Watching,
    store: str | None,
    kept_paths: tuple[str, ...] = (),
) -> tuple[DurableRun, str]:
    """Start (``what``: the prompt) or resume a run in the workspace's store (``store``:
    ``--store``) and drive it; the result and the store's label. The store is opened once:
    a resume picks its run in the store it then drives."""
    # A run that cannot go on is said by its kind; any other failure as _said_failures says.
    with _said_failures():
        try:
            with (
                tracing(command, otel=watching.otel, otel_file=watching.otel_file) as tracer,
                open_store(workspace, store) as events,
            ):
                prompt, run_id = (
                    (None, _chosen(events, what, workspace))
                    if isinstance(what, _Resume)
                    else (what, None)
                )
                with showing(watching.display, out, workspace.layout.root) as show:
                    traced = [] if tracer is None else [TracingObserver(tracer)]
                    result = drive(
                        workspace,
                        prompt=prompt,
                        run_id=run_id,
                        observer=Observers(_Shown(show), *faulting(os.environ), *traced),
                        store=events,
                        interruption=run_interruption(),
                        kept_paths=kept_paths,
                    )
                # Never "N events" from a store that is gone: its facts went to a deleted file.
                events.ensure_present()
                return result, events.label
        except RunDivergedError as error:
            # Not a usage error: the store and git are fine to read, they disagree.
            raise _stop(error, 1) from error
        except WorkspaceBusyError as error:
            # Not a usage mistake: the same command works once the other run ends.
            raise _stop(error, BUSY) from error


def _chosen(events: NamedStore, resume: _Resume, workspace: Workspace) -> RunId:
    """The run to resume: the one named, else the latest; an unknown one is a usage error,
    unless the workspace shows the store lost it."""
    try:
        return events.choose_run(resume.run_id)
    except UnknownRunError as error:
        lost_runs(workspace.layout, events.label, set(error.known), resume.run_id)
        hint = "" if error.known else "; start one: ralph run"
        raise _fail(f"{error}{hint}") from error


def _finish(
    workspace: Workspace, result: DurableRun, display: Display, store_label: str
) -> typer.Exit:
    """Print the run's summary; the exit status is its termination reason's code."""
    state = result.state
    termination = state.termination
    code = termination.exit_code if termination else 1
    verdict = termination.value if termination else "unknown"
    if display is Display.JSON:
        summary = {
            "run_id": result.run_id,
            "phase": state.phase.value,
            "termination": termination.value if termination else None,
            "success": bool(termination and termination.is_success),
            "exit_code": code,
            "events": state.sequence,
            "store": store_label,
        }
        sys.stdout.write(orjson.dumps({"summary": summary}).decode() + "\n")
        return typer.Exit(code)
    out.print(state_table(state, title=f"Run {result.run_id}"))
    out.print(f"Event store: {store_label}  ({state.sequence} events)", markup=False)
    if state.phase is Phase.INTERRUPTED:
        out.print(f"Resume it: ralph resume {result.run_id} -C {workspace.layout.root}")
        protected = state.ledger.protected_prompt
        if protected is not None:
            out.print(
                f"{protected.path} stays read-only until the run ends; a new `ralph run` "
                f"gives it back its mode {protected.original_mode:#o} when it ends, and "
                f"`ralph abandon {result.run_id} -C {workspace.layout.root}` gives it back now",
                markup=False,
            )
    if termination is not None and code == 0 and not termination.is_success:
        verdict += " (not a success)"
    out.print(f"Exit status {code}: {verdict}")
    return typer.Exit(code)
