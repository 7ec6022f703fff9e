"""``ralph replay``, ``events``, ``status``, ``topics``, ``report`` and ``graph``: the
commands that read a run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import attrs
import orjson
import typer
from rich.markup import escape

from pipeline.app.cli._app import (
    FormatOption,
    LogFormat,
    ReadWorkspaceOption,
    RunOption,
    SourceArgument,
    StoreOption,
    WorkspaceOption,
    _existing_store,
    _fail,
    _reading_log,
    _reconciled,
    _warn,
    app,
    err,
    lost_runs,
    out,
)
from pipeline.app.cli._describe import event_line
from pipeline.app.cli._follow import category_filter, follow
from pipeline.app.cli._render import state_table
from pipeline.app.cli._safe import terminal_safe
from pipeline.app.cli._source import LogSource
from pipeline.core.serialization import (
    CONVERTER,
    CheckpointError,
    checkpoint_state,
    encode_event,
    encode_state,
)
from pipeline.core.state import Phase, PipelineState
from pipeline.events import (
    CATEGORIES,
    PatternError,
    PipelineEvent,
    check_pattern,
    topic_matches,
)
from pipeline.handlers.runtime import WorkspaceLayout, note_written
from pipeline.handlers.store import (
    UnknownRunError,
)
from pipeline.reducers import reduce
from pipeline.reducers.views import gate_runs, sandbox_view, screen_runs, timeline, topic_log


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
    with _reading_log(source, run, workspace) as log:
        if verify and log.run_id is None:
            raise _fail(f"--verify checks a store's checkpoints; {log.label} has none")
        state, problems, checked = _fold_and_check(log, until, verify)
        if verify and source is None and log.run_id is not None and until is None:
            # The workspace's own store: its run's commits and events file are here.
            found = _reconciled(workspace or Path(), log.run_id, log.events())
            problems += [] if found is None else list(found.problems)
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


def _print_event(number: int, event: PipelineEvent, output: LogFormat) -> None:
    wire = encode_event(event)
    if output is LogFormat.JSONL:
        sys.stdout.write(wire.decode() + "\n")
        sys.stdout.flush()  # a reader of a followed log sees each event as it comes
    else:
        out.print(event_line(number, orjson.loads(wire)), soft_wrap=True, markup=False)


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
        root = workspace or Path()  # as _reading_log reads -C's store without --follow
        location = str(WorkspaceLayout(root=root).store) if source is None else source
        if location.endswith(".jsonl"):
            raise _fail(f"--follow reads a store; {location} is a finished run's log")
        # A store's failure or an undecodable fact is said by _existing_store.
        with _existing_store(location) as store:
            try:
                for number, event in follow(store, store.choose_run(run)):
                    if wanted(event):
                        _print_event(number, event, output)
            except KeyboardInterrupt:
                raise typer.Exit(130) from None
        return
    with _reading_log(source, run, workspace) as log:
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
    layout = WorkspaceLayout(root=workspace)
    location = store if store is not None else layout.store
    if store is None and not layout.store.is_file():
        lost_runs(layout, str(layout.store), set(), run)
    with _existing_store(location) as events:
        try:
            run_id = events.choose_run(run)
        except UnknownRunError as error:
            if store is None:
                lost_runs(layout, events.label, set(error.known), run)
            raise _fail(str(error)) from error
        from pipeline.engine import load_state  # the durable loop's module: status's alone

        state, _checkpoint = load_state(events, run_id, _warn)
        # The state counts a screen's hits only and keeps nothing of the sandbox: their rows
        # are read from the log (read once).
        read = None if as_json else tuple(events.read(run_id))
        screened = state.run is not None and state.run.loop.screens
        screens = screen_runs(read) if read is not None and screened else None
        sandbox = sandbox_view(read) if read is not None else None
        # Only the workspace's own store is known to hold runs of this repository.
        log = events.read(run_id) if read is None else read
        found = _reconciled(workspace, run_id, log, events_file=False) if store is None else None
    if found is not None and found.missing:
        # Count only the commits git still has, and say which it lost.
        kept = state.ledger.commits - len(found.missing)
        state = attrs.evolve(state, ledger=attrs.evolve(state.ledger, commits=max(kept, 0)))
        for problem in found.problems:
            _warn(problem)
    if as_json:
        sys.stdout.write(encode_state(state).decode() + "\n")
        return
    out.print(state_table(state, title=f"Run {run_id}", screens=screens, sandbox=sandbox))
    if state.phase is Phase.INTERRUPTED:
        out.print(f"Resume it: ralph resume {run_id}")


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
    with _reading_log(source, run, workspace) as log:
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
    retries, fallbacks, malformed lines and scope violations marked, its screens of its
    changes (a mark on the gates lane and a table of every hit and what it did), its gate
    runs (a lane and a table: status, exit, the action a failure took, the log), its sandbox
    (on or off and why, the endpoints agents may reach, the variables withheld, by name, and
    the connections refused), and its final state."""
    if html is None and markdown is None:
        raise _fail("say where the report goes: --html FILE and/or --markdown FILE")
    from pipeline.app.cli._report import html_report, markdown_report
    from pipeline.app.cli._report_sandbox import sandbox_summary

    with _reading_log(source, run, workspace) as log:
        read = tuple(log.events())
    drawn, gates, screens = timeline(read), gate_runs(read), screen_runs(read)
    sandbox = sandbox_view(read)
    title = f"ralph run {drawn.final.run.run_id if drawn.final.run else log.label}"
    outputs = [(html, html_report), (markdown, markdown_report)]
    for target, render in outputs:
        if target is None:
            continue
        text = render(drawn, title, gates, screens, sandbox)
        if str(target) == "-":
            sys.stdout.write(text)
            continue
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as error:
            raise _fail(f"cannot write {target}: {error.strerror}") from error
        # ralph's own output: the next run neither refuses the work tree for it nor commits it.
        note_written(WorkspaceLayout(root=workspace or Path()), target)
        ran = f", {len(gates)} gate runs" if gates else ""
        ran += f", {len(screens)} screen{'s' if len(screens) != 1 else ''}" if screens else ""
        ran += f", {sandbox_summary(sandbox)}" if sandbox.recorded else ""
        out.print(f"Wrote {target} ({len(drawn.bars)} invocations{ran})", markup=False)
