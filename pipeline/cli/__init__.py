"""The ``ralph`` command line (typer + rich). Library code never exits or prints; this does."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import shlex
import subprocess
import sys
from collections.abc import Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import attrs
import orjson
import typer
from attrs import frozen
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from pipeline.cli._demo import create_demo_repository, prepare_directory
from pipeline.cli._faults import FaultError, fault_from, with_fault
from pipeline.cli._follow import category_filter, follow
from pipeline.cli._init import installed_presets, write_starter
from pipeline.cli._logfile import EventLogError, write_event_log
from pipeline.cli._progress import Display, choose_display, showing
from pipeline.cli._queue import queue_rows, run_worker_processes
from pipeline.cli._render import describe_event, state_table
from pipeline.cli._report import html_report, markdown_report
from pipeline.cli._safe import message_safe, terminal_safe
from pipeline.cli._shutdown import routed_signals, run_interruption
from pipeline.cli._source import LogSource, open_source
from pipeline.cli._tracing import TracingSetupError, ticket_tracing, tracing
from pipeline.config import ConfigError
from pipeline.engine import (
    AnswerError,
    DurableRun,
    NothingToSalvageError,
    RunPresentError,
    Salvaged,
    load_state,
    respond,
    salvage,
    utc_now,
)
from pipeline.errors import PipelineError, WireFormatError
from pipeline.events import (
    CATEGORIES,
    PatternError,
    PipelineEvent,
    RunAbandoned,
    RunId,
    check_pattern,
    topic_matches,
)
from pipeline.graph import Edge, phase_changes, stored_edges, to_dot, to_mermaid
from pipeline.handlers.intake import (
    MAX_TOPIC_CHARS,
    EmitError,
    EventsFileError,
    UnsafeFileError,
    events_file_for,
)
from pipeline.handlers.intake import emit as emit_topic
from pipeline.handlers.runtime import GitError, PromptSource, WorkspaceLayout, run_history
from pipeline.handlers.store import (
    NamedStore,
    SequenceConflictError,
    SqliteEventStore,
    StoreError,
    StoreMissingError,
    UnknownRunError,
    open_store_at,
    store_path,
)
from pipeline.reducers import reduce
from pipeline.serialization import (
    CONVERTER,
    CheckpointError,
    checkpoint_state,
    encode_state,
    unstructure_event,
)
from pipeline.state import Phase, PipelineState
from pipeline.views import cost_text, timeline, topic_log
from pipeline.workspace import (
    Check,
    Reconciliation,
    RunDivergedError,
    RunSetupError,
    Status,
    Workspace,
    WorkspaceBusyError,
    check_clean,
    diagnose,
    drive,
    ensure_idle,
    open_store,
    open_workspace,
    reconcile,
    recorded_commits,
    resolve_prompt,
    store_location,
    would_fail,
)

if TYPE_CHECKING:  # psycopg comes with the optional extra; the CLI must load without it
    from pipeline.handlers.store.queue import Ticket

__all__ = ["app", "main"]

app = typer.Typer(
    name="ralph",
    help="Run AI coding agents in a durable, replayable plan/develop/review/commit loop.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        out.print(f"ralph {importlib.metadata.version('ralph-pipeline')}", markup=False)
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Run AI coding agents in a durable, replayable plan/develop/review/commit loop."""


class _Console(Console):
    """A console that goes quiet when its reader goes away, instead of ending the program."""

    def on_broken_pipe(self) -> None:
        """Stop printing; the command still finishes its work (and writes its files)."""
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


# No emoji codes anywhere: ``:x:`` in agent text (``root:x:0:0``) must not become an emoji.
out = _Console(highlight=False, emoji=False)
err = Console(stderr=True, highlight=False, emoji=False)

USAGE_ERROR = 2
BUSY = 1
"""The exit status when another run holds the workspace."""
STORE_ERROR = 4
"""The exit status when the event store or its disk failed: damaged, removed while a run wrote
to it, full, unreachable or read-only (see termination.md)."""


class LogFormat(StrEnum):
    """How ``ralph events`` prints the log."""

    TABLE = "table"
    JSONL = "jsonl"


def _fail(message: str) -> typer.Exit:
    # Messages quote paths, config sections and extras ("[store]", "[otel]"): never markup.
    err.print(f"[bold red]error:[/] {escape(message_safe(message))}", soft_wrap=True)
    return typer.Exit(USAGE_ERROR)


def _store_failure(error: Exception) -> typer.Exit:
    """Say what went wrong with the store; exit :data:`STORE_ERROR`, or :data:`USAGE_ERROR`
    for a store or run that was named wrongly (nothing failed: the input was bad)."""
    if isinstance(error, (UnknownRunError, StoreMissingError)) or not isinstance(error, StoreError):
        return _fail(str(error))
    err.print(f"[bold red]store error:[/] {escape(message_safe(str(error)))}", soft_wrap=True)
    return typer.Exit(STORE_ERROR)


