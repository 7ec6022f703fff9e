"""``ralph salvage``: a damaged run's good prefix copied to a new store with a ``RunSalvaged``
fact, in real git workspaces with the scripted agent, real SQLite files and a real PostgreSQL
server. The damaged store is only read; the salvaged run verifies, shows it was salvaged, and
resumes, or says plainly why git stops the resume; no step is done twice."""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
from pathlib import Path

import psycopg
import pytest

from pipeline.core.state import Phase
from pipeline.events import CommitCreated, PipelineEvent, RunResumed, RunSalvaged
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import open_store_at
from pipeline.reducers import fold
from tests.faults.commits import commits_in_git
from tests.postgres import PostgresServer
from tests.runtime.workspace import FINISH_EVERYTHING, make_workspace, ralph, scripted

EVENTS = 36
"""The events of the whole run :func:`_completed` makes."""


def _completed(root: Path, *, store: str | None = None) -> str:
    """A workspace at ``root`` whose one run (one iteration, one commit) completed; its id."""
    make_workspace(
        root,
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        budgets="max_iterations = 1\nmax_review_passes = 1",
    )
    started = ralph("run", "--quiet", *(("--store", store) if store else ()), cwd=root)
    assert started.returncode == 0, started.stdout + started.stderr
    with open_store_at(store or WorkspaceLayout(root=root).store, read_only=True) as opened:
        (run,) = opened.runs()
        assert opened.head(run.run_id) == EVENTS
        return run.run_id


