"""What every ``ralph`` command shares: the typer app, the consoles, the exit statuses, the
options, and opening a workspace or a store for a command."""

from __future__ import annotations

import contextlib
import errno
import functools
from collections.abc import Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from pipeline import PipelineError
from pipeline.app.cli._console import error_console, output_console
from pipeline.app.cli._safe import message_safe
from pipeline.app.cli._source import LogSource, open_source
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import (
    NamedStore,
    StoreError,
    StoreMissingError,
    UnknownRunError,
    open_store_at,
)

if TYPE_CHECKING:
    # Loaded by the helpers that use them: a command imports what it runs (the run driver,
    # the live display and git's history are not what a command reading a run needs).
    from pipeline.app.cli._progress import Display
    from pipeline.app.workspace import Reconciliation, Workspace
    from pipeline.events import PipelineEvent


app = typer.Typer(
    name="ralph",
    help="Run AI coding agents in a durable, replayable plan/develop/review/commit loop.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    # ``ralph --version`` alone is answered before typer loads; this is ``ralph -V COMMAND``.
    if value:
        from pipeline.app.cli import _print_version

        _print_version()
        raise typer.Exit(0)


PLUGINS_WHERE_READ = frozenset(
    {"replay", "events", "status", "topics", "report", "respond", "guide"}
)
"""The commands that read no ``ralph.toml`` (the run readers) or load the agent plugins
where they read one (``respond`` and ``guide``); the callback loads them for every other
command. (Listing the plugins reads the package metadata, which costs a read command more
than its reading.)"""


@app.callback()
def _options(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Run AI coding agents in a durable, replayable plan/develop/review/commit loop."""
    if ctx.invoked_subcommand not in PLUGINS_WHERE_READ:
        _plugin_presets()


@functools.cache
def _plugin_presets() -> None:
    """Register the agent presets of installed plugins (once), before a ``ralph.toml`` that
    names one is read."""
    from pipeline.handlers.agents import AgentPluginError, load_agent_presets

    try:
        load_agent_presets()
    except AgentPluginError as error:
        raise _fail(str(error)) from None


out = output_console()


err = error_console()


def _print(text: str) -> None:
    """``text`` on standard output as it is: never read as markup, never wrapped."""
    out.print(text, markup=False, soft_wrap=True)


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


def _stop(message: object, code: int = USAGE_ERROR, kind: str = "error") -> typer.Exit:
    """Say ``message`` on standard error as a ``kind`` (``error``, ``store error``); the exit
    with status ``code`` to raise."""
    # Messages quote paths, config sections and extras ("[store]", "[otel]"): never markup.
    err.print(f"[bold red]{kind}:[/] {escape(message_safe(str(message)))}", soft_wrap=True)
    return typer.Exit(code)


def _fail(message: str) -> typer.Exit:
    """Say ``message`` as an error; the usage-error exit (:data:`USAGE_ERROR`) to raise."""
    return _stop(message)


def _store_failure(error: Exception) -> typer.Exit:
    """Say what went wrong with the store; exit :data:`STORE_ERROR`, or :data:`USAGE_ERROR`
    for a store or run that was named wrongly (nothing failed: the input was bad)."""
    if isinstance(error, (UnknownRunError, StoreMissingError)) or not isinstance(error, StoreError):
        return _fail(str(error))
    return _stop(error, STORE_ERROR, "store error")


DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""The errors of a write that found no room: a full disk, a spent quota, a file size limit."""


def _os_failure(error: OSError) -> typer.Exit:
    """Say what a failed file operation was; a full disk exits :data:`STORE_ERROR` (as
    everywhere: the store's own writes say so alike), anything else :data:`USAGE_ERROR`."""
    if error.errno not in DISK_FULL_ERRNOS:
        return _fail(str(error))
    where = f"{error.filename}: " if error.filename else ""
    said = f"{where}the disk is full ({error.strerror}): free space, then try again"
    return _stop(said, STORE_ERROR, "store error")


def _warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message_safe(message))}", soft_wrap=True)


def _open(root: Path) -> Workspace:
    from pipeline.app.workspace import open_workspace

    _plugin_presets()  # a command run in its plain shape passes no callback (``_plain``)
    with _said_failures():
        return open_workspace(root)