def _warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message_safe(message))}", soft_wrap=True)


def _open(root: Path) -> Workspace:
    try:
        return open_workspace(root)
    except (ConfigError, RunSetupError) as error:
        raise _fail(str(error)) from error


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
                (None, _chosen(events, what)) if isinstance(what, _Resume) else (what, None)
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


def _chosen(events: NamedStore, resume: _Resume) -> RunId:
    """The run to resume: the one named, else the latest; an unknown one is a usage error."""
    try:
        return events.choose_run(resume.run_id)
    except UnknownRunError as error:
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


WorkspaceOption = Annotated[
    Path, typer.Option("--workspace", "-C", help="The git repository to work in.")
]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary.")]
PlainOption = Annotated[
    bool, typer.Option("--plain", help="One line per fact, no live panel (as when piped).")
]
JsonLogsOption = Annotated[
    bool,
    typer.Option("--json-logs", help="One JSON object per fact, then a JSON summary line."),
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="RALPH_STORE",
        help="The event store: a path, sqlite:///PATH or postgresql://USER@HOST:PORT/DB "
        # rich reads help as markup: "\\[" keeps a bracket that would be taken for a style.
        "(default: \\[store] url in ralph.toml, else .git/ralph/pipeline.db).",
    ),
]
ReadWorkspaceOption = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        "-C",
        help="Read the store of this workspace (its default store) when no SOURCE is given.",
    ),
]
StoreArgument = Annotated[
    str | None,
    typer.Argument(
        envvar="RALPH_STORE",
        show_envvar=True,
        help="An event store: a path, sqlite:///PATH or postgresql://... "
        "(default: this repository's store)",
    ),
]
OtelOption = Annotated[
    bool,
    typer.Option(
        "--otel",
        help="OpenTelemetry spans (one per effect) to the configured provider, e.g. under "
        "opentelemetry-instrument. Needs the extra ralph-pipeline\\[otel].",
    ),
]
OtelFileOption = Annotated[
    Path | None,
    typer.Option(
        "--otel-file",
        help="Write the OpenTelemetry spans to this file, one JSON span per line.",
        dir_okay=False,
    ),
]


def _display(quiet: bool, plain: bool, json_logs: bool) -> Display:
    return choose_display(terminal=out.is_terminal, plain=plain, quiet=quiet, json_logs=json_logs)


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
        raise _fail(f"no runs yet in {opened.layout.root} (no {path}); start one: ralph run")
    watching = _Watching(_display(quiet, plain, json_logs), otel, otel_file)
    result, label = _drive("resume", opened, _Resume(run_id), watching, store)
    raise _finish(opened, result, watching.display, label)


_PAYLOAD_FILE_BYTES = 64 << 20
"""The largest payload ``ralph emit`` reads from stdin or a file (an events line that long is
far over any sensible intake limit already)."""


def _payload_text(payload: str | None, payload_file: Path | None) -> str | None:
    """The payload: the argument, stdin for ``-``, or the file ``--file`` names."""
    if payload_file is not None and payload is not None:
        raise EmitError("give the payload once: as PAYLOAD, as - (stdin) or with --file")
    try:
        if payload_file is not None:
            with payload_file.open("rb") as handle:
                data = handle.read(_PAYLOAD_FILE_BYTES + 1)
        elif payload == "-":
            data = sys.stdin.buffer.read(_PAYLOAD_FILE_BYTES + 1)
        else:
            return payload
    except OSError as error:
        raise EmitError(f"cannot read the payload from {payload_file}: {error.strerror}") from error
    if len(data) > _PAYLOAD_FILE_BYTES:
        raise EmitError(f"the payload is over {_PAYLOAD_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EmitError(f"the payload is not UTF-8 text: {error}") from error


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
        raise _fail(f"no runs yet in {opened.layout.root} (no {path})")
    try:
        with open_store(opened, store) as events:
            chosen = _chosen(events, _Resume(run_id))
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


DamagedStoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="RALPH_STORE",
        help="The damaged event store, only read: a path, sqlite:///PATH or "
        "postgresql://USER@HOST:PORT/DB (default: \\[store] url in ralph.toml, else "
        ".git/ralph/pipeline.db).",
    ),
]


