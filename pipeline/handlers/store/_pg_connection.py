"""The PostgreSQL event store's connection: opened with the session settings the store
relies on, reopened with backoff when it drops, and a URL named in messages without its
password."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from pipeline.handlers.redaction import mask_password_of
from pipeline.handlers.store._port import StoreError

__all__ = ["PgSession", "describe_url"]

_PERMANENT: Final = (
    "does not exist",
    "authentication failed",
    "no pg_hba.conf entry",
    "permission denied",
)
"""What a server answers to a connection that no retry will cure (a missing database or
role, refused credentials). libpq gives these no SQLSTATE, so they are told by their text;
a server starting up or shutting down says otherwise, and is retried."""

T = TypeVar("T")


def describe_url(url: str) -> str:
    """``url`` without its password, for messages: ``postgresql://user@host:port/db``."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return mask_password_of(url, url)  # as given, to be corrected: less its password
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', 'localhost')}{port}/{parts.get('dbname', '')}"


class PgSession:
    """One connection to the database at ``url``, opened on first use and reopened when
    lost, within ``retry_s`` seconds; the event store is built on it.

    ``synchronous_commit`` False commits without waiting for the server's disk; ``read_only``
    makes every transaction of the session read-only.
    """

    def __init__(
        self, url: str, *, synchronous_commit: bool, retry_s: float, read_only: bool
    ) -> None:
        self.url = url
        self.label = describe_url(url)
        self.synchronous_commit = synchronous_commit
        self.retry_s = retry_s
        self.read_only = read_only
        """Opened to read only: never migrated, every transaction of the session read-only
        (a write fails in the server), works for a role that may only SELECT."""
        self._conn: psycopg.Connection[Any] | None = None

    def _connect(self, within_s: float | None = None) -> psycopg.Connection[Any]:
        """An open connection, reconnecting with backoff for up to ``within_s`` seconds
        (None: ``retry_s``)."""
        if self._conn is not None and not self._conn.closed:
            return self._conn
        deadline = time.monotonic() + (self.retry_s if within_s is None else within_s)
        delay = 0.05
        while True:
            try:
                conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            except psycopg.OperationalError as error:
                reason = str(error).strip().splitlines()[-1].strip() if str(error).strip() else ""
                if any(answer in reason for answer in _PERMANENT):
                    raise StoreError(f"{self.label}: the server refused: {reason}") from error
                if time.monotonic() + delay > deadline:
                    raise StoreError(
                        f"{self.label}: cannot reach the PostgreSQL server ({reason}); "
                        "is it running, and does the URL name the right host, port and database?"
                    ) from error
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            except psycopg.ProgrammingError as error:
                # psycopg quotes the URL, password and all
                why = mask_password_of(self.url, str(error))
                raise StoreError(f"{self.label}: not a usable PostgreSQL URL: {why}") from error
            # Times come back in UTC, as the SQLite store writes them.
            conn.execute("SET TIME ZONE 'UTC'")
            if not self.synchronous_commit:
                conn.execute("SET synchronous_commit = off")
            if self.read_only:
                conn.execute("SET default_transaction_read_only = on")
            # A process frozen inside a transaction (an append holding its run's queue row,
            # a migration holding the migration lock) would block every other worker: the
            # server ends such a session. Our transactions never wait on the client.
            conn.execute("SET idle_in_transaction_session_timeout = '5s'")
            self._conn = conn
            return conn

    def retrying(self, action: str, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work`` on a live connection; a connection lost midway is reopened and ``work``
        tried again (within ``retry_s``), so ``work`` must be safe to repeat. Other database
        errors become :class:`StoreError` saying it could not ``action``."""
        deadline = time.monotonic() + self.retry_s
        while True:
            conn = self._connect()
            try:
                return work(conn)
            except psycopg.OperationalError as error:
                if not conn.closed and not conn.broken:
                    raise StoreError(f"{self.label}: could not {action}: {error}") from error
                conn.close()
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.label}: could not {action}: the connection was lost ({error})"
                    ) from error
            except psycopg.Error as error:
                raise StoreError(f"{self.label}: could not {action}: {error}") from error

    def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None
