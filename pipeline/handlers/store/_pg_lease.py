"""One holder at a time across machines: a PostgreSQL session advisory lock (I/O).

The lock belongs to a connection of its own, so the server drops it when the holder's
process ends however it ends (its connection goes with it): a lease that lasts exactly as
long as its holder, with nothing to expire or renew.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

import psycopg

from pipeline.handlers.store._port import StoreError

__all__ = ["advisory_lease"]


@contextlib.contextmanager
def advisory_lease(url: str, name: str) -> Iterator[None]:
    """Hold the lease ``name`` in the database at ``url`` for the block (waiting for its
    holder, if any); :class:`StoreError` when the database cannot be reached."""
    key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.Error as error:
        raise StoreError(f"cannot take the lease {name!r}: {error}") from error
    with conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            yield
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
