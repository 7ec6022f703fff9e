"""The lean ``status`` and ``respond`` paths attacked at their seams: after a fork, a
salvage, a migration and a rebuild of the projections, with two runs in one store, a
checkpoint the fold would skip, a configuration the run did not start with, a question timed
out or answered, each either answers as the full command does (stdout, stderr, exit status)
or steps aside."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import attrs
import pytest

from pipeline.app.cli import _respond_quick
from pipeline.app.cli._lean_store import CHECKPOINT_FORMAT
from pipeline.app.cli._status_quick import (
    ASIDE,
    COMMIT_CREATED,
    SANDBOX_CHECKED,
)
from pipeline.core.serialization._checkpoint import CHECKPOINT_FORMAT as STORE_CHECKPOINT_FORMAT
from pipeline.events import (
    WIRE_TAGS,
    ChangesScreened,
    CommitCreated,
    ConnectionRefused,
    HumanQuestionAsked,
    PipelineEvent,
    RunForked,
    RunId,
    RunStarted,
    SandboxChecked,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.cli.test_cli import RALPH, ralph
from tests.cli.test_quick_commands import _probed
from tests.cli.test_salvage import _completed
from tests.cli.test_sandbox_shown import _refused, _sandboxed
from tests.cli.test_status_quick import _both, _hand_run
from tests.runtime.test_loop_control import QUESTION, _pending, workspace
from tests.runtime.workspace import start_ralph, stored_events
from tests.views.test_sandbox import ON

_HEAVY = {"typer", "pipeline.events", "cattrs"}
"""What the lean paths do without: an answer with none of them loaded was a lean one."""


def _copy(demo: Path, to: Path) -> tuple[Path, sqlite3.Connection]:
    """A copy of the demo's workspace at ``to``, and its store opened to edit."""
    shutil.copytree(demo, to, symlinks=True)
    return to, sqlite3.connect(to / ".git" / "ralph" / "pipeline.db", isolation_level=None)


def _respond_both(root: Path, *argv: str) -> tuple[bool, str]:
    """Whether ``ralph respond ARGV`` in ``root`` is answered lean, having checked that it
    says what the full command (``--workspace .``) says, exit status and both streams; only
    for a call that changes nothing (a refusal)."""
    plain, modules = _probed(root, "respond", *argv)
    full = ralph("respond", *argv, "--workspace", ".", cwd=root)
    assert (plain.returncode, plain.stdout, plain.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    )
    return not _HEAVY & modules, full.stderr


