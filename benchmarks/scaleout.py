"""Scale-out on PostgreSQL: the event append rate, and pipelines completed per second with
1, 2 and 4 workers draining one queue: of path tickets (a workspace each), then of remote
tickets (one bare remote, workers with a ``--workdir``, each commit pushed).

The server is a throwaway one started here from the machine's PostgreSQL binaries, syncing
to disk as a production server does (``tests/postgres.py``), unless ``--store URL``
names one. Each pipeline is a real one: a git workspace, the scripted agent as a subprocess
for every role, one iteration and one review pass.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pipeline.events import RunId

QUICK_PIPELINES = 4
FULL_PIPELINES = 48
WORKER_COUNTS = (1, 2, 4)

_OUT = """
write.".agent/out/plan.md" = "1. do it"
write.".agent/out/status" = "completed\\ndone"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Do it"
"""
# The development step changes a tracked file, so each pipeline makes one commit (which a
# remote ticket's worker pushes before its fact is appended).
_SCRIPT = f'[[default]]{_OUT}\n[[development]]{_OUT}write."work.txt" = "done"\n'


def _workspace(root: Path) -> Path:
    """A git repository whose scripted agent finishes every role at once."""
    root.mkdir(parents=True)
    for args in (
        ["init", "--quiet", "--initial-branch", "main"],
        ["config", "user.name", "bench"],
        ["config", "user.email", "bench@example.invalid"],
        ["config", "commit.gpgsign", "false"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)
    (root / ".ralph").mkdir()
    (root / ".ralph" / "finish.toml").write_text(_SCRIPT)
    agent = [sys.executable, "-m", "pipeline.app.agents.scripted", ".ralph/finish.toml"]
    (root / "PROMPT.md").write_text("Make the tests pass.\n")
    (root / "ralph.toml").write_text(
        "[budgets]\nmax_iterations = 1\nmax_review_passes = 1\n\n"
        f'[agents.main]\ncommand = {json.dumps(agent)}\n\n[chains]\ndefault = ["main"]\n'
    )
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "start"], cwd=root, check=True)
    return root


def _append_rates(url: str, appends: int) -> dict[str, int]:
    """Events appended per second: one event per synced append, ten per synced append, and
    one per append not waiting for the disk (``synchronous_commit = off``)."""
    from benchmarks.workload import long_log
    from pipeline.core.state import PipelineState
    from pipeline.handlers.store import Folded
    from pipeline.handlers.store.postgres import PostgresEventStore

    rates: dict[str, int] = {}
    events = long_log(appends * 10)
    with PostgresEventStore(url) as store:
        for label, batch, flush in (
            ("1 event per append, synced", 1, True),
            ("10 events per append, synced", 10, True),
            ("1 event per append, not synced (redoable facts)", 1, False),
        ):
            run = RunId(f"append-{batch}-{flush}")
            count = appends if batch == 1 else appends * 10
            state = PipelineState()
            started = time.perf_counter()
            for at in range(0, count, batch):
                # Folded, as the engine appends them (the fold is timed, as it was in the store).
                facts = Folded(state, events[at : at + batch])
                store.append(run, at, facts, flush=flush)
                state = facts.after
            rates[label] = round(count / (time.perf_counter() - started))
    return rates


def _remote_clone(root: Path) -> Path:
    """A bare remote at ``root/remote.git`` and a :func:`_workspace` clone of it at
    ``root/clone``, its ``main`` pushed there as ``origin``."""
    bare = root / "remote.git"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch", "main", bare],
                   check=True)  # fmt: skip
    clone = _workspace(root / "clone")
    subprocess.run(["git", "remote", "add", "origin", str(bare)], cwd=clone, check=True)
    subprocess.run(["git", "push", "--quiet", "origin", "main"], cwd=clone, check=True)
    return clone


def _drain(url: str, base: Path, pipelines: int, workers: int, remote: bool) -> dict[str, Any]:
    """Submit ``pipelines`` runs, then time ``ralph worker --concurrency N`` draining them.
    ``remote``: remote tickets of one bare remote (``submit --remote``), run by workers sharing
    one ``--workdir``; else path tickets, a workspace each."""
    from pipeline.app.workers import submit
    from pipeline.handlers.store.postgres import PostgresEventStore
    from pipeline.handlers.store.queue import RunQueue, TicketState

    if remote:
        clone = _remote_clone(base / f"r{workers}")
        submitted = {submit(url, clone, remote="origin").ticket for _ in range(pipelines)}
        where: tuple[str, ...] = ("--workdir", str(base / f"r{workers}" / "workdir"))
    else:
        submitted = {
            submit(url, _workspace(base / f"w{workers}-{i}")).ticket for i in range(pipelines)
        }
        where = ()
    started = time.perf_counter()
    subprocess.run(
        [
            *(sys.executable, "-m", "pipeline.app.cli", "worker", "--store", url, *where),
            *("--concurrency", str(workers), "--exit-when-idle", "--poll-seconds", "0.05"),
        ],
        check=True,
        capture_output=True,
    )
    elapsed = time.perf_counter() - started
    with PostgresEventStore(url) as store:
        tickets = [t for t in RunQueue(store).tickets() if t.ticket in submitted]
        events = sum(store.head(RunId(t.run_id)) for t in tickets if t.run_id)
    done = sum(t.state is TicketState.DONE for t in tickets)
    if done != pipelines:
        raise RuntimeError(f"{pipelines - done} of {pipelines} pipelines did not finish")
    if remote and any(t.pushed in (None, t.base) for t in tickets):
        raise RuntimeError("a remote pipeline pushed no commit")
    return {
        "pipelines": pipelines,
        "seconds": round(elapsed, 2),
        "pipelines_per_second": round(pipelines / elapsed, 2),
        "events_per_second": round(events / elapsed),
    }


def run_scaleout_benchmark(
    quick: bool, url: str | None = None, smoke: bool = False
) -> dict[str, Any]:
    """The scale-out figures, or a reason they could not be measured (``smoke``: the least
    that runs the code: a few appends, two pipelines per drain)."""
    try:
        from tests.postgres import find_binaries, postgres_server
    except ImportError as error:
        return {
            "skipped": f"cannot load the PostgreSQL helpers ({error}); "
            "pip install -e '.[bench,postgres,testing]'"
        }
    with ExitStack() as stack:
        if url is None:
            binaries = find_binaries()
            if binaries is None:
                return {"skipped": "no PostgreSQL server binaries (initdb, pg_ctl) here"}
            server = stack.enter_context(postgres_server(binaries, durable=True))
            new_database = server.new_database
        else:
            given = url

            def new_database() -> str:
                return given

        base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ralph-scale-")))
        appends = 30 if smoke else 300 if quick else 2_000
        append_runs = [_append_rates(new_database(), appends) for _ in range(1 if quick else 3)]
        rates = {
            label: round(statistics.median(run[label] for run in append_runs))
            for label in append_runs[0]
        }
        pipelines = 2 if smoke else QUICK_PIPELINES if quick else FULL_PIPELINES
        drains: dict[str, Any] = {}
        remote_drains: dict[str, Any] = {}
        for workers in WORKER_COUNTS:  # each remote drain next to its path drain: same load
            drains[str(workers)] = _drain(new_database(), base, pipelines, workers, False)
            remote_drains[str(workers)] = _drain(new_database(), base, pipelines, workers, True)
    return {
        "append_events_per_second": rates,
        "workers": drains,
        "remote_workers": remote_drains,
        "own_server": url is None,
    }