def _configured_store(workspace: Path, store: str | None) -> str | None:
    """``store`` (``--store``), else the ``[store] url`` of the workspace's ``ralph.toml``
    when it has one, else None (the default store): all that answering or guiding a run, or
    a person's note, needs of the configuration (the run checked its agents and the rest
    when it started)."""
    layout = WorkspaceLayout(root=workspace.resolve())
    if store is not None or not layout.config.is_file():
        return store
    from pipeline.app.workspace import locate_store
    from pipeline.core.config import ConfigError, parse_config

    _plugin_presets()  # the file may name a plugin's agent
    try:
        config = parse_config(layout.config.read_text("utf-8"), str(layout.config))
    except OSError as error:
        raise _fail(f"{layout.config}: cannot read it ({error.strerror})") from error
    except ConfigError as error:
        raise _fail(str(error)) from error
    return locate_store(layout, config.store.url, None)


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
    from pipeline.app.cli._progress import choose_display

    return choose_display(terminal=out.is_terminal, plain=plain, quiet=quiet, json_logs=json_logs)


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


FormatOption = Annotated[LogFormat, typer.Option("--format", help="table or jsonl.")]


class GraphFormat(StrEnum):
    """How ``ralph graph`` draws."""

    MERMAID = "mermaid"
    DOT = "dot"
    SVG = "svg"


@contextlib.contextmanager
def _said_failures() -> Iterator[None]:
    """Expected failures said, with their exit: a store's (:func:`_store_failure`), a file
    operation's (:func:`_os_failure`), and any other of ralph's (a log or store that cannot
    be decoded, a run that cannot start, a note refused) as a usage error (exit 2)."""
    try:
        yield
    except StoreError as error:
        raise _store_failure(error) from error
    except OSError as error:
        raise _os_failure(error) from error
    except PipelineError as error:
        raise _fail(str(error)) from error


@contextlib.contextmanager
def _reading_log(
    source: str | None, run: str | None, workspace: Path | None = None
) -> Iterator[LogSource]:
    """The run's log from ``source``, else from ``workspace``'s (``-C``) default store, else
    from this folder's; a log that cannot be read is a usage error (exit 2)."""
    if source is None and workspace is not None:
        source = str(WorkspaceLayout(root=workspace).store)
    with _said_failures(), open_source(source, run) as log:
        yield log


def lost_runs(layout: WorkspaceLayout, label: str, known: set[str], asked: str | None) -> None:
    """Stop with the store-error exit when a run this workspace started (its saved prompt is
    here) is missing from the store: the store lost its facts (a journal damaged or removed,
    the file replaced), which "no runs yet" would hide."""
    lost = [r for r in layout.started_runs() if r not in known]
    if asked is not None:
        lost = [r for r in lost if r == asked]
    if not lost:
        return
    raise _stop(
        f"{label} holds no record of run {lost[-1]}, which started in this workspace (its "
        f"saved prompt is {layout.saved_prompt(lost[-1])}). If the run was recorded in this "
        "store, the store lost its facts (its journal damaged or removed, or the file "
        "replaced): restore the store from a backup, or start afresh with ralph run.",
        STORE_ERROR,
        "store error",
    )


@contextlib.contextmanager
def _existing_store(location: str | Path | None, *, read_only: bool = True) -> Iterator[NamedStore]:
    """The event store at ``location`` (a path or URL; None: this folder's default), opened
    read-only unless asked; a missing one is a usage error (exit 2), a damaged or unreachable
    one a store error (exit 4)."""
    where = WorkspaceLayout(root=Path()).store if location is None else location
    with _said_failures(), open_store_at(where, must_exist=True, read_only=read_only) as opened:
        yield opened


def _reconciled(
    root: Path, run_id: str, events: Iterable[PipelineEvent], *, events_file: bool = True
) -> Reconciliation | None:
    """The run's log against the git repository at ``root`` (and, with ``events_file``, its
    events file); None when ``root`` is not a git repository."""
    from pipeline.app.workspace import history_of, reconcile, recorded_commits
    from pipeline.handlers.runtime import GitError

    read = list(events)
    try:
        history = history_of(root, run_id, read)
    except GitError:
        return None
    state, recorded = recorded_commits(read)
    layout = WorkspaceLayout(root=root.resolve()) if events_file else None
    return reconcile(run_id, state, recorded, history, layout)
