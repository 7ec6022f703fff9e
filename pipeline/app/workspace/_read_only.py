"""A prompt file an earlier run left read-only (I/O: reads the store).

A run makes the prompt file in its workspace read-only while it works and gives the file its
mode back when it ends. A run that never finished leaves the file read-only, and the next run
would then give back that read-only mode: it looks the earlier run up in the store instead,
and gives back the mode the file had before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.engine import load_state
from pipeline.handlers.store import EventStore

__all__ = ["left_read_only"]

_RECENT_RUNS = 20
"""How many of the store's latest runs a new run looks through for one that left its prompt
file read-only."""


def left_read_only(
    store: EventStore, path: Path, on_warning: Callable[[str], None] | None
) -> int | None:
    """The mode ``path`` had before an earlier run that never finished made it read-only
    (None when no such run holds it): a new run gives that mode back when it ends. Only the
    latest runs are looked at: a shared store may hold thousands, and the run that left the
    file read-only is one of the last in its workspace."""
    target = path.resolve()
    for summary in reversed(store.runs()[-_RECENT_RUNS:]):
        state, _ = load_state(store, summary.run_id)
        protected = state.ledger.protected_prompt
        if protected is None or Path(protected.path).resolve() != target:
            continue
        if on_warning is not None:
            on_warning(
                f"{path} was left read-only by run {summary.run_id}, which never finished; "
                f"this run gives it back its mode {protected.original_mode:#o} when it ends "
                f"(run {summary.run_id} can no longer be resumed safely once this one changed "
                "the work tree)"
            )
        return protected.original_mode
    return None
