"""``ralph worktrees merge``: land completed runs' branches on a target branch through the
merge queue (replayed onto it, gated, moved by compare-and-swap), and finish what a killed
integrator left under way."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from pipeline import PipelineError
from pipeline.app.cli._app import STORE_ERROR, USAGE_ERROR, WorkspaceOption, _fail, _stop, err
from pipeline.app.cli._driving import Warned
from pipeline.app.cli._faults import FaultError, faulting
from pipeline.app.cli._safe import message_safe
from pipeline.app.cli._worktree_commands import worktrees_app
from pipeline.app.workspace import Landing, LandingInterruptedError, WorktreeError, merge_worktrees
from pipeline.core.state import Integration, IntegrationStatus
from pipeline.engine import Interruption, Observers
from pipeline.handlers.integration import WorkTreeBehindError
from pipeline.handlers.runtime import GitError
from pipeline.handlers.store import StoreError

FAILED = 1
"""The exit status when an integration failed (a gate, a lost commit, git)."""

CONFLICTED = 3
"""The exit status when a replay met conflicts: a person resolves them (as a run that needs
one exits 3)."""

INTERRUPTED = 130
"""The exit status when SIGINT or SIGTERM stopped a landing (as an interrupted run's)."""

_AGAIN = "run ralph worktrees merge again: it goes on from where the run's log stands."

_RESTORED_NAMED = 8
"""Restored files a landing's line names; the rest are counted."""


@worktrees_app.command("merge")
def merge_command(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="The worktrees to land, in this order (name, branch or folder)."),
    ] = None,
    into: Annotated[
        str | None,
        typer.Option("--into", help="The branch to land on (default: the workspace's own)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    workspace: WorkspaceOption = Path(),
) -> None:
    """Land each named worktree's completed run on the target branch: its commits replayed
    onto the target's head, the run's final gates run on the result (with the target's tests
    and test configuration, unless the run was made with --tests-editable), then the target
    moved there (never if it moved meanwhile). A conflict or a failed gate leaves the branch and its
    worktree as they were. First goes on with any integration a killed merge left under way;
    without names, does only that. Exits 0 when all landed, 3 on a conflict, 1 on a failure."""
    raise land(workspace, names or [], into, as_json=as_json)


def land(root: Path, names: list[str], into: str | None, *, as_json: bool = False) -> typer.Exit:
    """Land the named worktrees through the merge queue (``ralph worktrees merge``, and
    ``ralph run --merge`` after its run), each outcome said as it ends; the exit to raise."""
    shown: list[Landing] = []

    def report(landing: Landing) -> None:
        shown.append(landing)
        if as_json:
            sys.stdout.write(json.dumps(_row(landing)) + "\n")
            sys.stdout.flush()
        else:
            err.print(escape(message_safe(_said(landing))), soft_wrap=True)

    interruption = Interruption()
    try:
        # The fault tests' kill -9 seam, and the warnings on standard error.
        observer = Observers(Warned(), *faulting(os.environ))
        with interruption.on_signals():
            merge_worktrees(
                root,
                names,
                into=into,
                on_landing=report,
                observer=observer,
                interruption=interruption,
            )
    except (WorktreeError, FaultError) as error:
        raise _fail(str(error)) from error
    except LandingInterruptedError as stopped:
        err.print(f"Stopped: {escape(message_safe(str(stopped)))}.", soft_wrap=True)
        return typer.Exit(INTERRUPTED)
    except StoreError as error:
        # A full disk, a store gone: the facts stored stay, the next merge goes on from them.
        again = f"Once the store can be written again (free space), {_AGAIN}"
        return _stop(f"{error}\n{again}", STORE_ERROR, "store error")
    except WorkTreeBehindError as error:
        # The message says what the person does first; running the merge again alone would
        # stop at the same place.
        return _stop(error, FAILED)
    except (GitError, PipelineError, OSError) as error:
        return _stop(
            f"{error}\nDeal with the cause (a full disk: free space), then {_AGAIN}", FAILED
        )
    if not shown and not as_json:
        err.print("Nothing to merge: name a worktree (ralph worktrees list).", markup=False)
        if names:
            return typer.Exit(USAGE_ERROR)
    statuses = {landing.integration.status for landing in shown}
    if IntegrationStatus.FAILED in statuses:
        return typer.Exit(FAILED)
    return typer.Exit(CONFLICTED if IntegrationStatus.CONFLICTED in statuses else 0)


def _said(landing: Landing) -> str:
    now, worktree = landing.integration, landing.worktree
    match now.status:
        case IntegrationStatus.LANDED:
            head = (now.head or "")[:12]
            resolved = (
                f"; {now.resolved_by} resolved the conflicts in {', '.join(now.paths)}"
                if now.resolved_by is not None
                else ""
            )
            return (
                f"Landed {now.branch} on {now.target} at {head} (run {landing.run_id}{resolved})"
                f"{_pinning(now)}."
            )
        case IntegrationStatus.CONFLICTED:
            tried = f", {', '.join(now.resolvers)} could not resolve it" if now.resolvers else ""
            return (
                f"Conflict: {now.branch} does not replay onto {now.target} "
                f"({', '.join(now.paths)}{tried}). Nothing moved. Resolve it in {worktree.path} "
                f"(git rebase {now.target}), then run ralph worktrees merge {worktree.name} again."
            )
        case IntegrationStatus.FAILED:
            return f"Not merged: {now.branch}: {now.reason}. Nothing moved."
        case _:
            return f"{now.branch}: {now.status.value}."


def _pinning(now: Integration) -> str:
    """How the gates on the replayed head were pinned, for a landing's line."""
    if now.pinned is None:
        return ""
    said = f"; its gates ran pinned to {now.target}'s {now.pinned[:12]}"
    if not now.restored:
        return said
    shown = ", ".join(now.restored[:_RESTORED_NAMED])
    more = len(now.restored) - _RESTORED_NAMED
    shown += f" and {more} more" if more > 0 else ""
    return f"{said}, with {now.target}'s {shown} (the branch's changes to them not used)"


def _row(landing: Landing) -> dict[str, object]:
    now = landing.integration
    return {
        "name": landing.worktree.name,
        "branch": now.branch,
        "run": landing.run_id,
        "target": now.target,
        "status": now.status.value,
        "head": now.head,
        "paths": list(now.paths),
        "reason": now.reason,
        "pinned": now.pinned,
        "restored": list(now.restored),
    }