@app.command(name="salvage")
def salvage_command(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="The store to copy the run into: a path (created when missing), "
            "sqlite:///PATH or postgresql://...; it must not hold the run yet.",
        ),
    ],
    run_id: Annotated[
        str | None,
        typer.Argument(metavar="RUN", help="The damaged run (default: the latest)."),
    ] = None,
    workspace: WorkspaceOption = Path(),
    store: DamagedStoreOption = None,
) -> None:
    """Copy a damaged run's good prefix (every event before the damage) into another store,
    with a RunSalvaged fact saying so; the damaged store is only read. Then resume the run
    from the new store: ralph resume RUN --store NEW."""
    location = store
    if location is None:
        configured = (workspace / "ralph.toml").is_file()
        location = (
            store_location(_open(workspace))
            if configured
            else str(WorkspaceLayout(workspace).store)
        )
    try:
        source_path, target_path = store_path(location), store_path(to)
    except StoreError as error:
        raise _fail(str(error)) from error
    if _same_store(location, source_path, to, target_path):
        raise _fail(f"--to names the damaged store itself ({to}); give a new store")
    created = target_path is not None and not target_path.exists()
    with _existing_store(location) as damaged:
        try:
            chosen = damaged.choose_run(run_id)
        except StoreError as error:
            raise _store_failure(error) from error
        try:
            with open_store_at(to) as target:
                done = salvage(damaged, chosen, target, source_label=damaged.label, clock=utc_now)
                target.ensure_present()
                found = _reconciled(
                    workspace,
                    chosen,
                    target.read(chosen),
                    events_file=WorkspaceLayout(workspace).run_dir(chosen).is_dir(),
                )
                label = target.label
        except BaseException as error:
            # Whatever stopped it (Ctrl-C too), a failed salvage leaves no store it created.
            if created and target_path is not None:
                _remove_store_file(target_path)
            if isinstance(error, RunPresentError | SequenceConflictError):
                raise _fail(f"{to}: {error}") from error
            if isinstance(error, NothingToSalvageError):
                err.print(f"[bold red]store error:[/] {escape(message_safe(str(error)))}")
                raise typer.Exit(STORE_ERROR) from error
            if isinstance(error, StoreError):
                raise _store_failure(error) from error
            if isinstance(error, WireFormatError):
                raise _fail(str(error)) from error
            raise
    _salvage_summary(done, damaged.label, label, workspace, to, found)


def _same_store(
    source: str, source_path: Path | None, target: str, target_path: Path | None
) -> bool:
    """Whether ``target`` names the store ``source`` names (then salvaging would write into
    the damaged store): the same file, or the same URL."""
    if source_path is None or target_path is None:
        return source_path is None and target_path is None and source == target
    if source_path.exists() and target_path.exists():
        return os.path.samefile(source_path, target_path)
    return source_path.absolute() == target_path.absolute()


def _remove_store_file(path: Path) -> None:
    """Remove the SQLite file ``path`` and its journal files, which this command created."""
    for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()


def _salvage_summary(
    done: Salvaged,
    source: str,
    target: str,
    workspace: Path,
    to: str,
    found: Reconciliation | None,
) -> None:
    """Say what was kept and lost, and what to do next: resume, or first sort out what git
    holds past the kept events (a resume would stop on it)."""
    run = done.run_id
    if done.damage is None:
        line = (
            f"Copied run {run} from {source} to {target}: kept all {done.kept} of {done.held} "
            "events; nothing was damaged"
        )
    else:
        line = (
            f"Salvaged run {run} from {source} into {target}: kept {done.kept} of {done.held} "
            f"events; damage at {done.kept}: {done.damage}"
        )
    out.print(message_safe(line), markup=False, soft_wrap=True)
    # A URL's password is never shown, not even in the command to type next.
    verify = message_safe(f"Verify it: ralph replay {shlex.quote(to)} --run {run} --verify")
    out.print(verify, markup=False, soft_wrap=True)
    where = message_safe(f"--store {shlex.quote(to)} -C {shlex.quote(str(workspace))}")
    if done.state.phase is Phase.COMPLETE:
        out.print(
            f"The run is complete: nothing to resume; see it with ralph status {where}",
            markup=False,
            soft_wrap=True,
        )
        return
    if found is not None and found.problems:
        for problem in found.problems:
            _warn(problem)
        out.print(
            "ralph resume would stop: the workspace and the kept events disagree (the "
            f"warning says how and what to do); once sorted out: ralph resume {run} {where}",
            markup=False,
            soft_wrap=True,
        )
        return
    out.print(f"Resume it: ralph resume {run} {where}", markup=False, soft_wrap=True)


