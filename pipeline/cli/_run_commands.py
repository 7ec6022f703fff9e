"""``ralph init``, ``run``, ``resume``, ``abandon`` and ``demo``: the commands that drive a run."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import attrs
import orjson
import typer
from attrs import frozen
from rich.markup import escape

from pipeline.cli._app import (
    BUSY,
    JsonLogsOption,
    OtelFileOption,
    OtelOption,
    PlainOption,
    QuietOption,
    StoreOption,
    WorkspaceOption,
    _display,
    _fail,
    _open,
    _store_failure,
    _warn,
    app,
    err,
    lost_runs,
    out,
)
from pipeline.cli._demo import create_demo_repository, prepare_directory
from pipeline.cli._faults import FaultError, fault_from, with_fault
from pipeline.cli._init import installed_presets, write_starter
from pipeline.cli._logfile import write_event_log
from pipeline.cli._progress import Display, showing
from pipeline.cli._render import state_table
from pipeline.cli._safe import message_safe
from pipeline.cli._shutdown import run_interruption
from pipeline.cli._tracing import tracing
from pipeline.engine import (
    DurableRun,
    load_state,
    utc_now,
)
from pipeline.errors import PipelineError
from pipeline.events import (
    RunAbandoned,
    RunId,
)
from pipeline.handlers.runtime import PromptSource
from pipeline.handlers.store import (
    NamedStore,
    StoreError,
    UnknownRunError,
    store_path,
)
from pipeline.serialization import (
    encode_state,
)
from pipeline.state import Phase
from pipeline.workspace import (
    RunDivergedError,
    RunSetupError,
    Workspace,
    WorkspaceBusyError,
    check_clean,
    drive,
    ensure_idle,
    open_store,
    resolve_prompt,
    store_location,
)


@frozen
class _Watching:
    """How a run command shows and traces the run it drives."""

    display: Display
    otel: bool = False
    otel_file: Path | None = None


@frozen
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
            with showing(watching.display, out, workspace.layout.root) as on_event:
                result = drive(
                    workspace,
                    prompt=prompt,
                    run_id=run_id,
                    on_event=with_fault(fault_from(os.environ), on_event),
                    on_warning=_warn,
                    tracer=tracer,
                    store=events,
                    interruption=run_interruption(),
                    kept_paths=kept_paths,
                )
            # Never "N events" from a store that is gone: its facts went to a deleted file.
            events.ensure_present()
            return result, events.label
    except FaultError as error:
        raise _fail(str(error)) from error
    except RunDivergedError as error:
        # Not a usage error: the store and git are fine to read, they disagree.
        err.print(f"[bold red]error:[/] {escape(message_safe(str(error)))}", soft_wrap=True)
        raise typer.Exit(1) from error
    except WorkspaceBusyError as error:
        # Not a usage mistake: the same command works once the other run ends.
        err.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        raise typer.Exit(BUSY) from error
    except StoreError as error:
        raise _store_failure(error) from error
    except (PipelineError, OSError) as error:
        raise _fail(str(error)) from error


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


@app.command()
def init(workspace: WorkspaceOption = Path()) -> None:
    """Write a commented starter ralph.toml for the agent CLIs installed here."""
    try:
        path, validate = write_starter(workspace)
    except FileExistsError as error:
        raise _fail(f"{workspace / 'ralph.toml'} exists already; edit it instead") from error
    except OSError as error:
        raise _fail(f"cannot write {workspace / 'ralph.toml'}: {error.strerror}") from error
    found = installed_presets()
    out.print(f"Wrote {path}" + (f" (agents found: {', '.join(found)})" if found else ""))
    if validate is not None:
        out.print(f"Final check: {' '.join(validate)} (validate in ralph.toml)", markup=False)
    else:
        _warn("no test command found here: set validate in ralph.toml to your tests")
    if not (workspace / "PROMPT.md").exists():
        out.print("Next: describe the task in PROMPT.md, then `ralph run`.")


@app.command()
def run(
    workspace: WorkspaceOption = Path(),
    prompt: Annotated[str | None, typer.Option("--prompt", "-p", help="The task, as text.")] = None,
    prompt_file: Annotated[
        Path | None, typer.Option(help="A file holding the task (default: PROMPT.md).")
    ] = None,
    max_iterations: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=1_000_000_000,
            help="Development iterations for this run (instead of [budgets] max_iterations).",
        ),
    ] = None,
    quiet: QuietOption = False,
    plain: PlainOption = False,
    json_logs: JsonLogsOption = False,
    otel: OtelOption = False,
    otel_file: OtelFileOption = None,
    store: StoreOption = None,
    allow_dirty: Annotated[
        bool,
        typer.Option(
            "--allow-dirty",
            help="Start although the work tree has uncommitted changes; the run's commits "
            "leave those paths alone.",
        ),
    ] = False,
) -> None:
    """Start a new run in the workspace and drive it until it completes or stops."""
    opened = _open(workspace)
    if max_iterations is not None:
        # RunStarted records the budget, so a replay or resume needs no flag.
        budgets = attrs.evolve(opened.config.budgets, max_iterations=max_iterations)
        opened = attrs.evolve(opened, config=attrs.evolve(opened.config, budgets=budgets))
    try:
        source = resolve_prompt(opened, prompt, prompt_file)
        ensure_idle(opened.layout.ralph_dir)
        kept = check_clean(opened, store, allow_dirty=allow_dirty)
    except RunSetupError as error:
        raise _fail(str(error)) from error
    except WorkspaceBusyError as error:
        # Before the tree is judged: its changes are then the other run's, not the person's.
        err.print(f"[bold red]error:[/] {escape(str(error))}", soft_wrap=True)
        raise typer.Exit(BUSY) from error
    watching = _Watching(_display(quiet, plain, json_logs), otel, otel_file)
    result, label = _drive("run", opened, source, watching, store, kept)
    raise _finish(opened, result, watching.display, label)


@app.command()
def resume(
    run_id: Annotated[
        str | None, typer.Argument(help="The run to resume (default: the latest).")
    ] = None,
    workspace: WorkspaceOption = Path(),
    quiet: QuietOption = False,
    plain: PlainOption = False,
    json_logs: JsonLogsOption = False,
    otel: OtelOption = False,
    otel_file: OtelFileOption = None,
    store: StoreOption = None,
) -> None:
    """Resume an interrupted or crashed run from its last checkpoint and event tail."""
    opened = _open(workspace)
    path = store_path(store_location(opened, store))
    if path is not None and not path.is_file():
        lost_runs(opened.layout, str(path), set(), run_id)
        raise _fail(f"no runs yet in {opened.layout.root} (no {path}); start one: ralph run")
    watching = _Watching(_display(quiet, plain, json_logs), otel, otel_file)
    result, label = _drive("resume", opened, _Resume(run_id), watching, store)
    raise _finish(opened, result, watching.display, label)


@app.command()
def abandon(
    run_id: Annotated[str, typer.Argument(help="The run to give up for good.")],
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
) -> None:
    """Give an unfinished run up for good: recorded as a fact (RunAbandoned), the run
    finalizes as abandoned and its prompt file gets its permissions back."""
    opened = _open(workspace)
    path = store_path(store_location(opened, store))
    if path is not None and not path.is_file():
        lost_runs(opened.layout, str(path), set(), run_id)
        raise _fail(f"no runs yet in {opened.layout.root} (no {path})")
    try:
        with open_store(opened, store) as events:
            chosen = _chosen(events, _Resume(run_id), opened)
            state, _ = load_state(events, chosen, _warn)
            if state.phase is Phase.COMPLETE:
                ended = state.termination.value if state.termination else "unknown"
                raise _fail(f"run {chosen} is finished already ({ended}): nothing to abandon")
            why = RunAbandoned("given up by a person (ralph abandon)", utc_now())
            events.append(chosen, state.sequence, [why])
            result = drive(opened, prompt=None, run_id=chosen, on_warning=_warn, store=events)
    except (PipelineError, StoreError, OSError) as error:
        raise _fail(str(error)) from error
    protected = state.ledger.protected_prompt
    back = (
        f"; {protected.path} has its mode {protected.original_mode:#o} back"
        if protected is not None and result.state.phase is Phase.COMPLETE
        else ""
    )
    out.print(f"Abandoned run {chosen}{back}", markup=False)


@app.command()
def demo(
    directory: Annotated[
        Path, typer.Argument(help="A new directory for the demo's git repository.")
    ] = Path("ralph-demo"),
    quiet: QuietOption = False,
    plain: PlainOption = False,
    otel: OtelOption = False,
    otel_file: OtelFileOption = None,
) -> None:
    """Create a scratch git repository with a small task and run the whole pipeline on it
    with the scripted agent (offline, no AI model)."""
    try:
        prepare_directory(directory)
        create_demo_repository(directory)
    except (OSError, subprocess.CalledProcessError) as error:
        raise _fail(f"cannot create the demo repository in {directory}: {error}") from error
    opened = _open(directory)
    try:
        source = resolve_prompt(opened, None, None)
    except RunSetupError as error:
        raise _fail(str(error)) from error
    out.print(f"Demo repository: {opened.layout.root}")
    display = _display(quiet, plain, json_logs=False)
    result, label = _drive("demo", opened, source, _Watching(display, otel, otel_file), None)
    with open_store(opened) as store:
        write_event_log(opened.layout.ralph_dir / "event-log.jsonl", store.read(result.run_id))
    (opened.layout.ralph_dir / "state.json").write_bytes(encode_state(result.state) + b"\n")
    log = subprocess.run(
        ["git", "log", "--oneline"], cwd=directory, capture_output=True, text=True, check=False
    )
    out.print("Commits:\n" + log.stdout.rstrip())
    # The full command: `ralph` is on PATH only while its virtual environment is active.
    ralph_command = f"{shlex.quote(sys.executable)} -m pipeline"
    here = shlex.quote(str(opened.layout.root))
    out.print(
        f"Replay it: cd {here} && {ralph_command} replay --verify", markup=False, soft_wrap=True
    )
    out.print(
        f"What the agents published: cd {here} && {ralph_command} topics",
        markup=False,
        soft_wrap=True,
    )
    raise _finish(opened, result, display, label)
