"""Opening an event store from where the user says it is: a path or a URL (I/O)."""

from __future__ import annotations

from pathlib import Path
from typing import Final, Protocol

from pipeline.core._store_schemes import POSTGRES_SCHEMES, SQLITE_SCHEME
from pipeline.events import RunId
from pipeline.handlers.redaction import mask_password_of
from pipeline.handlers.store._port import EventStore, StoreError, StoreMissingError
from pipeline.handlers.store._projection import Projected
from pipeline.handlers.store._sqlite import SqliteEventStore

__all__ = ["NamedStore", "open_store_at", "store_path"]


class NamedStore(EventStore, Projected, Protocol):
    """An event store the command line can name in messages and pick a run from, with the
    projections it keeps."""

    @property
    def label(self) -> str:
        """Where the store is, for messages (a URL never shows its password)."""
        ...

    def ensure_present(self) -> None:
        """Raise :class:`~pipeline.handlers.store.StoreVanishedError` when the store was
        removed while open (a file deleted under a SQLite store; a no-op for a server)."""
        ...

    def choose_run(self, run_id: str | None) -> RunId:
        """``run_id`` when the store holds it, else the latest run when None."""
        ...

    def __enter__(self) -> NamedStore: ...

    def __exit__(self, *_exc: object) -> None: ...


def store_path(location: str | Path) -> Path | None:
    """The SQLite file ``location`` names (a path or ``sqlite:///path``), or None for a
    PostgreSQL URL. As with SQLAlchemy, ``sqlite:///x.db`` is relative and
    ``sqlite:////tmp/x.db`` absolute."""
    text = str(location)
    if text.startswith(POSTGRES_SCHEMES):
        return None
    if text.startswith(SQLITE_SCHEME):
        return Path(text.removeprefix(SQLITE_SCHEME))
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise StoreError(
            f"{mask_password_of(text, text)}: unknown store scheme {scheme!r} (use a path, "
            "sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE)"
        )
    return Path(text)


FIRST_CONNECT_S: Final = 1.0
"""How long a store opened from the command line tries to reach its server at first: a person
at the prompt is told at once that it is down (a connection lost later is retried longer)."""


def open_store_at(
    location: str | Path,
    *,
    synced: bool = True,
    must_exist: bool = False,
    read_only: bool = False,
) -> NamedStore:
    """The store at ``location``: a SQLite file (created when missing, unless ``must_exist``)
    or a PostgreSQL database (the ``postgres`` extra). ``synced`` False is the ``process``
    durability: commits do not wait for the disk. ``read_only`` opens the store to read only:
    never migrated nor changed (a SQLite file must exist; a PostgreSQL session is read-only)."""
    path = store_path(location)
    if path is None:
        try:
            # Imported here: psycopg comes with the optional extra only.
            from pipeline.handlers.store.postgres import PostgresEventStore
        except ImportError as error:
            raise StoreError(
                "a PostgreSQL store needs psycopg; install the extra: "
                "pip install 'ralph-pipeline[postgres]'"
            ) from error
        return PostgresEventStore(
            str(location),
            synchronous_commit=synced,
            read_only=read_only,
            connect_within_s=FIRST_CONNECT_S,
        )
    if (must_exist or read_only) and not path.is_file():
        raise StoreMissingError(
            f"no event store at {path}: no run was stored there yet (`ralph run` starts one, "
            "or name another store)"
        )
    return SqliteEventStore(path, synchronous="FULL" if synced else "NORMAL", read_only=read_only)