@app.command()
def emit(
    topic: Annotated[
        str,
        typer.Argument(
            help=(
                f"The topic: letters, digits and _ . : - only, at most {MAX_TOPIC_CHARS} "
                "characters, no empty dot-separated part."
            )
        ),
    ],
    payload: Annotated[
        str | None, typer.Argument(help="Text, or JSON with --json; - reads it from stdin.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="The payload is a JSON value, kept structured.")
    ] = False,
    payload_file: Annotated[
        Path | None,
        typer.Option("--file", help="Read the payload from this file (for large payloads)."),
    ] = None,
) -> None:
    """Append a topic to the run's events file (agents call this from their shell)."""
    try:
        text = _payload_text(payload, payload_file)
        target = events_file_for(Path.cwd(), os.environ)
        emit_topic(target, topic, text, as_json=as_json)
    except UnsafeFileError as error:
        # Not the command line's fault: something in the workspace is not what it should be.
        err.print(f"[bold red]error:[/] {escape(f'not written: {error}')}", soft_wrap=True)
        raise typer.Exit(1) from error
    except (EmitError, EventsFileError) as error:
        raise _fail(str(error)) from error
    out.print(f"Event emitted: {topic}", markup=False)


@app.command(name="respond")
def respond_command(
    text: Annotated[str, typer.Argument(help="The answer to the agent's question.")],
    question_id: Annotated[
        str,
        typer.Option(
            "--question",
            help="The id of the question answered, as the run shows it (ralph status).",
        ),
    ],
    run: Annotated[str | None, typer.Option("--run", help="The run (default: the latest).")] = None,
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
) -> None:
    """Answer the question a run is waiting on (an agent's human.interact)."""
    # The configured store when there is a configuration; answering needs no more of it.
    location = store
    if store is None and (workspace / "ralph.toml").is_file():
        location = store_location(_open(workspace), store)
    try:
        run_id, question = respond(workspace, text, question_id, run, location)
    except (AnswerError, StoreError, WireFormatError) as error:
        raise _fail(str(error)) from error
    asked = terminal_safe(question.question)  # an agent's words
    out.print(f"Answered {question.question_id} of run {run_id}: {asked}", markup=False)


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


SourceArgument = Annotated[
    str | None,
    typer.Argument(
        envvar="RALPH_STORE",
        show_envvar=True,
        help="An event store (a path, sqlite:///PATH or postgresql://...; default: "
        "the workspace's store) or a .jsonl log.",
    ),
]
RunOption = Annotated[
    str | None, typer.Option("--run", help="The run to read (default: the latest).")
]


@app.command()
def replay(
    source: SourceArgument = None,
    workspace: ReadWorkspaceOption = None,
    run: RunOption = None,
    until: Annotated[
        int | None, typer.Option(help="Fold only the first UNTIL events.", min=0)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the state as JSON.")] = False,
    verify: Annotated[
        bool,
        typer.Option("--verify", help="Check the fold against every stored checkpoint."),
    ] = False,
    against: Annotated[
        Path | None,
        typer.Option(help="A state file (JSON) the fold must equal; exit 1 when it differs."),
    ] = None,
) -> None:
    """Fold a run's event log into its state and print it (works on a run in progress)."""
    try:
        with open_source(_located(source, workspace), run) as log:
            if verify and not log.is_store:
                raise _fail(f"--verify checks a store's checkpoints; {log.label} has none")
            state, problems, checked = _fold_and_check(log, until, verify)
            if verify and source is None and log.run_id is not None and until is None:
                # The workspace's own store: its run's commits and events file are here.
                found = _reconciled(workspace or Path(), log.run_id, log.events())
                problems += [] if found is None else list(found.problems)
    except StoreError as error:
        raise _store_failure(error) from error
    except (EventLogError, WireFormatError) as error:
        raise _fail(str(error)) from error
    if as_json:
        sys.stdout.write(encode_state(state).decode() + "\n")
    else:
        out.print(state_table(state, title=f"Replay of {log.label}"))
    if verify:
        for problem in problems:
            err.print(f"[bold red]mismatch:[/] {escape(problem)}", soft_wrap=True)
        if problems:
            raise typer.Exit(1)
        out.print(f"verified: the fold equals all {checked} stored checkpoints")
        if source is None:
            out.print("verified: the run's commits in git and its events file agree with the log")
    if against is not None:
        try:
            expected = against.read_bytes().strip()
        except OSError as error:
            raise _fail(f"cannot read {against}: {error.strerror}") from error
        if encode_state(state) != expected:
            mismatch = f"the fold of {log.label} differs from {against}"
            err.print(f"[bold red]mismatch:[/] {escape(mismatch)}")
            raise typer.Exit(1)
        out.print(f"verified: the fold equals {against}")


def _fold_and_check(
    log: LogSource, until: int | None, verify: bool
) -> tuple[PipelineState, list[str], int]:
    """Fold the log (up to ``until``); with ``verify``, compare every checkpoint on the way."""
    checkpoints = {c.sequence: c for c in log.checkpoints} if verify else {}
    problems: list[str] = []
    checked = 0

    def check(state: PipelineState) -> None:
        nonlocal checked
        checkpoint = checkpoints.pop(state.sequence, None)
        if checkpoint is None:
            return
        checked += 1
        try:
            stored = checkpoint_state(checkpoint, f"checkpoint {checkpoint.sequence}")
        except CheckpointError as error:
            problems.append(str(error))
            return
        if stored != state:
            problems.append(f"checkpoint {checkpoint.sequence} differs from the fold of the log")

    state = PipelineState()
    for event in log.events():
        if until is not None and state.sequence >= until:
            break
        check(state)
        state = reduce(state, event)
    check(state)
    if until is None:
        problems += [f"checkpoint {s} lies beyond the end of the log" for s in sorted(checkpoints)]
    if verify and state.sequence == 0:
        problems.append("the run has no events: there is nothing to verify")
    return state, problems, checked


FormatOption = Annotated[LogFormat, typer.Option("--format", help="table or jsonl.")]


def _located(source: str | None, workspace: Path | None) -> str | None:
    """``source``, else ``-C``'s default store, else None (this folder's default store)."""
    if source is not None or workspace is None:
        return source
    return str(WorkspaceLayout(workspace).store)


@contextlib.contextmanager
def _reading_log(source: str | None, run: str | None) -> Iterator[LogSource]:
    """The run's log from ``source``; a log that cannot be read is a usage error (exit 2)."""
    try:
        with open_source(source, run) as log:
            yield log
    except StoreError as error:
        raise _store_failure(error) from error
    except (EventLogError, WireFormatError) as error:
        raise _fail(str(error)) from error


def _print_event(number: int, event: PipelineEvent, output: LogFormat) -> None:
    if output is LogFormat.JSONL:
        sys.stdout.write(orjson.dumps(unstructure_event(event)).decode() + "\n")
        sys.stdout.flush()  # a reader of a followed log sees each event as it comes
    else:
        at = event.at.isoformat(timespec="seconds")
        out.print(f"{number:>5}  {at}  {describe_event(event)}", soft_wrap=True, markup=False)


@app.command()
def events(
    source: SourceArgument = None,
    workspace: ReadWorkspaceOption = None,
    run: RunOption = None,
    output: FormatOption = LogFormat.TABLE,
    category: Annotated[
        list[str] | None,
        typer.Option(
            "--category",
            help=f"Only events of this category (repeatable): {', '.join(CATEGORIES)}.",
        ),
    ] = None,
    follow_run: Annotated[
        bool,
        typer.Option(
            "--follow", "-f", help="Keep printing events as they are appended, until the run stops."
        ),
    ] = False,
) -> None:
    """Print a run's events, one per line (works on a run in progress)."""
    try:
        wanted = category_filter(category or ())
    except ValueError as error:
        raise _fail(f"--category: {error}") from error
    if follow_run:
        location = str(WorkspaceLayout(Path()).store) if source is None else source
        if location.endswith(".jsonl"):
            raise _fail(f"--follow reads a store; {location} is a finished run's log")
        with _existing_store(location) as store:
            try:
                run_id = store.choose_run(run)
                for number, event in follow(store, run_id):
                    if wanted(event):
                        _print_event(number, event, output)
            except StoreError as error:
                raise _store_failure(error) from error
            except WireFormatError as error:
                raise _fail(str(error)) from error
            except KeyboardInterrupt:
                raise typer.Exit(130) from None
        return
    with _reading_log(_located(source, workspace), run) as log:
        for number, event in enumerate(log.events()):
            if wanted(event):
                _print_event(number, event, output)


@app.command()
def status(
    run: RunOption = None,
    workspace: WorkspaceOption = Path(),
    as_json: Annotated[bool, typer.Option("--json", help="Print the state as JSON.")] = False,
    store: StoreOption = None,
) -> None:
    """Where a run stands: phase, iteration, the agent at work, counters, last error and
    termination (its newest checkpoint plus the events after it; works on a run in progress)."""
    location = store if store is not None else WorkspaceLayout(workspace).store
    with _existing_store(location) as events:
        try:
            run_id = events.choose_run(run)
        except UnknownRunError as error:
            raise _fail(str(error)) from error
        state, _checkpoint = load_state(events, run_id, _warn)
        # Only the workspace's own store is known to hold runs of this repository.
        found = (
            _reconciled(workspace, run_id, events.read(run_id), events_file=False)
            if store is None
            else None
        )
    if found is not None and found.missing:
        # Count only the commits git still has, and say which it lost.
        kept = state.ledger.commits - len(found.missing)
        state = attrs.evolve(state, ledger=attrs.evolve(state.ledger, commits=max(kept, 0)))
        for problem in found.problems:
            _warn(problem)
    if as_json:
        sys.stdout.write(encode_state(state).decode() + "\n")
        return
    out.print(state_table(state, title=f"Run {run_id}"))
    if state.phase is Phase.INTERRUPTED:
        out.print(f"Resume it: ralph resume {run_id}")


def _reconciled(
    root: Path, run_id: str, events: Iterable[PipelineEvent], *, events_file: bool = True
) -> Reconciliation | None:
    """The run's log against the git repository at ``root`` (and, with ``events_file``, its
    events file); None when ``root`` is not a git repository."""
    try:
        history = run_history(root, run_id)
    except GitError:
        return None
    state, recorded = recorded_commits(events)
    layout = WorkspaceLayout(root.resolve()) if events_file else None
    return reconcile(run_id, state, recorded, history, layout)


_STATUS_STYLE = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "bold red"}


@app.command()
def doctor(
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
) -> None:
    """Check what a run in the workspace needs: git, ralph.toml, the prompt, .ralph/, the
    store, and each agent CLI (on PATH, --version, known pitfalls). Exit 1 when a run would
    fail."""
    if not workspace.is_dir():
        raise _fail(f"{workspace} is not a directory")
    checks = diagnose(workspace, os.environ, store=store, is_root=os.geteuid() == 0)
    failing = would_fail(checks)
    if as_json:
        document = {
            "ok": not failing,
            "workspace": str(workspace.resolve()),
            "checks": [_check_json(check) for check in checks],
        }
        sys.stdout.write(orjson.dumps(document).decode() + "\n")
    else:
        table = Table(title=Text(f"ralph doctor: {workspace.resolve()}"))
        for column in ("check", "status", "found", "fix"):
            table.add_column(column, overflow="fold")  # a path or fix is never cut short
        for check in checks:
            status = f"[{_STATUS_STYLE[check.status]}]{check.status.value}[/]"
            table.add_row(escape(check.name), status, escape(check.detail), escape(check.fix))
        out.print(table)
        verdict = "a run would fail: fix the FAIL rows" if failing else "ready to run"
        out.print(verdict, markup=False)
    raise typer.Exit(1 if failing else 0)


def _check_json(check: Check) -> dict[str, str]:
    return {
        "name": check.name,
        "status": check.status.value,
        "detail": check.detail,
        "fix": check.fix,
    }


@app.command()
def topics(
    source: SourceArgument = None,
    workspace: ReadWorkspaceOption = None,
    run: RunOption = None,
    output: FormatOption = LogFormat.TABLE,
    patterns: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            help="Only topics matching this pattern (build.*, review.**; repeat for more).",
        ),
    ] = None,
    hats: Annotated[
        list[str] | None,
        typer.Option(
            "--hat",
            help="Only what this hat (or role) published, or 'ralph' for ralph's notices; "
            "repeat for more.",
        ),
    ] = None,
) -> None:
    """Print the topics agents published, rejected lines included (as event.malformed)."""
    wanted = tuple(patterns or ())
    wearers = frozenset(hats or ())
    for pattern in wanted:
        try:
            check_pattern(pattern)
        except PatternError as error:
            raise _fail(f"--topic: {error}") from error
    with _reading_log(_located(source, workspace), run) as log:
        for entry in topic_log(log.events()):
            if wanted and not any(topic_matches(p, entry.topic) for p in wanted):
                continue
            if wearers and entry.hat not in wearers:
                continue
            if output is LogFormat.JSONL:
                sys.stdout.write(orjson.dumps(CONVERTER.unstructure(entry)).decode() + "\n")
            else:
                at = entry.at.isoformat(timespec="seconds")
                line = f"{entry.line_number:>5}  {at}  {entry.topic}  {entry.payload.text}"
                out.print(terminal_safe(line), soft_wrap=True, markup=False)


