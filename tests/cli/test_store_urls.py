"""The command line on a store named by URL: a run kept in PostgreSQL is run, resumed, read,
listed and checked like one kept in the workspace's SQLite file."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.core.serialization import decode_event, decode_state
from pipeline.events import RunCompleted, RunId
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.reducers import fold
from tests.runtime.workspace import FINISH_EVERYTHING, RALPH, make_workspace, ralph, scripted

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


def _workspace(root: Path, extra: str = "") -> Path:
    return make_workspace(
        root,
        scripts={"finish.toml": FINISH_EVERYTHING},
        agents={"main": scripted("finish.toml")},
        budgets="max_iterations = 1\nmax_review_passes = 1",
        extra=extra,
    )


def test_a_run_with_store_url_lives_in_postgresql_and_every_reader_takes_the_url(
    tmp_path: Path, postgres_url: str
) -> None:
    """``ralph run --store URL`` keeps no SQLite file; events, replay --verify, status and
    runs read the run from the URL, and its log folds to the state status reports."""
    root = _workspace(tmp_path / "ws")
    started = ralph("run", "--plain", "--store", postgres_url, cwd=root)
    assert started.returncode == 0, started.stderr
    assert not WorkspaceLayout(root=root).store.exists()
    assert "Event store: postgresql://ralph@127.0.0.1:" in started.stdout
    with PostgresEventStore(postgres_url) as store:
        (run,) = store.runs()
        stored = list(store.read(run.run_id))
    printed = ralph("events", postgres_url, "--format", "jsonl", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert [decode_event(line) for line in printed.stdout.splitlines()] == stored
    from_env = subprocess.run(
        [*RALPH, "events", "--format", "jsonl"],
        cwd=tmp_path,
        env={**os.environ, "RALPH_STORE": postgres_url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert from_env.stdout == printed.stdout, from_env.stderr
    verified = ralph("replay", postgres_url, "--verify", cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert "verified: the fold equals all" in verified.stdout
    status = ralph("status", "--store", postgres_url, "--json", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert decode_state(status.stdout) == fold(stored)
    listed = ralph("runs", postgres_url, cwd=tmp_path)
    assert run.run_id in listed.stdout
    assert " direct " in listed.stdout  # started with ralph run, not from the queue
    row = next(line for line in listed.stdout.splitlines() if run.run_id in line)
    total = fold(stored).ledger.spend.total
    # The cost column, read from the PostgreSQL store: never $0 for costs nobody reported.
    assert (" unknown " if total.invocations else " - ") in row
    resumed = ralph("resume", "--plain", "--store", postgres_url, cwd=root)
    assert resumed.returncode == started.returncode, resumed.stderr
    with PostgresEventStore(postgres_url) as store:
        assert list(store.read(run.run_id)) == stored, "resuming a finished run adds nothing"
    unknown = ralph("resume", "nope", "--store", postgres_url, cwd=root)
    assert unknown.returncode == 2
    assert "no run 'nope' in postgresql://ralph@127.0.0.1:" in unknown.stderr
    # A fork of a run given by --store goes to that store, and says to resume it there.
    target = tmp_path / "fork"
    forked = ralph(
        "fork", "--at", str(len(stored)), "--to", str(target), "--store", postgres_url, cwd=root
    )
    assert forked.returncode == 0, forked.stderr
    hint = forked.stdout.split("go on with: ")[1].split()
    assert hint[:2] == ["ralph", "resume"]
    assert hint[-2:] == ["--store", postgres_url]
    done = ralph(*hint[1:], "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    with PostgresEventStore(postgres_url) as store:
        assert isinstance(list(store.read(RunId(hint[2])))[-1], RunCompleted)


def test_the_store_comes_from_ralph_toml_or_ralph_store_and_the_flag_wins(
    tmp_path: Path, postgres_url: str
) -> None:
    """``[store] url`` sends the run to PostgreSQL; RALPH_STORE (or ``--store``) overrides
    it, here with a relative sqlite:/// path, taken from where the command runs."""
    root = _workspace(tmp_path / "ws", extra=f'[store]\nurl = "{postgres_url}"\n')
    assert ralph("run", "--quiet", cwd=root).returncode == 0
    with PostgresEventStore(postgres_url) as store:
        (first,) = store.runs()
    # A fork of it goes to the same server, where its worktree's resume looks for it.
    target = tmp_path / "fork"
    forked = ralph("fork", "--at", str(first.events), "--to", str(target), cwd=root)
    assert forked.returncode == 0, forked.stderr
    assert not WorkspaceLayout(root=target).store.exists()
    # Named: the fork shares its start with the source, so "the latest" may be either.
    hint = forked.stdout.split("go on with: ")[1].split()
    assert hint[:2] == ["ralph", "resume"]
    assert "--store" not in hint  # ralph.toml names the store
    resumed = ralph("resume", hint[2], "--quiet", cwd=target)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    with PostgresEventStore(postgres_url) as store:
        assert isinstance(list(store.read(RunId(hint[2])))[-1], RunCompleted)
    # The second run has work to do again (a run that commits nothing is no success).
    subprocess.run(["git", "rm", "-q", "work.txt"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "Undo the work"], cwd=root, check=True)
    env_run = subprocess.run(
        [*RALPH, "run", "--quiet"],
        cwd=root,
        env={**os.environ, "RALPH_STORE": "sqlite:///elsewhere.db"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert env_run.returncode == 0, env_run.stderr
    assert (root / "elsewhere.db").is_file()
    with PostgresEventStore(postgres_url) as store:
        assert len(store.runs()) == 2  # the first run and its fork, not the third


def test_bad_store_locations_are_clear_usage_errors(tmp_path: Path) -> None:
    """An unknown scheme and a bad [store] url exit 2 (bad input), an unreachable server 4
    (a store error: the same command may work later), each with one line saying what is
    wrong; nothing is run."""
    root = _workspace(tmp_path / "ws")
    scheme = ralph("events", "mysql://db/x", cwd=tmp_path)
    assert scheme.returncode == 2
    assert "unknown store scheme 'mysql'" in scheme.stderr
    # Told at once (1 s of tries), not after the 10 s a lost connection is retried in a run:
    # measured against a run refused by the same URL's driver at its first try, so that
    # what a loaded machine adds to the start of ``ralph run`` counts on both sides.
    began = time.monotonic()
    unusable = ralph("run", "--store", "postgresql://nobody@127.0.0.1:1/none?nah=1", cwd=root)
    start_s = time.monotonic() - began
    assert unusable.returncode == 4, unusable.stderr
    assert "not a usable PostgreSQL URL" in unusable.stderr
    began = time.monotonic()
    away = ralph("run", "--store", "postgresql://nobody@127.0.0.1:1/none", cwd=root)
    took_s = time.monotonic() - began
    assert away.returncode == 4
    assert "cannot reach the PostgreSQL server" in away.stderr
    assert took_s - start_s < 6, "the first connection is retried as a lost one"
    bad = _workspace(tmp_path / "bad", extra='[store]\nurl = "redis://x"\n')
    configured = ralph("run", cwd=bad)
    assert configured.returncode == 2
    assert "store.url: 'redis://x' is not a store" in configured.stderr
