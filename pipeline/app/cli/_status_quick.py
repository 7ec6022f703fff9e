"""``ralph status`` on the workspace's SQLite store, kept lean: the table comes from the
store's ``run_status`` projection (the run's status rows as of its head, written with the
events, see ``pipeline.handlers.store._summaries``), printed through rich without typer, the
events or the converter, as ``ralph runs`` is (:mod:`pipeline.app.cli._runs_quick`).

It answers only where it gives exactly what the full command gives: the plain shapes
(``ralph status`` and ``ralph status --run RUN``) on the workspace's own store, a run whose
status is current and whole (begun after the projection, at its head), whose log is its
hash chain unbroken (checked on the stored bytes, as the full command's read checks it),
whose newest checkpoint verifies, and whose log holds nothing the rows leave out (a screen
or a refused connection, read from the log; a fork). The commits the run recorded are
checked against git as the full command checks them; one git lost is left to the full
command, which says so. Anything else returns None and the full command runs, folding the
log as before.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import orjson

from pipeline.app.cli._lean_store import LOG, SCHEMA_READ, chain_holds, named_store, snapshot
from pipeline.app.cli._plain import PLAIN_SHAPES, arguments

# ``typing`` is imported for the type checker only, as in ``pipeline.app.cli._emit``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

__all__ = ["CHECKPOINT_FORMAT", "EFFECT_TRAILER", "main", "run_parts", "status_parts"]

EFFECT_TRAILER: Final = "Ralph-Effect"
"""The trailer naming the effect a commit answered (a test holds it to the runtime's)."""

CHECKPOINT_FORMAT: Final = 5
"""The checkpoint format this release reads (a test holds it to
``pipeline.core.serialization``'s)."""

_FALLBACK: Final = frozenset({"refused", "screened", "forked"})
"""The parts that say the log holds what the rows leave out."""


def run_parts(path: Path, asked: str | None) -> tuple[str, int, list[tuple[str, int, str]]] | None:
    """The run ``asked`` (None: the latest), its head and its ``run_status`` rows (part,
    sequence, text), read in one snapshot; None when the store cannot be read so (a schema
    this path does not know), the run is not there, its log is not its hash chain unbroken
    (damage, or a log begun before the chain: the full command reads it), or its newest
    checkpoint does not verify."""

    def read(db: sqlite3.Connection) -> tuple[str, int, list[tuple[str, int, str]]] | None:
        runs = db.execute("SELECT run_id, head, tip FROM runs ORDER BY started_at, rowid")
        chosen = [r for r in runs if r[0] == asked] if asked is not None else runs.fetchall()[-1:]
        if not chosen:
            return None  # no run, or not this one: the full command says which there are
        run_id, head, tip = chosen[0]
        if not chain_holds(run_id, db.execute(LOG, (run_id,)), head, tip):
            return None
        newest = db.execute(
            "SELECT sequence, format_version, checksum, body FROM checkpoints "
            "WHERE run_id = ? ORDER BY sequence DESC LIMIT 1",
            (run_id,),
        ).fetchone()
        if newest is not None and not _checkpoint_verifies(*newest):
            return None
        found = db.execute(
            "SELECT part, sequence, text FROM run_status WHERE run_id = ?", (run_id,)
        ).fetchall()
        return str(run_id), int(head), found

    return snapshot(path, SCHEMA_READ, read)


def _checkpoint_verifies(sequence: int, version: int, checksum: str, body: bytes) -> bool:
    """Whether the checkpoint passes the checks ``pipeline.engine.load_state`` makes before
    it decodes one (its format, its checksum, the events it claims to cover): one that
    fails is reported by the full command, which folds the log instead."""
    if version != CHECKPOINT_FORMAT or hashlib.sha256(body).hexdigest() != checksum:
        return False
    try:
        state = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(state, dict) and state.get("sequence") == sequence


def status_parts(path: Path, asked: str | None) -> tuple[str, dict[str, str]] | None:
    """The run ``asked`` (None: the latest) and its ``run_status`` parts by name; None when
    :func:`run_parts` is, or its parts are not current and whole."""
    read = run_parts(path, asked)
    if read is None:
        return None
    run_id, head, found = read
    parts = {part: text for part, _sequence, text in found}
    at_head = any(part == "state" and sequence == head for part, sequence, _ in found)
    if not at_head or "begun" not in parts or _FALLBACK & parts.keys():
        return None
    return run_id, parts


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
    from pipeline.handlers.runtime._gitcmd import GitPolicy, run_git

    shown = run_git(
        Path(),
        "log",
        "HEAD",
        "--fixed-strings",
        f"--grep={EFFECT_TRAILER}: {run_id}:",
        f"--format=%H %(trailers:key={EFFECT_TRAILER},valueonly,separator=%x20)",
        policy=GitPolicy(),
        check=False,
    )
    if shown.returncode != 0:
        return False
    shas: set[str] = set()
    effects: set[str] = set()
    for line in shown.stdout.splitlines():
        sha, *named = line.split()
        shas.add(sha)
        effects.update(e for e in named if e.startswith(f"{run_id}:"))
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
    from rich.table import Table
    from rich.text import Text

    from pipeline.app.cli._console import output_console
    from pipeline.app.cli._safe import terminal_safe

    # As pipeline.app.cli._render.state_table draws it (a test holds the two outputs equal).
    table = Table(title=Text(terminal_safe(f"Run {run_id}")), show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    for what, value in rows:
        table.add_row(Text(what), Text(terminal_safe(value)))
    out = output_console()
    out.print(table)
    if dict(rows)["phase"] == "interrupted":
        out.print(f"Resume it: ralph resume {run_id}")
    return 0
