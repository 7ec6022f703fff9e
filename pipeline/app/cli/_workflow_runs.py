"""``ralph run --preset`` and the resume of a preset's run (I/O).

A preset's run is a plain run of the workspace opened with the preset's workflow over its
``ralph.toml`` (``pipeline.app.workflows.apply_preset``): ``RunStarted`` records the policy and the
digest of that configuration like any other. Before it starts, the preset is kept under that
digest, so that ``ralph resume`` finds it again (``pipeline.app.workflows.recall_workflow``).

``--preset a,b`` is a chain: ``a`` runs; when it completes (exit 0, ``completed``), ``b``
starts as a new run in the same workspace, its prompt the task ``a`` had plus a handoff
section about ``a``'s run; the chain stops at the first run that does not complete, with that
run's exit status. Every workflow's configuration is checked before the first run starts. A
chain is not recorded as such: ``ralph resume`` resumes the stopped run alone, and the rest of
the chain is started again by hand (the stop message gives the command).
"""

from __future__ import annotations

from pathlib import Path

import typer
from attrs import frozen

from pipeline import PipelineError
from pipeline.app.cli._app import _fail, _said_failures, _store_failure, err, out
from pipeline.app.cli._driving import (
    _drive,
    _finish,
    _ready_to_start,
    _Watching,
    _with_options,
)
from pipeline.app.cli._progress import Display
from pipeline.app.workflows import (
    Preset,
    PresetError,
    config_with_preset,
    handoff_section,
    load_preset,
    recall_workflow,
    remember_workflow,
)
from pipeline.app.workspace import Workspace, open_store, open_workspace
from pipeline.events import RunId, RunStarted
from pipeline.handlers.runtime import PromptSource
from pipeline.handlers.store import StoreError

__all__ = ["_WorkflowStart", "open_with_preset", "run_chain", "with_recorded_workflow"]


@frozen(kw_only=True)
class _WorkflowStart:
    """What ``ralph run`` was asked for besides the presets: the task, the budget, the store
    and whether uncommitted changes may stay."""

    prompt: str | None
    prompt_file: Path | None
    max_iterations: int | None
    store: str | None
    allow_dirty: bool
    tests_editable: bool = False


def _presets(value: str) -> tuple[Preset, ...]:
    """The presets ``--preset`` names, comma separated; exit 2 for a name that is empty or
    unknown (the error lists the known ones)."""
    names = [name.strip() for name in value.split(",")]
    if not all(names):
        raise _fail(f"--preset {value!r}: a name is empty (give NAME, or NAME,NAME for a chain)")
    with _said_failures():
        return tuple(load_preset(name) for name in names)


def open_with_preset(root: Path, preset: Preset) -> Workspace:
    """The workspace at ``root`` with ``preset``'s workflow over its ``ralph.toml``; exit 2
    for any mistake, named as for the file itself (``... ralph.toml with the preset NAME``)."""
    resolved = root.resolve()
    if not resolved.is_dir():
        raise _fail(f"{resolved} is not a directory")
    with _said_failures():
        merged, source = config_with_preset(resolved, preset)
        return open_workspace(root, config_text=merged, config_source=source)


def _note(display: Display, message: str) -> None:
    """Say how the workflows go: on stdout, or on stderr when stdout carries JSON lines."""
    (err if display is Display.JSON else out).print(message, markup=False, soft_wrap=True)


def _remember(opened: Workspace, preset: Preset) -> None:
    """Keep the preset for a resume of the run about to start; exit 2 when it cannot be kept
    (a resume would then follow the wrong workflow)."""
    try:
        remember_workflow(opened.layout, opened.config_digest, preset)
    except OSError as error:
        raise _fail(
            f"cannot keep the preset {preset.name} for a resume in "
            f"{opened.layout.state_dir}: {error}"
        ) from error


def _handed_on(opened: Workspace, store: str | None, preset: Preset, run_id: str) -> PromptSource:
    """The prompt of the run after ``run_id`` in a chain: the task as that run had it, and
    the handoff section about it."""
    try:
        task = opened.layout.saved_prompt(run_id).read_text("utf-8")
        with open_store(opened, store) as events:
            section = handoff_section(preset.name, run_id, events.read(RunId(run_id)))
    except StoreError as error:
        raise _store_failure(error) from error
    except (PipelineError, OSError, UnicodeDecodeError) as error:
        raise _fail(f"cannot hand run {run_id} on to the next workflow: {error}") from error
    return PromptSource(text=task.rstrip("\n") + "\n" + section)


def run_chain(root: Path, value: str, start: _WorkflowStart, watching: _Watching) -> typer.Exit:
    """Run the presets ``value`` names (``--preset``) one after the other in the workspace at
    ``root``, as the module's docstring says; the exit of the last run that ran."""
    presets = _presets(value)
    # Every workflow's configuration is checked before anything runs.
    opened_all = [
        _with_options(
            open_with_preset(root, preset),
            max_iterations=start.max_iterations,
            tests_editable=start.tests_editable,
        )
        for preset in presets
    ]
    source, kept = _ready_to_start(
        opened_all[0], start.prompt, start.prompt_file, start.store, allow_dirty=start.allow_dirty
    )
    finished = typer.Exit(0)
    for index, (preset, opened) in enumerate(zip(presets, opened_all, strict=True)):
        if index:
            # What an earlier workflow left uncommitted (a read-only one's report) stays, and
            # stays out of this run's commits.
            source, kept = _ready_to_start(opened, source, None, start.store, allow_dirty=True)
        of = f" ({index + 1} of {len(presets)})" if len(presets) > 1 else ""
        _note(watching.display, f"Workflow {preset.name}{of}: {preset.description}")
        _remember(opened, preset)
        result, label = _drive("run", opened, source, watching, start.store, kept)
        finished = _finish(opened, result, watching.display, label)
        rest = ",".join(later.name for later in presets[index + 1 :])
        if not rest:
            break
        termination = result.state.termination
        if termination is None or not termination.is_success:
            _note(
                watching.display,
                f"The chain stops: {preset.name} did not complete, so {rest} did not run. "
                f"`ralph resume` goes on with run {result.run_id} only; once it completes, "
                f"start the rest: ralph run --preset {rest}",
            )
            break
        source = _handed_on(opened, start.store, preset, result.run_id)
    return finished


def with_recorded_workflow(
    root: Path, opened: Workspace, run_id: str | None, store: str | None, display: Display
) -> Workspace:
    """``opened`` as its ``ralph.toml`` has it, or, when the run to resume (``run_id``, None:
    the latest) started with a preset, the workspace with that preset's workflow again."""
    try:
        with open_store(opened, store) as events:
            chosen = events.choose_run(run_id)
            first = next(iter(events.read(chosen)), None)
    except (PipelineError, OSError):
        return opened  # the resume itself says what is wrong with the store or the run
    if not isinstance(first, RunStarted):
        return opened
    try:
        preset = recall_workflow(opened.layout, first.config_digest)
    except (PresetError, OSError) as error:
        raise _fail(
            f"run {chosen} started with a workflow preset, and its record cannot be read: {error}"
        ) from error
    if preset is None:
        return opened
    _note(display, f"Workflow {preset.name}: the preset run {chosen} started with")
    return open_with_preset(root, preset)
