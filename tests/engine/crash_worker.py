"""``python -m tests.engine.crash_worker DB SEED DELAY [RUN_ID]``: start or resume a run.

Prints ``ready`` once imported (so the killer's timer starts at the run, not at Python's
start-up), then runs the keyed crash world durably until the run is complete.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.engine import run_durable
from pipeline.events import RunId, TopicPublished
from pipeline.handlers.store import SqliteEventStore
from tests.engine.crash_world import CrashWorld, clock


def main(argv: list[str]) -> int:
    """Run (or resume) until complete; print the run id when done."""
    db, seed, delay = Path(argv[0]), int(argv[1]), float(argv[2])
    run_id = RunId(argv[3]) if len(argv) > 3 else None
    print("ready", flush=True)
    with SqliteEventStore(db) as store:
        world = CrashWorld(seed, delay)
        if run_id is not None:
            # Like the real events-file reader, the world's line count comes from the log.
            published = (e for e in store.read(run_id) if isinstance(e, TopicPublished))
            world.world.topic_lines = sum(1 for _ in published)
        result = run_durable(store, world, run_id=run_id, clock=clock)
    print(f"done {result.run_id}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