@app.command()
def report(
    source: SourceArgument = None,
    workspace: ReadWorkspaceOption = None,
    run: RunOption = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML page here.")
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option("--markdown", help="Write Markdown here (- for standard output)."),
    ] = None,
) -> None:
    """Draw a run: a timeline of its agent invocations per phase, coloured by outcome, with
    retries, fallbacks, malformed lines and scope violations marked, and its final state."""
    if html is None and markdown is None:
        raise _fail("say where the report goes: --html FILE and/or --markdown FILE")
    with _reading_log(_located(source, workspace), run) as log:
        drawn = timeline(log.events())
    title = f"ralph run {drawn.final.run.run_id if drawn.final.run else log.label}"
    outputs = [(html, html_report), (markdown, markdown_report)]
    for target, render in outputs:
        if target is None:
            continue
        text = render(drawn, title)
        if str(target) == "-":
            sys.stdout.write(text)
            continue
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as error:
            raise _fail(f"cannot write {target}: {error.strerror}") from error
        out.print(f"Wrote {target} ({len(drawn.bars)} invocations)", markup=False)


class GraphFormat(StrEnum):
    """How ``ralph graph`` draws."""

    MERMAID = "mermaid"
    DOT = "dot"


@app.command()
def graph(
    source: Annotated[
        str | None,
        typer.Argument(
            help="A store (path or URL) or .jsonl log whose run to highlight "
            "(with --run: the store)."
        ),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option("--run", help="Highlight the edges this run took (default store: .ralph/)."),
    ] = None,
    output: Annotated[
        GraphFormat, typer.Option("--format", help="mermaid or dot.")
    ] = GraphFormat.MERMAID,
) -> None:
    """Draw the phase graph, found by exploring the orchestration itself; with a run, the
    phase changes it made in red."""
    taken: list[Edge] = []
    if source is not None or run is not None:
        with _reading_log(source, run) as log:
            taken = list(phase_changes(log.events()))
    edges = stored_edges()
    draw = to_mermaid if output is GraphFormat.MERMAID else to_dot
    sys.stdout.write(draw(edges, taken))
    unknown = sorted({e for e in taken if e not in edges})
    for edge in unknown:
        _warn(
            f"the run changed phase {edge.source.value} -> {edge.target.value} on {edge.fact}, "
            "which the explored graph does not hold (drawn dashed)"
        )


