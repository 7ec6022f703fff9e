"""A worker whose run must wait long for a provider limit's reset gives the ticket back until
then instead of sleeping on its lease; another worker takes it once the reset has come and the
run goes on to the end. Real PostgreSQL, real workers (the Python API), real git."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.app.workers import Worker, submit
from pipeline.events import LimitResetAwaited, ProviderLimited, RunCompleted, TerminationReason
from pipeline.handlers.runtime import _waits
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import RunQueue, TicketState
from tests.runtime.test_limits import limited_workspace

pytestmark = pytest.mark.slow  # whole runs and a wait of a few seconds


def test_a_long_wait_is_handed_back_and_another_worker_goes_on_after_the_reset(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wait over one second counts as long here (a minute by default).
    monkeypatch.setattr(_waits, "HAND_BACK_AFTER_S", 1.0)
    ticket = submit(postgres_url, limited_workspace(tmp_path, delay_s=4))
    first = Worker(postgres_url, name="first", poll_s=0.05).run(exit_when_idle=True)
    assert (first.claimed, first.released, first.done) == (1, 1, 0)
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        waiting = queue.get(ticket.ticket)
        assert waiting is not None
        assert waiting.state is TicketState.QUEUED
        assert waiting.worker is None
        assert waiting.not_before is not None
        assert datetime.now(UTC) < waiting.not_before, "handed back after the reset"
        # Nobody may take it before the reset.
        assert queue.claim("early", 30.0) is None
        (limited,) = [
            e for e in store.read(store.runs()[0].run_id) if isinstance(e, ProviderLimited)
        ]
    assert waiting.not_before == limited.resets_at
    time.sleep(max(0.0, (waiting.not_before - datetime.now(UTC)).total_seconds()) + 0.2)
    second = Worker(postgres_url, name="second", poll_s=0.05).run(exit_when_idle=True)
    assert (second.claimed, second.done) == (1, 1)
    with PostgresEventStore(postgres_url) as store:
        done = RunQueue(store).get(ticket.ticket)
        assert done is not None
        assert (done.state, done.claims, done.worker) == (TicketState.DONE, 2, "second")
        events = list(store.read(store.runs()[0].run_id))
    (awaited,) = [e for e in events if isinstance(e, LimitResetAwaited)]
    assert awaited.until == limited.resets_at
    assert [e.reason for e in events if isinstance(e, RunCompleted)] == [
        TerminationReason.COMPLETED
    ]
