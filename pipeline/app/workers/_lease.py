"""A worker's lease, kept while its run works (I/O: a thread with its own connection).

A claimed ticket is the worker's only while its holder's heartbeat goes on. The keeper beats
every third of the lease, so that a beat lost while the database is away leaves time for the
next; when a beat finds the job no longer the holder's (the ticket was cancelled, or another
worker took it over after this one stalled), it signals the worker's main thread, whose
handler interrupts the run.
"""

from __future__ import annotations

import _thread
import signal
import threading

from pipeline.handlers.store import StoreError
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import Lease, RunQueue

__all__ = ["LEASE_LOST", "LeaseKeeper"]

LEASE_LOST = signal.SIGUSR1
"""Raised in the worker's main thread by its lease keeper when the lease is gone."""


class LeaseKeeper:
    """Beats a lease's heartbeat every third of its length on its own connection; when the
    lease is gone, says so in the main thread (which interrupts the run at work)."""

    def __init__(self, url: str, lease: Lease, lease_s: float, *, interrupt: bool) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._keep, args=(url, lease, lease_s, interrupt), daemon=True
        )
        self._thread.start()

    def _keep(self, url: str, lease: Lease, lease_s: float, interrupt: bool) -> None:
        store: PostgresEventStore | None = None
        try:
            while not self._stop.wait(lease_s / 3):
                try:
                    store = store or PostgresEventStore(url, retry_s=lease_s / 3)
                    held = RunQueue(store).renew(lease)
                except StoreError:
                    continue  # the database is away: try again; appends fail meanwhile
                if not held:
                    if interrupt:
                        _thread.interrupt_main(LEASE_LOST)
                    return
        finally:
            if store is not None:
                store.close()

    def stop(self) -> None:
        """Stop renewing (the run is over) and wait for the thread."""
        self._stop.set()
        self._thread.join()