@pytest.fixture(scope="module")
def completed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One workspace whose run :func:`_completed` made, for the tests that only read and damage
    a store to copy (:func:`_copy_of`): one run serves them all."""
    root = tmp_path_factory.mktemp("salvage") / "ws"
    return root, _completed(root)


def _copy_of(completed: tuple[Path, str], root: Path) -> str:
    """A copy of the ``completed`` workspace at ``root`` (its git, work tree and store); the
    run's id. Only for a test that resumes nothing: the log names the first workspace's
    ``PROMPT.md`` (the prompt's protection records its path), which a resume would change."""
    shutil.copytree(completed[0], root, symlinks=True)
    return completed[1]


def _events(location: str | Path, run_id: str) -> list[PipelineEvent]:
    with open_store_at(location, read_only=True) as store:
        return list(store.read(store.choose_run(run_id)))


def _position(location: Path, run_id: str, kind: type) -> int:
    """Where the first fact of ``kind`` lies in the run's log."""
    return next(i for i, e in enumerate(_events(location, run_id)) if isinstance(e, kind))


def _damage(store: Path, sequence: int, *, delete: bool = False) -> None:
    """Overwrite one event's body with text that is no JSON, or delete its row."""
    with sqlite3.connect(store) as db:
        if delete:
            db.execute("DELETE FROM events WHERE sequence = ?", (sequence,))
        else:
            db.execute("UPDATE events SET body = '{not json' WHERE sequence = ?", (sequence,))
    db.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _said(result: object) -> str:
    """Everything a command printed, its lines joined (rich wraps long messages)."""
    return " ".join(f"{result.stdout} {result.stderr}".split())  # type: ignore[attr-defined]


def _no_traceback(*results: object) -> None:
    for result in results:
        assert "Traceback" not in result.stderr, result.stderr  # type: ignore[attr-defined]


# The tests that resume a salvaged run make a run of their own and resume it, seconds each, so
# they are slow: the fast loop has what salvage keeps and what a resume of it does from
# tests/engine/test_salvage.py and tests/reducers/test_salvage.py, and the command's words and
# exit codes from the tests here that copy one run.
@pytest.mark.slow
def test_damage_after_the_last_commit_is_salvaged_verified_shown_and_resumed_to_the_end(
    tmp_path: Path,
) -> None:
    """An undecodable event after the run's commit: salvage keeps every event before it
    (exit 0, ``kept N of 36 events; damage at N``) and leaves the damaged store's bytes
    alone; the new store verifies, status and the report say the run was salvaged, and
    ``ralph resume --store NEW`` runs it to completion without committing again."""
    root = tmp_path / "ws"
    run_id = _completed(root)
    damaged = WorkspaceLayout(root=root).store
    cut = _position(damaged, run_id, CommitCreated) + 4
    _damage(damaged, cut)
    before = _digest(damaged)
    new = tmp_path / "salvaged.db"

    salvaged = ralph("salvage", "--to", str(new), cwd=root)
    assert salvaged.returncode == 0, _said(salvaged)
    said = _said(salvaged)
    assert f"kept {cut} of {EVENTS} events; damage at {cut}:" in said
    assert "not valid JSON" in said
    assert f"ralph resume {run_id} --store {new}" in said
    assert f"Verify it: ralph replay {new} --run {run_id} --verify" in said
    assert _digest(damaged) == before, "salvage wrote to the damaged store"

    copied = _events(new, run_id)
    assert copied[:cut] == _events_before(damaged, run_id, cut)
    assert len(copied) == cut + 1
    fact = copied[-1]
    assert isinstance(fact, RunSalvaged)
    assert (fact.source, fact.kept) == (str(damaged), cut)
    assert "not valid JSON" in fact.reason
    assert len(fact.reason) <= 500

    verified = ralph("replay", str(new), "--run", run_id, "--verify", cwd=tmp_path)
    assert verified.returncode == 0, _said(verified)
    status = ralph("status", "--store", str(new), cwd=root)
    assert status.returncode == 0, _said(status)
    assert re.search(r"│ salvaged +│ from " + re.escape(str(damaged)[:20]), status.stdout)
    report = ralph("report", str(new), "--markdown", "-", cwd=tmp_path)
    assert re.search(rf"\| salvaged \| from .*: kept {cut} events; ", report.stdout), report.stdout

    resumed = ralph("resume", run_id, "--store", str(new), "--quiet", cwd=root)
    assert resumed.returncode == 0, _said(resumed)
    after = _events(new, run_id)
    assert fold(after).phase is Phase.COMPLETE
    assert sum(isinstance(e, CommitCreated) for e in after) == 1
    assert len(commits_in_git(root)) == 1, "a step was committed twice"
    assert ralph("replay", str(new), "--verify", cwd=tmp_path).returncode == 0
    _no_traceback(salvaged, verified, status, resumed)


def _events_before(store: Path, run_id: str, cut: int) -> list[PipelineEvent]:
    """The first ``cut`` events of a damaged run (its read stops at the damage)."""
    with open_store_at(store, read_only=True) as opened:
        events = []
        for event in opened.read(opened.choose_run(run_id)):
            events.append(event)
            if len(events) == cut:
                break
        return events


@pytest.mark.slow
def test_a_lost_commit_fact_is_found_again_by_its_trailer_after_salvage(tmp_path: Path) -> None:
    """The row of the run's ``CommitCreated`` deleted: the salvaged run resumes at the commit
    step under the same effect id (RunSalvaged is not counted), finds the commit git holds by
    its trailer and records it: one commit in git, one in the log."""
    root = tmp_path / "ws"
    run_id = _completed(root)
    damaged = WorkspaceLayout(root=root).store
    cut = _position(damaged, run_id, CommitCreated)
    _damage(damaged, cut, delete=True)
    new = tmp_path / "salvaged.db"
    salvaged = ralph("salvage", run_id, "--store", str(damaged), "--to", str(new), cwd=tmp_path)
    assert salvaged.returncode == 0, _said(salvaged)
    assert f"kept {cut} of {EVENTS} events; damage at {cut}: " in _said(salvaged)
    assert f"event {cut} is missing" in _said(salvaged)

    resumed = ralph("resume", run_id, "--store", str(new), "--quiet", cwd=root)
    assert resumed.returncode == 0, _said(resumed)
    after = _events(new, run_id)
    assert fold(after).phase is Phase.COMPLETE
    assert [e.sha for e in after if isinstance(e, CommitCreated)] == [
        sha for sha, _ in commits_in_git(root)
    ]
    assert len(commits_in_git(root)) == 1


@pytest.mark.slow
def test_damage_before_a_commit_git_holds_is_named_and_the_resume_stops(tmp_path: Path) -> None:
    """Damage in development, before the commit git holds: salvage still copies the prefix
    (exit 0) but warns that git holds a commit past it and that resume would stop; resume
    then stops (exit 1) with the reconciliation's message, writes nothing, commits nothing."""
    root = tmp_path / "ws"
    run_id = _completed(root)
    damaged = WorkspaceLayout(root=root).store
    cut = _position(damaged, run_id, CommitCreated) - 8
    _damage(damaged, cut)
    new = tmp_path / "salvaged.db"
    salvaged = ralph("salvage", "--to", str(new), cwd=root)
    assert salvaged.returncode == 0, _said(salvaged)
    said = _said(salvaged)
    assert f"kept {cut} of {EVENTS} events" in said
    assert "git holds 1 commit(s) of this run its log does not record" in said
    assert "ralph resume would stop: the workspace and the kept events disagree" in said
    held = _events(new, run_id)

    resumed = ralph("resume", run_id, "--store", str(new), cwd=root)
    assert resumed.returncode == 1, _said(resumed)
    assert "git holds 1 commit(s) of this run its log does not record" in _said(resumed)
    assert _events(new, run_id) == held
    assert not any(isinstance(e, RunResumed) for e in held)
    assert len(commits_in_git(root)) == 1
    _no_traceback(salvaged, resumed)


def test_an_undamaged_run_is_copied_whole_and_says_nothing_was_damaged(
    tmp_path: Path, completed: tuple[Path, str]
) -> None:
    """Salvaging a run that reads whole copies every event (exit 0) and says so; the fact
    records that nothing was damaged, and the complete run is not offered to resume."""
    root = tmp_path / "ws"
    run_id = _copy_of(completed, root)
    new = tmp_path / "copy.db"
    copied = ralph("salvage", "--to", f"sqlite:///{new}", cwd=root)
    assert copied.returncode == 0, _said(copied)
    assert f"kept all {EVENTS} of {EVENTS} events; nothing was damaged" in _said(copied)
    assert "nothing to resume" in _said(copied)
    events = _events(new, run_id)
    assert events[:-1] == _events(WorkspaceLayout(root=root).store, run_id)
    assert isinstance(events[-1], RunSalvaged)
    assert events[-1].reason == "nothing was damaged: every event was copied"
    assert fold(events).ledger.anomalies == 0


def test_rows_beyond_the_head_are_not_kept(tmp_path: Path, completed: tuple[Path, str]) -> None:
    """A head one short of the rows (damage): the prefix is what the head counts."""
    root = tmp_path / "ws"
    run_id = _copy_of(completed, root)
    damaged = WorkspaceLayout(root=root).store
    with sqlite3.connect(damaged) as db:
        db.execute("UPDATE runs SET head = head - 1")
    db.close()
    new = tmp_path / "salvaged.db"
    salvaged = ralph("salvage", "--to", str(new), cwd=root)
    assert salvaged.returncode == 0, _said(salvaged)
    assert f"kept {EVENTS - 1} of {EVENTS - 1} events; damage at {EVENTS - 1}" in _said(salvaged)
    assert len(_events(new, run_id)) == EVENTS


def test_bad_requests_exit_with_the_documented_codes_and_change_nothing(
    tmp_path: Path, completed: tuple[Path, str]
) -> None:
    """--to naming the damaged store, a store holding the run, an unknown run and a missing
    store are bad input (exit 2); a file that is no store, and a run whose first event is
    damaged, are store errors (exit 4) and leave no new file. No traceback, no byte of the damaged
    store changed."""
    root = tmp_path / "ws"
    run_id = _copy_of(completed, root)
    damaged = WorkspaceLayout(root=root).store
    _damage(damaged, 20)
    before = _digest(damaged)
    itself = ralph("salvage", "--to", str(damaged), cwd=root)
    assert itself.returncode == 2, _said(itself)
    assert "the damaged store itself" in _said(itself)

    new = tmp_path / "salvaged.db"
    assert ralph("salvage", "--to", str(new), cwd=root).returncode == 0
    again = ralph("salvage", "--to", str(new), cwd=root)
    assert again.returncode == 2, _said(again)
    assert f"holds run {run_id} already" in _said(again)

    unknown = ralph("salvage", "nope", "--to", str(tmp_path / "other.db"), cwd=root)
    assert unknown.returncode == 2, _said(unknown)
    assert "no run 'nope'" in _said(unknown)
    missing = ralph("salvage", "--store", str(tmp_path / "none.db"), "--to", "x.db", cwd=root)
    assert missing.returncode == 2, _said(missing)
    assert "no event store at" in _said(missing)
    no_to = ralph("salvage", cwd=root)
    assert no_to.returncode == 2
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not a database, not at all " * 100)
    unreadable = ralph("salvage", "--store", str(garbage), "--to", "y.db", cwd=root)
    assert unreadable.returncode == 4, _said(unreadable)
    assert "damaged" in _said(unreadable)
    assert not (root / "y.db").exists()

    assert _digest(damaged) == before, "a refused salvage wrote to the damaged store"

    _damage(damaged, 0)
    first = ralph("salvage", "--to", str(tmp_path / "first.db"), cwd=root)
    assert first.returncode == 4, _said(first)
    assert "nothing to salvage" in _said(first)
    assert not list(tmp_path.glob("first.db*")), "a failed salvage left a store behind"
    assert not (tmp_path / "other.db").exists()
    _no_traceback(itself, again, unknown, missing, no_to, unreadable, first)


@pytest.mark.slow
def test_a_damaged_postgresql_run_is_salvaged_into_sqlite_and_back_without_its_password(
    tmp_path: Path, postgres: PostgresServer, postgres_url: str
) -> None:
    """A run kept in PostgreSQL (its URL with a password) with one event's row deleted:
    salvaged into a SQLite file, the fact names the server without the
    password; that run salvaged again into another PostgreSQL database resumes there."""
    secret_url = postgres_url.replace("ralph@", "ralph:s3cret-pass-9@", 1)
    root = tmp_path / "ws"
    run_id = _completed(root, store=secret_url)
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("DELETE FROM events WHERE run_id = %s AND sequence = 30", (run_id,))
    new = tmp_path / "salvaged.db"
    salvaged = ralph("salvage", "--store", secret_url, "--to", str(new), cwd=root)
    assert salvaged.returncode == 0, _said(salvaged)
    assert f"kept 30 of {EVENTS} events; damage at 30: " in _said(salvaged)
    assert "event 30 is missing" in _said(salvaged)
    assert "s3cret-pass-9" not in salvaged.stdout + salvaged.stderr
    fact = _events(new, run_id)[-1]
    assert isinstance(fact, RunSalvaged)
    assert fact.source.startswith("postgresql://")
    assert "s3cret" not in fact.source
    assert "s3cret" not in new.read_bytes().decode("utf-8", "replace")

    # Into PostgreSQL: a second database on the same server.
    target = postgres.new_database()
    back = ralph("salvage", "--store", str(new), "--to", target, cwd=root)
    assert back.returncode == 0, _said(back)
    assert "kept all 31 of 31 events; nothing was damaged" in _said(back)
    resumed = ralph("resume", run_id, "--store", target, "--quiet", cwd=root)
    assert resumed.returncode == 0, _said(resumed)
    events = _events(target, run_id)
    assert fold(events).phase is Phase.COMPLETE
    assert [type(e) for e in events].count(RunSalvaged) == 2
    assert len(commits_in_git(root)) == 1
    assert ralph("replay", target, "--verify", cwd=tmp_path).returncode == 0