def test_a_checkpoint_the_fold_would_skip_is_left_to_the_full_command(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """A newest checkpoint of another format, or claiming other events than it holds (its
    checksum good), is skipped by the fold with a warning: the lean path steps aside, so the
    warning is said (it printed the table without it before)."""
    edits = {
        "format": "format_version = format_version + 1",
        "claim": "sequence = sequence - 1",
    }
    for name, edit in edits.items():
        root, db = _copy(demo_dir, tmp_path / name)
        newest = "(SELECT MAX(sequence) FROM checkpoints)"
        db.execute(f"UPDATE checkpoints SET {edit} WHERE sequence = {newest}")
        lean, shown = _both(root)
        assert not lean
        assert "rebuilding from the event log instead" in shown.stderr


def test_the_lean_checkpoint_format_is_the_stores() -> None:
    """The lean path reads checkpoints of the format this release writes."""
    assert CHECKPOINT_FORMAT == STORE_CHECKPOINT_FORMAT


def test_a_fork_and_its_source_are_shown_as_the_full_command_shows_them(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """After ``ralph fork``, the source run (latest and named) and the fork in its own
    worktree are shown the same by both paths; the fork's by the full command."""
    root, db = _copy(demo_dir, tmp_path / "source")
    (source,) = db.execute("SELECT run_id FROM runs").fetchone()
    forked = ralph("fork", "--at", "40", "--to", str(tmp_path / "fork"), cwd=root)
    assert forked.returncode == 0, forked.stderr
    assert _both(root)[0]
    assert _both(root, "--run", source)[0]
    assert not _both(tmp_path / "fork")[0]


def test_a_salvaged_run_is_shown_as_the_full_command_shows_it(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """A damaged run salvaged into a new store that becomes the workspace's is answered
    lean (its status whole: the salvage appended its good prefix), as the full command."""
    root, db = _copy(demo_dir, tmp_path / "damaged")
    db.execute("UPDATE events SET body = CAST(body || ' ' AS BLOB) WHERE sequence = 60")
    db.close()
    state = root / ".git" / "ralph"
    salvaged = ralph("salvage", "--to", str(state / "new.db"), cwd=root)
    assert salvaged.returncode == 0, salvaged.stderr
    (state / "new.db").replace(state / "pipeline.db")
    lean, shown = _both(root)
    assert lean
    assert "│ salvaged " in shown.stdout


def test_a_store_migrated_from_schema_8_is_left_to_the_full_command_until_rebuilt(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """A store at schema 8 (no ``run_status``), then migrated (the table empty), is shown by
    the full command; ``ralph projections rebuild`` fills the table from the events and the
    lean path answers, the same."""
    root, db = _copy(demo_dir, tmp_path / "old")
    db.execute("DROP TABLE run_status")
    db.execute("DELETE FROM schema_migrations WHERE version = 9")
    db.close()
    assert not _both(root)[0]
    rebuilt = ralph("projections", "rebuild", cwd=root)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert _both(root)[0]


def test_two_runs_in_one_store_are_chosen_as_the_full_command_chooses(tmp_path: Path) -> None:
    """With two runs in the store begun at the same instant (the order their logs began
    decides), the latest and each named one are shown the same by both paths."""
    first = _hand_run(tmp_path / "ws", _sandboxed())
    log = [event for event in _sandboxed() if not isinstance(event, CommitCreated)]
    start = log[0]
    assert isinstance(start, RunStarted)
    second = attrs.evolve(start, run_id=RunId(f"{first}-b"))
    with SqliteEventStore(WorkspaceLayout(root=tmp_path / "ws").store) as store:
        store.append(second.run_id, 0, (second, *log[1:]))
    lean, shown = _both(tmp_path / "ws")
    assert lean
    assert f"Run {second.run_id}" in shown.stdout
    for run in (first, second.run_id):
        lean, shown = _both(tmp_path / "ws", "--run", run)
        assert lean
        assert f"Run {run} " in shown.stdout


def test_a_configuration_the_run_did_not_start_with_is_left_to_the_full_command(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """A ``ralph.toml`` edited since the run began (here into one the full command refuses)
    is left to the full command, which says what is wrong with it (the lean path said the
    run waits on nothing before)."""
    root, _db = _copy(demo_dir, tmp_path / "edited")
    with (root / "ralph.toml").open("a") as config:
        config.write("\nbogus_key = 1\n")
    lean, said = _respond_both(root, "yes", "--question", "q0")
    assert not lean
    assert "unknown key" in said


# A whole run in a subprocess, waiting on a person: slow. The fast loop keeps the seam on the
# demo's copy (a configuration the run did not start with is left to the full command) and a
# waiting run answered lean (tests/cli/test_respond_quick.py).
@pytest.mark.slow
def test_an_answer_is_not_posted_lean_past_a_configuration_the_full_command_refuses(
    tmp_path: Path,
) -> None:
    """While a run waits, its ``ralph.toml`` made invalid: ``ralph respond`` refuses as the
    full command does and keeps no answer (the lean path posted it before); the status of
    the waiting run is the same on both paths."""
    root = workspace(tmp_path, QUESTION, loop="human_timeout_s = 120")
    process = start_ralph("run", cwd=root)
    try:
        _run_id, question = _pending(root)
        assert _both(root)[0]  # a run in progress, waiting: answered lean, the same
        config = (root / "ralph.toml").read_text()
        (root / "ralph.toml").write_text(config + "\nbogus_key = 1\n")
        lean, said = _respond_both(root, "Use SQLite", "--question", question.question_id)
        assert not lean
        assert "unknown key" in said
        store = root / ".git" / "ralph" / "pipeline.db"
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT COUNT(*) FROM inbox WHERE kind = 'answer'").fetchone() == (0,)
        (root / "ralph.toml").write_text(config)
        answered = ralph("respond", "Use SQLite", "--question", question.question_id, cwd=root)
        assert answered.returncode == 0, answered.stderr
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, out + err
    lean, said = _respond_both(root, "Use SQLite", "--question", question.question_id)
    assert lean
    assert "is not waiting for an answer" in said


def test_an_answer_that_is_not_text_is_left_to_the_full_command(
    demo_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An answer whose bytes are not UTF-8 (lone surrogates once in ``sys.argv``) is left to
    the full command before the store is read: SQLite cannot keep it, and the lean path
    ended in its own traceback where it would post it."""
    monkeypatch.chdir(demo_dir)
    assert _respond_quick.main(["a\udcff", "--question", "q0"]) is None
    assert _respond_quick.main(["a", "--question", "q0"]) == 2  # the same, as text: refused
    # The full command refuses it in a sentence (it ended in a UnicodeEncodeError traceback).
    argv = [os.fsencode(part) for part in (*RALPH, "respond", "a\udcff", "--question", "q0")]
    done = subprocess.run(argv, cwd=demo_dir, capture_output=True, check=False)
    assert done.returncode == 2
    assert b"not UTF-8 text" in done.stderr
    assert b"Traceback" not in done.stderr


def test_what_the_work_tree_names_steers_both_paths_alike(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """A ``ralph.toml`` naming another store leaves ``status`` on the workspace's own store
    on both paths, and ``respond`` (which takes it) to the full command; a store left at the
    legacy ``.ralph/pipeline.db`` (read first while it exists, as the layout says) is read
    by both paths alike."""
    root, _db = _copy(demo_dir, tmp_path / "named")
    with (root / "ralph.toml").open("a") as config:
        config.write('\n[store]\nurl = "elsewhere.db"\n')
    assert _both(root)[0]
    lean, _said = _respond_both(root, "yes", "--question", "q0")
    assert not lean
    planted = _hand_run(tmp_path / "planted", _sandboxed())
    root, _db = _copy(demo_dir, tmp_path / "legacy")
    shutil.copy(WorkspaceLayout(root=tmp_path / "planted").store, root / ".ralph" / "pipeline.db")
    lean, shown = _both(root)
    assert lean
    assert f"Run {planted}" in shown.stdout


def test_facts_appended_without_the_status_projection_are_read_from_the_log(
    tmp_path: Path,
) -> None:
    """Facts appended by a store that keeps no ``run_status`` (an embedder's choice of
    projections), then a later append bringing the status to the head: a refused connection,
    a newer sandbox check or a commit among them leaves its part missing or stale, and the
    lean path steps aside, the full command showing them."""
    log = _sandboxed(_refused("example.org:443", 2))
    plain = [e for e in log if not isinstance(e, ConnectionRefused | CommitCreated)]
    refused = next(event for event in log if isinstance(event, ConnectionRefused))
    later = attrs.evolve(ON, said=f"{ON.said} (checked again)")
    hiddens: dict[str, PipelineEvent] = {"refused": refused, "sandbox": later}
    for name, hidden in hiddens.items():
        root = tmp_path / name
        run_id = RunId(_hand_run(root, plain[:2]))
        store = WorkspaceLayout(root=root).store
        with SqliteEventStore(store, projections=()) as bare:
            bare.append(run_id, 2, (hidden,))
        with SqliteEventStore(store) as whole:
            whole.append(run_id, 3, plain[2:])
        lean, shown = _both(root)
        assert not lean, name
        assert ("example.org:443" if name == "refused" else "checked again") in shown.stdout


def test_the_facts_the_lean_status_reads_from_the_log_are_named_by_their_tags() -> None:
    """The tags the lean status looks for in the log are the events' own."""
    assert {WIRE_TAGS[ConnectionRefused], WIRE_TAGS[ChangesScreened], WIRE_TAGS[RunForked]} == ASIDE
    assert WIRE_TAGS[SandboxChecked] == SANDBOX_CHECKED
    assert WIRE_TAGS[CommitCreated] == COMMIT_CREATED


# A whole run in a subprocess that waits out a person's timeout: slow. The fast loop keeps the
# lean refusal in the full command's words on the demo's finished run
# (tests/cli/test_respond_quick.py).
@pytest.mark.slow
def test_a_question_that_timed_out_is_refused_as_the_full_command_refuses_it(
    tmp_path: Path,
) -> None:
    """A question whose deadline passed (the run recorded the timeout and went on to its
    end) is refused lean in the full command's words, its id and the run's named alike."""
    root = workspace(tmp_path, QUESTION, loop="human_timeout_s = 1")
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    (asked,) = [e for e in stored_events(root) if isinstance(e, HumanQuestionAsked)]
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        (run,) = store.runs()
    for argv in ((), ("--run", run.run_id)):
        lean, said = _respond_both(root, "Use SQLite", "--question", asked.question_id, *argv)
        assert lean
        assert "is not waiting for an answer" in said


# A whole run into PostgreSQL, then copied: slow. The fast loop keeps a salvaged run shown alike
# (the demo's copy, above).
@pytest.mark.slow
def test_a_run_kept_in_postgresql_and_copied_into_the_workspaces_store_is_shown_alike(
    tmp_path: Path,
    postgres_url: str,
) -> None:
    """A run kept in PostgreSQL (which keeps no ``run_status``), copied whole into the
    workspace's SQLite store by ``ralph salvage``, is shown the same by both paths: the copy
    is appended as the store appends, its status with it."""
    root = tmp_path / "ws"
    _completed(root, store=postgres_url)
    store = WorkspaceLayout(root=root).store
    copied = ralph("salvage", "--store", postgres_url, "--to", str(store), cwd=root)
    assert copied.returncode == 0, copied.stderr
    lean, shown = _both(root)
    assert lean
    assert "│ salvaged " in shown.stdout


def test_runs_leaves_a_log_its_fold_would_report_to_the_full_command(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """``ralph runs`` folds each run from its newest checkpoint: a checkpoint it skips (a
    warning) or damage after it (an error, exit 4) is said by the full command, which the
    lean path left unsaid before, printing the summaries; damage before the checkpoint,
    which the fold never reads, is listed alike by both."""
    edits = {
        "format": "UPDATE checkpoints SET format_version = format_version + 1",
        "tail": "UPDATE events SET body = CAST(body || ' ' AS BLOB) WHERE sequence = 95",
        "early": "UPDATE events SET body = CAST(body || ' ' AS BLOB) WHERE sequence = 30",
    }
    for name, edit in edits.items():
        root, db = _copy(demo_dir, tmp_path / name)
        db.execute(edit)
        db.close()
        lean, modules = _probed(root, "runs")
        # The same file by URL, which only the full command reads; its title the same.
        full = ralph("runs", "sqlite:///.git/ralph/pipeline.db", cwd=root)
        assert (lean.returncode, lean.stdout, lean.stderr) == (
            full.returncode,
            full.stdout,
            full.stderr,
        ), name
        assert bool(_HEAVY & modules) == (name != "early"), name