@contextlib.contextmanager
def _existing_store(location: str | Path | None, *, read_only: bool = True) -> Iterator[NamedStore]:
    """The event store at ``location`` (a path or URL; None: this folder's default), opened
    read-only unless asked; a missing one is a usage error (exit 2), a damaged or unreachable
    one a store error (exit 4)."""
    where = WorkspaceLayout(Path()).store if location is None else location
    try:
        with open_store_at(where, must_exist=True, read_only=read_only) as opened:
            yield opened
    except StoreError as error:
        raise _store_failure(error) from error
    except WireFormatError as error:
        raise _fail(str(error)) from error


@app.command()
def runs(
    store: StoreArgument = None,
) -> None:
    """List the runs in an event store with their cost so far; on a PostgreSQL store, the
    queue's tickets too (state, run, events, cost, worker, claims, age, outcome)."""
    with _existing_store(store) as opened:
        try:
            listed = opened.runs()
        except StoreError as error:
            raise _store_failure(error) from error
        tickets = _queue_tickets(opened)
        costs: dict[str, str] = {s.run_id: _run_cost(opened, s.run_id) for s in listed}
    if tickets is None:
        table = Table(title=Text(f"Runs in {opened.label}"))
        for column in ("run", "events", "cost", "started"):
            table.add_column(column)
        for summary in listed:
            table.add_row(
                *_cells(
                    summary.run_id, str(summary.events), costs[summary.run_id], summary.started_at
                )
            )
    else:
        table = Table(title=Text(f"Runs in {opened.label}"))
        for column in (
            "ticket",
            "state",
            "run",
            "events",
            "cost",
            "worker",
            "claims",
            "age",
            "outcome",
        ):
            table.add_column(column)
        for row in queue_rows(tickets, listed, costs):
            table.add_row(*_cells(*row))
    out.print(table)


