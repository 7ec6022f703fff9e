"""``python -m tests.engine.crash_worker DB SEED DELAY [RUN_ID]``: start or resume a run.

Prints ``ready`` once imported, and ``running`` once this process has made its first fact
durable (``RunStarted`` or ``RunResumed``), so a killer's timer starts inside the run; then runs
the keyed crash world durably until the run is complete.

With ``CRASH_STALL_COMMIT=N`` set, the N-th append stops inside its transaction (its rows
inserted, its COMMIT not yet sent), prints ``in-transaction`` and waits to be killed.

With ``CRASH_GATE=PATH:N`` set, the run stops after its N-th fact is durable until ``PATH``
exists, so a test can act while the run is certainly in progress, whatever the machine's load.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from pathlib import Path

from pipeline.engine import RunObserver, RunOptions, run_durable
from pipeline.events import RunId
from pipeline.handlers.store import SqliteEventStore
from tests.engine.crash_world import CrashWorld, clock


class _StallingConnection:
    """Passes everything to the real connection, but stalls before the N-th commit (a
    ``COMMIT`` statement, or the end of a ``with connection:`` block without an error, which
    is how the store ends its write transactions)."""

    def __init__(self, connection: sqlite3.Connection, stall_at: int) -> None:
        self._connection = connection
        self._stall_at = stall_at
        self._commits = 0

    def _committing(self) -> None:
        self._commits += 1
        if self._commits == self._stall_at:
            print("in-transaction", flush=True)
            time.sleep(60)

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "COMMIT":
            self._committing()
        return self._connection.execute(sql, *args)  # type: ignore[arg-type]

    def __enter__(self) -> _StallingConnection:
        return self

    def __exit__(self, kind: object, *rest: object) -> bool:
        if kind is None:
            self._committing()
        return self._connection.__exit__(kind, *rest)  # type: ignore[arg-type]

    def executemany(self, sql: str, rows: object) -> sqlite3.Cursor:
        return self._connection.executemany(sql, rows)  # type: ignore[arg-type]

    def close(self) -> None:
        self._connection.close()


def main(argv: list[str]) -> int:
    """Run (or resume) until complete; print the run id when done."""
    db, seed, delay = Path(argv[0]), int(argv[1]), float(argv[2])
    run_id = RunId(argv[3]) if len(argv) > 3 else None
    print("ready", flush=True)
    with SqliteEventStore(db) as store:
        stall = os.environ.get("CRASH_STALL_COMMIT")
        if stall:
            # Counting from the store's opening: migrations commit too.
            store._db = _StallingConnection(store._db, int(stall))  # type: ignore[assignment]
        # A resumed world is a fresh one too: it numbers events-file lines on from the
        # position each InvokeAgent carries from the log, as the real reader does.
        world = CrashWorld(seed, delay)
        announced = []
        gate_path, _, gate_at = os.environ.get("CRASH_GATE", "").rpartition(":")

        class Announce(RunObserver):
            def event(self, _state: object, _event: object, /) -> None:
                if not announced:
                    print("running", flush=True)
                announced.append(True)
                if gate_path and len(announced) == int(gate_at):
                    deadline = time.monotonic() + 120
                    while not Path(gate_path).exists() and time.monotonic() < deadline:
                        time.sleep(0.02)

        result = run_durable(
            store, world, run_id=run_id, observer=Announce(), options=RunOptions(clock=clock)
        )
    print(f"done {result.run_id}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
