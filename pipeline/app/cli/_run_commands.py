"""``ralph run``, ``resume``, ``abandon`` and ``demo``: the commands that drive a run."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline import PipelineError
from pipeline.app.cli._app import (
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
    _print,
    _said_failures,
    _warn,
    app,
    err,
    lost_runs,
    out,
)
from pipeline.app.cli._demo import create_demo_repository, prepare_directory
from pipeline.app.cli._driving import (
    Warned,
    _chosen,
    _drive,
    _finish,
    _ready_to_start,
    _Resume,
    _Watching,
    _with_options,
)
from pipeline.app.cli._logfile import write_event_log
from pipeline.app.cli._merge_command import land
from pipeline.app.cli._safe import terminal_safe
from pipeline.app.cli._workflow_runs import _WorkflowStart, run_chain, with_recorded_workflow
from pipeline.app.workspace import (
    RunSetupError,
    Workspace,
    check_identity,
    drive,
    drop_worktree,
    find_worktree,
    new_worktree,
    open_store,
    peek_config,
    resolve_prompt,
    store_location,
)
from pipeline.core.serialization import encode_state
from pipeline.core.state import Phase
from pipeline.engine import load_state, utc_now
from pipeline.events import RunAbandoned, TerminationReason
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import StoreError, store_path


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
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help="Follow this workflow preset (ralph presets) over ralph.toml for this run; "
            "a,b runs b after a completes, with a handoff in its prompt.",
        ),
    ] = None,
    worktree: Annotated[
        bool,
        typer.Option(
            "--worktree",
            help="Run in a git worktree of its own, on a branch of its own, beside the "
            "workspace, from its HEAD: many runs of one repository at once ([run] worktree "
            "= true does it always; ralph worktrees lists them).",
        ),
    ] = False,
    merge: Annotated[
        bool,
        typer.Option(
            "--merge",
            help="In a worktree of its own, and once the run completes, land it on the "
            "workspace's branch through the merge queue ([run] merge = true does it always; "
            "ralph worktrees merge).",
        ),
    ] = False,
    tests_editable: Annotated[
        bool,
        typer.Option(
            "--tests-editable",
            help="Let the agent change the tests for this run: its gates and blocking hooks "
            "run on the tests and their configuration as the agent leaves them, not as the "
            'run\'s base has them ([tamper] pin = "off").',
        ),
    ] = False,
) -> None:
    """Start a new run in the workspace and drive it until it completes or stops."""
    watching = _Watching(display=_display(quiet, plain, json_logs), otel=otel, otel_file=otel_file)
    root, made = workspace, None
    configured = peek_config(root)
    merging = merge or (configured is not None and configured.run.merge)
    if worktree or merging or (configured is not None and configured.run.worktree):
        made = _into_worktree(root)
        workspace = made[0]
    try:
        if preset is not None:
            chain = _WorkflowStart(
                prompt=prompt,
                prompt_file=prompt_file,
                max_iterations=max_iterations,
                store=store,
                allow_dirty=allow_dirty,
                tests_editable=tests_editable,
            )
            raise _landed(root, made, merging, run_chain(workspace, preset, chain, watching))
        opened = _with_options(
            _open(workspace), max_iterations=max_iterations, tests_editable=tests_editable
        )
        source, kept = _ready_to_start(opened, prompt, prompt_file, store, allow_dirty=allow_dirty)
    except typer.Exit as stop:
        if made is not None and stop.exit_code != 0 and not _ran_in(made[0]):
            drop_worktree(root, *made)  # no run started there: nothing of it is worth keeping
        raise
    result, label = _drive("run", opened, source, watching, store, kept)
    raise _landed(root, made, merging, _finish(opened, result, watching.display, label))


def _landed(
    root: Path, made: tuple[Path, str] | None, merging: bool, finished: typer.Exit
) -> typer.Exit:
    """``finished`` (how the run ended), or, for a run that completed in its worktree with
    ``--merge``, how its landing through the merge queue ended."""
    if not merging or made is None or finished.exit_code != 0:
        return finished
    if find_worktree(root, str(made[0])).phase != TerminationReason.COMPLETED.value:
        return finished  # stopped short of its work (cancelled): nothing to land
    return land(root, [str(made[0])], None)


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
    """Resume an interrupted or crashed run from its last checkpoint and event tail.

    A run started with --preset follows the preset's workflow again; the later workflows of
    a chain do not run (ralph run --preset starts them)."""
    opened = _with_runs(workspace, store, run_id, "; start one: ralph run")
    _unless_finished(opened, run_id, store)
    try:
        # As for a new run: it would pay its agents up to its next commit, and stop there.
        check_identity(opened)
    except RunSetupError as error:
        raise _fail(str(error)) from error
    watching = _Watching(display=_display(quiet, plain, json_logs), otel=otel, otel_file=otel_file)
    opened = with_recorded_workflow(workspace, opened, run_id, store, watching.display)
    result, label = _drive("resume", opened, _Resume(run_id=run_id), watching, store)
    raise _finish(opened, result, watching.display, label)


def _with_runs(workspace: Path, store: str | None, run_id: str | None, hint: str) -> Workspace:
    """The workspace, once its store file is there (else a usage error, ``hint`` saying what
    to do; a store error when the workspace shows it started a run there)."""
    opened = _open(workspace)
    path = store_path(store_location(opened, store))
    if path is not None and not path.is_file():
        lost_runs(opened.layout, str(path), set(), run_id)
        raise _fail(f"no runs yet in {opened.layout.root} (no {path}){hint}")
    return opened


def _unless_finished(opened: Workspace, run_id: str | None, store: str | None) -> None:
    """Nothing when the run to resume is unfinished; when it has ended, say so and exit with
    the code of how it ended (as the command that ran it did: docs/architecture/termination.md),
    leaving it untouched."""
    try:
        with open_store(opened, store) as events:
            chosen = _chosen(events, _Resume(run_id=run_id), opened)
            state, _ = load_state(events, chosen, _warn)
    except (PipelineError, StoreError, OSError) as error:
        raise _fail(str(error)) from error
    ended = state.termination
    if state.phase is not Phase.COMPLETE or ended is None:
        return
    _print(
        f"Run {chosen} has finished already ({ended.value}, exit status {ended.exit_code}): "
        "nothing to resume. Start a new run with: ralph run"
    )
    raise typer.Exit(ended.exit_code)


@app.command()
def abandon(
    run_id: Annotated[str, typer.Argument(help="The run to give up for good.")],
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
) -> None:
    """Give an unfinished run up for good: recorded as a fact (RunAbandoned), the run
    finalizes as abandoned and its prompt file gets its permissions back."""
    opened = _with_runs(workspace, store, run_id, "")
    with _said_failures(), open_store(opened, store) as events:
        chosen = _chosen(events, _Resume(run_id=run_id), opened)
        state, _ = load_state(events, chosen, _warn)
        if state.phase is Phase.COMPLETE:
            ended = state.termination.value if state.termination else "unknown"
            raise _fail(f"run {chosen} is finished already ({ended}): nothing to abandon")
        why = RunAbandoned(reason="given up by a person (ralph abandon)", at=utc_now())
        events.append(chosen, state.sequence, [why])
        result = drive(opened, prompt=None, run_id=chosen, observer=Warned(), store=events)
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
    with _said_failures():
        source = resolve_prompt(opened, None, None)
    out.print(f"Demo repository: {opened.layout.root}")
    display = _display(quiet, plain, json_logs=False)
    result, label = _drive(
        "demo", opened, source, _Watching(display=display, otel=otel, otel_file=otel_file), None
    )
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
    _print(f"Replay it: cd {here} && {ralph_command} replay --verify")
    _print(f"What the agents published: cd {here} && {ralph_command} topics")
    raise _finish(opened, result, display, label)


def _into_worktree(root: Path) -> tuple[Path, str]:
    """A new worktree of ``root`` for the run (``ralph run --worktree``), named on stderr;
    returns its folder and branch."""
    with _said_failures():
        _name, target, branch = new_worktree(root)
    err.print(f"Worktree: {terminal_safe(str(target))} (branch {branch})", markup=False)
    return target, branch


def _ran_in(target: Path) -> bool:
    """Whether a run started in the worktree (it keeps each run's prompt from its start)."""
    runs = WorkspaceLayout(root=target).state_dir / "runs"
    return runs.is_dir() and any(runs.iterdir())