def _cells(*values: str) -> list[Text]:
    """Table cells shown as written (outcomes quote agents' failures): no markup, escaped."""
    return [Text(terminal_safe(value)) for value in values]


def _run_cost(store: NamedStore, run_id: RunId) -> str:
    """The known cost of ``run_id`` so far, from its newest checkpoint and the events after
    it (``-`` when no invocation reported usage; unknown costs named, never $0)."""
    state, _checkpoint = load_state(store, run_id, _warn)
    total = state.ledger.spend.total
    return cost_text(total) if total.invocations else "-"


def _queue_tickets(store: NamedStore) -> list[Ticket] | None:
    """The queue's tickets when ``store`` is a PostgreSQL store, else None."""
    if isinstance(store, SqliteEventStore):
        return None
    from pipeline.handlers.store.postgres import PostgresEventStore
    from pipeline.handlers.store.queue import RunQueue

    assert isinstance(store, PostgresEventStore)
    try:
        return RunQueue(store).tickets()
    except StoreError as error:
        raise _fail(str(error)) from error


def _queue_url(store: str | None) -> str:
    """The PostgreSQL URL ``--store`` (or RALPH_STORE) names; a usage error otherwise."""
    if store is None:
        raise _fail("say which queue: --store postgresql://USER@HOST:PORT/DATABASE or RALPH_STORE")
    try:
        path = store_path(store)
    except StoreError as error:
        raise _fail(str(error)) from error
    if path is not None:
        raise _fail(f"the queue lives in PostgreSQL; {store} is a SQLite store")
    return store


@app.command()
def submit(
    workspace: WorkspaceOption = Path(),
    prompt: Annotated[str | None, typer.Option(help="The task, as text.")] = None,
    prompt_file: Annotated[
        Path | None, typer.Option(help="A file holding the task (default: PROMPT.md).")
    ] = None,
    store: StoreOption = None,
) -> None:
    """Queue a pipeline run of the workspace for the workers (prints the ticket)."""
    if store is None:
        # The workspace may name its team's database itself ([store] url).
        store = _open(workspace).config.store.url
    url = _queue_url(store)
    try:
        from pipeline.workers import submit as submit_run
    except ImportError as error:
        raise _fail(_POSTGRES_HINT) from error
    try:
        ticket = submit_run(url, workspace, prompt=prompt, prompt_file=prompt_file)
    except (ConfigError, RunSetupError, StoreError, OSError) as error:
        raise _fail(str(error)) from error
    err.print(f"Queued {ticket.ticket} for {ticket.workspace}", markup=False)
    sys.stdout.write(ticket.ticket + "\n")


