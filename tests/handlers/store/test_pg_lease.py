"""The integrators' lease on PostgreSQL: one holder at a time, a holder killed with SIGKILL
loses it at once (its connection goes with it), with nothing to expire, and the merge queue
takes it by the repository's name for a PostgreSQL store only."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from pathlib import Path

from pipeline.app.workspace._merge import _lease
from pipeline.handlers.store.postgres import advisory_lease


def test_one_holder_at_a_time_and_a_killed_holder_lets_go(postgres_url: str) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pipeline.handlers.store.postgres import advisory_lease\n"
            "with advisory_lease(sys.argv[1], 'repo'):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(120)\n",
            postgres_url,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        taken = threading.Event()

        def take() -> None:
            with advisory_lease(postgres_url, "repo"):
                taken.set()

        waiter = threading.Thread(target=take, daemon=True)
        waiter.start()
        assert not taken.wait(0.5), "taken while another held it"
        with advisory_lease(postgres_url, "another repo"):
            pass  # another name is another lease: not held
        holder.kill()  # SIGKILL: no unlock ever runs
        assert taken.wait(10), "the lease outlived its killed holder"
        waiter.join(5)
    finally:
        holder.kill()
        holder.wait()


def test_an_integration_with_a_postgres_store_holds_the_repository_lease(
    postgres_url: str, tmp_path: Path
) -> None:
    """The merge queue's lease for a PostgreSQL store is the one named after the repository's
    git folder, held for the integration (an integrator of another machine waits), and none
    is taken for a SQLite store."""
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "--quiet", str(root)], check=True)
    name = f"ralph-integration:{(root / '.git').resolve()}"
    taken = threading.Event()

    def take() -> None:
        with advisory_lease(postgres_url, name):
            taken.set()

    with _lease(root, postgres_url):
        waiter = threading.Thread(target=take, daemon=True)
        waiter.start()
        assert not taken.wait(0.5), "another integrator took the lease during an integration"
    assert taken.wait(10)
    waiter.join(5)
    assert isinstance(_lease(root, None), contextlib.nullcontext)
