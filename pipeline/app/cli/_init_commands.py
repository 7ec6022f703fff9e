"""``ralph init``: a starter ``ralph.toml``, with a workflow preset's loop and hats
(``--preset``), or translated from a ralph-orchestrator ``ralph.yml`` (``--from``). An existing
``ralph.toml`` is replaced only with ``--force``, and a file that would not parse is never
written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from pipeline.app.cli._app import WorkspaceOption, _fail, _print, _warn, app, out
from pipeline.app.cli._init import EXAMPLE_AGENT, installed_presets, looked_for, write_starter
from pipeline.app.cli._safe import terminal_safe
from pipeline.app.workflows import PresetError, load_preset
from pipeline.app.workspace import install_hints, missing_module
from pipeline.core.config import (
    ConfigError,
    parse_config,
    topology_problems,
    translate_orchestrator_config,
)


def _exists(path: Path) -> typer.Exit:
    return _fail(f"{path} exists already; edit it, or replace it with ralph init --force")


def _translation_refused(target: Path, source: Path) -> str:
    """Why ``--from`` writes nothing over an existing ``ralph.toml``, and what to do: a
    translation never replaces a file (``--force`` replaces a starter only)."""
    return (
        f"{target} exists already: a translation never replaces it (not even with --force); "
        f"move it away, then run ralph init --from {source} again"
    )


def _say_if_no_repository(workspace: Path) -> None:
    """Warn when ``workspace`` is no git repository: ``ralph run`` refuses to start there
    (ralph commits each iteration), and the starter does not make one."""
    from pipeline.handlers.runtime import GitError, run_git

    try:
        run_git(workspace.resolve(), "rev-parse", "--is-inside-work-tree")
    except GitError:
        _warn(f"{workspace.resolve()} is not a git repository, which ralph run needs: git init")


def _no_agent_found() -> None:
    """Say which agent CLIs were looked for, how to install one, and the other way: an agent
    of your own, with the example that ships."""
    _warn(f"no agent CLI found on PATH (looked for {', '.join(looked_for())})")
    out.print("Install one, then add it to [agents] and [chains] in ralph.toml:", markup=False)
    for hint in install_hints().values():
        out.print(f"  {hint}", markup=False)
    _print(
        f"Or run a program of your own as the agent (docs/your-own-agent.md); the example "
        f"{EXAMPLE_AGENT} is in ralph.toml, commented."
    )


def _translated(workspace: Path, source: Path) -> None:
    """Write ``ralph.toml`` in ``workspace`` from the ralph-orchestrator file ``source`` (when
    the translation parses: a topology error is refused like any configuration error); say
    what was not translated and the topology checks' warnings."""
    target = workspace / "ralph.toml"
    if target.exists():
        raise _fail(_translation_refused(target, source))
    try:
        yaml_text = source.read_text("utf-8")
    except FileNotFoundError as error:
        raise _fail(f"{source}: not found") from error
    except (OSError, UnicodeDecodeError) as error:
        raise _fail(f"cannot read {source}: {error}") from error
    try:
        translation = translate_orchestrator_config(yaml_text, str(source))
        config = parse_config(translation.toml_text, f"{target} (translated from {source})")
    except ConfigError as error:
        raise _fail(str(error)) from error
    try:
        with target.open("x", encoding="utf-8") as handle:
            handle.write(translation.toml_text)
    except FileExistsError as error:
        raise _fail(_translation_refused(target, source)) from error
    except OSError as error:
        raise _fail(f"cannot write {target}: {error.strerror}") from error
    _print(terminal_safe(f"Wrote {target} from {source}"))
    coordinator = config.loop.coordinator
    _print(
        f"ralph-orchestrator's coordinator is the hat {coordinator!r}: it takes the topics "
        "no other hat triggers on, and may complete the run."
    )
    for line in translation.notes:
        _print(f"Note: {terminal_safe(line)}")
    if translation.untranslated:
        out.print(f"Not translated ({len(translation.untranslated)}):", markup=False)
        for line in translation.untranslated:
            # Key paths come from the file: a control character in one is shown, not obeyed.
            _print(f"  {terminal_safe(line)}")
    # A topology error is a configuration error (nothing was written); warnings are said.
    for problem in topology_problems(config.loop_policy()):
        _warn(f"topology: {problem.message}")


@app.command()
def init(
    workspace: WorkspaceOption = Path(),
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset", help="Write this workflow preset's loop and hats in (ralph presets)."
        ),
    ] = None,
    from_file: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Translate this ralph-orchestrator ralph.yml instead of writing a starter.",
            dir_okay=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing ralph.toml (starter only).")
    ] = False,
) -> None:
    """Write a commented starter ralph.toml for the agent CLIs installed here."""
    if preset is not None and from_file is not None:
        raise _fail("give --preset or --from, not both")
    if from_file is not None:
        if force:
            raise _fail(
                "--force replaces a starter only, never with a translation: move ralph.toml "
                f"away, then run ralph init --from {from_file} again"
            )
        _translated(workspace, from_file)
        return
    try:
        workflow = load_preset(preset) if preset is not None else None
        path, validate = write_starter(workspace, workflow, force=force)
    except (PresetError, ConfigError) as error:
        raise _fail(str(error)) from error
    except FileExistsError as error:
        raise _exists(workspace / "ralph.toml") from error
    except OSError as error:
        raise _fail(f"cannot write {workspace / 'ralph.toml'}: {error.strerror}") from error
    found = installed_presets()
    out.print(f"Wrote {path}" + (f" (agents found: {', '.join(found)})" if found else ""))
    _say_if_no_repository(workspace)
    if not found:
        _no_agent_found()
    if workflow is not None:
        out.print(f"Workflow: {workflow.name} ({workflow.description})", markup=False)
    if validate is not None:
        out.print(f"Final check: {' '.join(validate)} (validate in ralph.toml)", markup=False)
        module = missing_module(validate, workspace.resolve(), os.environ)
        if module is not None:
            # Else every final check fails, and the run goes round until a breaker stops it.
            _warn(
                f"{validate[0]} has no module {module!r}: install it "
                f"({validate[0]} -m pip install {module}), or correct validate in ralph.toml"
            )
    else:
        _warn("no test command found here: set validate in ralph.toml to your tests")
    steps = [] if found else ["name your agent in [chains] default"]
    if not (workspace / "PROMPT.md").exists():
        steps.append("describe the task in PROMPT.md")
    # ralph doctor says what else would make the first run fail, before an agent starts.
    steps += ["check with `ralph doctor`", "then `ralph run`"]
    out.print(f"Next: {', '.join(steps)}.", markup=False)