@app.command()
def cancel(
    ticket: Annotated[str, typer.Argument(help="The ticket, as ralph submit printed it.")],
    store: StoreOption = None,
    reason: Annotated[str, typer.Option(help="Recorded as the ticket's outcome.")] = "cancelled",
) -> None:
    """Cancel a queued or running pipeline: a queued one never runs; a running one is
    stopped by its worker (agent included) within a third of its lease."""
    url = _queue_url(store)
    try:
        from pipeline.workers import CancelError
        from pipeline.workers import cancel as cancel_ticket
    except ImportError as error:
        raise _fail(_POSTGRES_HINT) from error
    try:
        before = cancel_ticket(url, ticket, why=reason)
    except (CancelError, StoreError) as error:
        raise _fail(str(error)) from error
    if before.worker is not None and before.state == "running":
        was = f"running under worker {before.worker}, which stops it"
    else:
        was = before.state
    err.print(f"Cancelled {before.ticket} (it was {was})", markup=False)


@app.command()
def worker(
    store: StoreOption = None,
    concurrency: Annotated[
        int, typer.Option(min=1, help="How many pipelines to run at once (one process each).")
    ] = 1,
    lease_seconds: Annotated[
        float,
        typer.Option(
            min=0.1, help="How long a claim holds without renewal (takeover after death)."
        ),
    ] = 30.0,
    poll_seconds: Annotated[
        float,
        typer.Option(
            min=0.01,
            help="How long an idle worker waits between looks at the queue (a submission "
            "wakes it sooner).",
        ),
    ] = 1.0,
    exit_when_idle: Annotated[
        bool, typer.Option("--exit-when-idle", help="Stop when nothing is left to claim.")
    ] = False,
    otel: OtelOption = False,
    otel_file: OtelFileOption = None,
) -> None:
    """Claim queued pipelines and run them, holding a lease; SIGTERM interrupts the run at
    work cleanly and gives its ticket back to the queue. With --otel or --otel-file, each
    ticket's run is a trace of its own: a ``ralph ticket`` span parenting its effect spans."""
    url = _queue_url(store)
    if concurrency > 1:
        if otel_file is not None:
            raise _fail(
                "--otel-file takes one worker's spans; with --concurrency, use --otel and "
                "a collector (opentelemetry-instrument ralph worker ...)"
            )
        argv = ["--lease-seconds", str(lease_seconds), "--poll-seconds", str(poll_seconds)]
        argv += ["--exit-when-idle"] if exit_when_idle else []
        argv += ["--otel"] if otel else []
        raise typer.Exit(run_worker_processes(concurrency, url, argv))
    try:
        from pipeline.workers import PARENT_ENV, Worker, exit_with_parent
    except ImportError as error:
        raise _fail(_POSTGRES_HINT) from error
    parent = os.environ.pop(PARENT_ENV, None)
    if parent is not None and parent.isdigit():
        # One of --concurrency N's workers: it must not outlive the process that started it.
        exit_with_parent(int(parent))

    def say(line: str) -> None:
        err.print(message_safe(line), markup=False, soft_wrap=True)

    try:
        with ticket_tracing(otel=otel, otel_file=otel_file) as traced:
            report = Worker(
                url, lease_s=lease_seconds, poll_s=poll_seconds, on_message=say, traced=traced
            ).run(exit_when_idle=exit_when_idle)
    except (StoreError, TracingSetupError) as error:
        raise _fail(str(error)) from error
    say(
        f"claimed {report.claimed}: {report.done} done, {report.failed} failed, "
        f"{report.released} released, {report.lost} taken over, {report.cancelled} cancelled"
    )


_POSTGRES_HINT = (
    "the queue needs PostgreSQL support; install the extra: pip install 'ralph-pipeline[postgres]'"
)


projections = typer.Typer(
    help="Tables computed from the event log (the agent_response_log).", no_args_is_help=True
)
app.add_typer(projections, name="projections")


@projections.command("rebuild")
def rebuild_projections(
    store: StoreArgument = None,
) -> None:
    """Recreate the agent_response_log table from the events alone."""
    with _existing_store(store, read_only=False) as opened:
        rows = opened.rebuild_response_log()
        runs = len(opened.runs())
    out.print(f"Rebuilt agent_response_log in {opened.label}: {rows} rows from {runs} runs")


def main() -> None:
    """Entry point of the ``ralph`` console script."""
    with routed_signals():
        app()
