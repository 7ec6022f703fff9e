"""What the lean command paths (``_runs_quick``, ``_status_quick``, ``_respond_quick``,
``_events_quick``) share to read a SQLite store without the store's adapters, the events or
the converter: where the store is, one read-only snapshot of it at a schema this release
reads, and the log's hash chain checked on the stored bytes (with the store's own
:func:`~pipeline.handlers.store._link.link`).

Each of them answers only where it gives exactly what the full command gives; whatever this
module cannot read so (a file that cannot be opened, a schema this release does not know, a
chain that does not hold) it answers with None or False, and the full command runs.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import orjson

from pipeline.handlers.store._link import link

# ``typing`` is imported for the type checker only, as in ``pipeline.app.cli._emit``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Final, TypeVar

    T = TypeVar("T")

__all__ = [
    "CHECKPOINT_FORMAT",
    "LOG",
    "SCHEMA_READ",
    "chain_holds",
    "checkpoint_at",
    "named_store",
    "snapshot",
    "tail_holds",
]

SCHEMA_READ: Final = 9
"""The newest store schema the lean paths read (8 added ``run_summaries``, 9 ``run_status``;
a test holds it to the SQLite store's migrations)."""

CHECKPOINT_FORMAT: Final = 5
"""The checkpoint format this release reads (a test holds it to
``pipeline.core.serialization``'s)."""

LOG: Final = (
    "SELECT sequence, type, schema_version, body, digest FROM events "
    "WHERE run_id = ? AND sequence >= ? ORDER BY sequence"
)
"""A run's stored rows from a sequence on, in order, as :func:`chain_holds` reads them."""


def named_store(given: str | None) -> Path | None:
    """The store file ``given`` names (None: the current directory's workspace's default
    store, as the full commands find it), or None for a URL, which the full command reads."""
    if given is None:
        from pipeline.handlers.runtime._layout import WorkspaceLayout

        return WorkspaceLayout(root=Path()).store
    if "://" in given or given.startswith("sqlite:"):
        return None
    return Path(given)


def snapshot(path: Path, needs: int, read: Callable[[sqlite3.Connection], T]) -> T | None:
    """What ``read`` gives of one read-only snapshot of the store at ``path``, or None when
    the file cannot be opened or read so, or its schema lacks migration ``needs`` or is
    newer than :data:`SCHEMA_READ` (a store another release wrote)."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, OSError, ValueError):
        return None
    try:
        db.execute("BEGIN")  # one snapshot: every table read agrees with the others
        versions = {row[0] for row in db.execute("SELECT version FROM schema_migrations")}
        if needs not in versions or max(versions) > SCHEMA_READ:
            return None
        return read(db)
    except (sqlite3.Error, UnicodeDecodeError):  # a stored text that is not: damage
        return None
    finally:
        db.close()


def chain_holds(
    run_id: str,
    rows: Iterable[tuple[int, str, int, bytes | str, str | None]],
    head: int,
    tip: str | None,
    each: Callable[[int, str, int, bytes | str], bool] | None = None,
    *,
    start: int = 0,
    previous: str | None = None,
) -> bool:
    """Whether ``rows`` (as :data:`LOG` reads them from ``start``, ``previous`` the digest of
    the row before) are the run's log as its store's reader accepts it: numbered on with
    none missing, each chained to the one before, the last the run's head and tip (no event
    is decoded); and ``each`` holds of every row."""
    count = start
    for sequence, tag, version, body, digest in rows:
        if digest is None or sequence != count:
            return False
        if digest != link(previous, run_id, sequence, tag, version, body):
            return False
        if each is not None and not each(sequence, tag, version, body):
            return False
        previous, count = digest, count + 1
    return count == head and previous == tip


def checkpoint_at(db: sqlite3.Connection, run_id: str) -> int | None:
    """How many events the run's newest checkpoint covers (0: it has none), or None when it
    fails a check ``pipeline.engine.load_state`` makes before it decodes one (its format,
    its checksum, the events it claims): the full command reports that one and folds the
    log instead."""
    newest = db.execute(
        "SELECT sequence, format_version, checksum, body FROM checkpoints "
        "WHERE run_id = ? ORDER BY sequence DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    if newest is None:
        return 0
    sequence, version, checksum, body = newest
    if version != CHECKPOINT_FORMAT or hashlib.sha256(body).hexdigest() != checksum:
        return None
    try:
        state = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return int(sequence) if isinstance(state, dict) and state.get("sequence") == sequence else None


def tail_holds(db: sqlite3.Connection, run_id: str, head: int, tip: str | None) -> bool:
    """Whether the run's log reads as ``load_state`` reads it (from its newest checkpoint
    on, as the store's reader checks a read that begins there: no row before it missing,
    the rows after it chained from the one before to the head and tip), its checkpoint
    passing :func:`checkpoint_at`."""
    start = checkpoint_at(db, run_id)
    if start is None:
        return False
    previous = None
    if start:
        count, previous = db.execute(
            "SELECT COUNT(*), MAX(CASE WHEN sequence = ? THEN digest END) FROM events "
            "WHERE run_id = ? AND sequence < ?",
            (start - 1, run_id, start),
        ).fetchone()
        if count != start or previous is None:
            return False
    rows = db.execute(LOG, (run_id, start))
    return chain_holds(run_id, rows, head, tip, start=start, previous=previous)
