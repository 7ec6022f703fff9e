"""``ralph status`` on the workspace's SQLite store, kept lean: the table comes from the
store's ``run_status`` projection (the run's status rows as of its head, written with the
events, see ``pipeline.handlers.store._summaries``), printed through rich without typer, the
events or the converter, as ``ralph runs`` is (:mod:`pipeline.app.cli._runs_quick`).

It answers only where it gives exactly what the full command gives: the plain shapes
(``ralph status`` and ``ralph status --run RUN``) on the workspace's own store, a run whose
status is current and whole (begun after the projection, at its head), whose log is its
hash chain unbroken (checked on the stored bytes, as the full command's read checks it),
whose newest checkpoint the fold would use, whose log holds nothing the rows leave out (a
screen or a refused connection, read from the log; a fork) and bears out its parts (every
sandbox check and commit in them: facts appended by a store that kept no status leave
them stale; the facts are told by their tags, read with the chain). The commits the run
recorded are checked against git as the full command checks them; one git lost is left to
the full command, which says so. Anything else returns None and the full command runs, folding the
log as before.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import orjson

from pipeline.app.cli._lean_store import (
    LOG,
    SCHEMA_READ,
    chain_holds,
    checkpoint_at,
    named_store,
    snapshot,
)
from pipeline.app.cli._plain import PLAIN_SHAPES, arguments

# ``typing`` is imported for the type checker only, as in ``pipeline.app.cli._emit``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, TypeAlias

__all__ = [
    "ASIDE",
    "COMMIT_CREATED",
    "SANDBOX_CHECKED",
    "Parts",
    "main",
    "run_parts",
    "status_parts",
]

ASIDE: Final = frozenset(
    {"agent.connection_refused", "validation.changes_screened", "lifecycle.run_forked"}
)
"""The facts whose rows the status leaves out (refused connections and screens, read from
the log; a fork's commits, checked against its sources' history): a log that holds one is
shown by the full command (a test holds the tags to the events')."""
SANDBOX_CHECKED: Final = "lifecycle.sandbox_checked"
COMMIT_CREATED: Final = "commit.commit_created"

Parts: TypeAlias = "tuple[str, int, list[tuple[str, int, str]], dict[str, tuple[int, int]]]"
"""A run, its head, its ``run_status`` rows (part, sequence, text) and, by the tag of each
fact its log holds, how many and the sequence of the last."""


def run_parts(path: Path, asked: str | None) -> Parts | None:
    """The run ``asked`` (None: the latest) and what :data:`Parts` says of it, read in one
    snapshot; None when the store cannot be read so (a schema this path does not know), the
    run is not there, its log is not its hash chain unbroken (damage, or a log begun before
    the chain: the full command reads it), or its newest checkpoint does not verify."""

    def read(db: sqlite3.Connection) -> Parts | None:
        runs = db.execute("SELECT run_id, head, tip FROM runs ORDER BY started_at, rowid")
        chosen = [r for r in runs if r[0] == asked] if asked is not None else runs.fetchall()[-1:]
        if not chosen:
            return None  # no run, or not this one: the full command says which there are
        run_id, head, tip = chosen[0]
        facts: dict[str, tuple[int, int]] = {}

        def count(sequence: int, tag: str, _version: int, _body: bytes | str) -> bool:
            facts[tag] = (facts.get(tag, (0, 0))[0] + 1, sequence)
            return True

        if not chain_holds(run_id, db.execute(LOG, (run_id, 0)), head, tip, count):
            return None
        if checkpoint_at(db, run_id) is None:
            return None
        found = db.execute(
            "SELECT part, sequence, text FROM run_status WHERE run_id = ?", (run_id,)
        ).fetchall()
        return str(run_id), int(head), found, facts

    return snapshot(path, SCHEMA_READ, read)


def status_parts(path: Path, asked: str | None) -> tuple[str, dict[str, str]] | None:
    """The run ``asked`` (None: the latest) and its ``run_status`` parts by name; None when
    :func:`run_parts` is, or its parts are not current and whole: the state behind the
    head, the run begun before the table, or a part the log does not bear out (facts
    appended by a store that kept no status: a sandbox check or a commit not in the parts,
    a fact of :data:`ASIDE`)."""
    read = run_parts(path, asked)
    if read is None:
        return None
    run_id, head, found, facts = read
    at = {part: sequence for part, sequence, _text in found}
    checked = facts.get(SANDBOX_CHECKED)
    if (
        at.get("state") != head
        or "begun" not in at
        or ASIDE & facts.keys()
        or at.get("sandbox") != (None if checked is None else checked[1] + 1)
        or sum(part.startswith("commit ") for part in at) != facts.get(COMMIT_CREATED, (0,))[0]
    ):
        return None
    return run_id, {part: text for part, _sequence, text in found}


def _commits_kept(run_id: str, parts: dict[str, str]) -> bool:
    """Whether every commit the run recorded is on HEAD, by its sha or by the effect its
    trailer names, as reconciliation finds them (false when git cannot tell)."""
    recorded = {
        part.removeprefix("commit "): effect
        for part, effect in parts.items()
        if part.startswith("commit ")
    }
    if not recorded:
        return True
    from functools import partial

    from pipeline.handlers.runtime._gitcmd import GitError, effect_commits, run_git

    try:
        found = effect_commits(partial(run_git, Path()), f"{run_id}:")
    except GitError:
        return False
    shas, effects = {sha for sha, _ in found}, {effect for _, effect in found}
    return all(sha in shas or effect in effects for sha, effect in recorded.items())


def main(argv: list[str]) -> int | None:
    """Print the status of the run ``ralph status ARGV`` names and return 0, or return None
    (printing nothing) when the full command must answer."""
    given = arguments(PLAIN_SHAPES["status"], argv)
    # --json prints the state, and RALPH_STORE names another store: the full command's.
    if given is None or "as_json" in given or "RALPH_STORE" in os.environ:
        return None
    asked = given.get("run")
    path = named_store(None)
    if path is None or not path.is_file():
        return None
    found = status_parts(path, asked if isinstance(asked, str) else None)
    if found is None:
        return None
    run_id, parts = found
    if not _commits_kept(run_id, parts):
        return None
    rows = [tuple(row) for row in orjson.loads(parts["state"])]
    if "sandbox" in parts:
        # Where status_rows puts the sandbox's rows: after the context's, before the resumes.
        at = next(i for i, (what, _) in enumerate(rows) if what == "resumes")
        rows[at:at] = [("sandbox", parts["sandbox"]), ("refused connections", "-")]
    from pipeline.app.cli._console import output_console, text_table

    # The table pipeline.app.cli._render.state_table draws (a test holds the two outputs equal).
    out = output_console()
    out.print(text_table(("what", "value"), rows, f"Run {run_id}", pairs=True))
    if dict(rows)["phase"] == "interrupted":
        out.print(f"Resume it: ralph resume {run_id}")
    return 0
