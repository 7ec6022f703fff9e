"""The ``ralph`` command line, run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from pipeline.core.serialization import decode_event, decode_state
from pipeline.core.state import Phase, TerminationReason
from pipeline.events import SCHEMA_VERSION, Role, UsageReported
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from pipeline.reducers import fold

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

RALPH = [sys.executable, "-m", "pipeline.app.cli"]


def ralph(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``ralph`` with ``args`` (stdout is a pipe, so not a terminal)."""
    return run_like_ralph(cwd, *RALPH, *args)


def run_like_ralph(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (``ralph``, or a probe that runs it) in the environment :func:`ralph`
    gives it."""
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_demo_completes_and_its_log_folds_to_the_state_it_wrote(demo_dir: Path) -> None:
    """Exit 0; the event log folds to a complete run equal to the stored final state."""
    lines = (demo_dir / ".ralph" / "event-log.jsonl").read_bytes().splitlines()
    state = fold(decode_event(line) for line in lines)
    assert state.phase is Phase.COMPLETE
    assert state.termination is TerminationReason.COMPLETED
    assert state == decode_state((demo_dir / ".ralph" / "state.json").read_bytes())
    assert state.ledger.commits == 3
    assert state.ledger.agent_failures >= 2
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=demo_dir, capture_output=True, text=True, check=True
    )
    subjects = log.stdout.splitlines()
    assert subjects[0] == "Trim dashes at both ends of a slug"
    assert len(subjects) == 4  # the task's commit and the run's three
    clean = subprocess.run(
        ["git", "status", "--porcelain"], cwd=demo_dir, capture_output=True, text=True, check=True
    )
    assert clean.stdout == ""  # every change committed, ralph's own files kept out of git


def test_the_demos_agent_reports_its_usage_and_cost(demo_dir: Path) -> None:
    """Each invocation that finished reports the tokens and the cost the script gave it (the
    planner's: 2,400 in, 310 out, $0.0127), read from the output format it imitates."""
    lines = (demo_dir / ".ralph" / "event-log.jsonl").read_bytes().splitlines()
    facts = [e for e in map(decode_event, lines) if isinstance(e, UsageReported)]
    planner = next(f for f in facts if f.role is Role.PLANNER)
    assert (planner.input_tokens, planner.output_tokens, planner.cost_usd) == (2_400, 310, 0.0127)
    assert all(f.cost_usd is not None for f in facts)


def test_demo_shows_retry_fallback_and_review_fix(demo_dir: Path) -> None:
    """The demo's progress shows the decisions it exists to show."""
    stdout = (demo_dir.parent / "stdout.txt").read_text()
    assert "agent.backoff_waited" in stdout
    assert "agent=absent error=not_found" in stdout  # the fallback
    assert "agent=scripted error=non_zero_exit" in stdout  # the retried crash
    assert "review.review_issues_found" in stdout
    assert "review.fix_attempt_completed" in stdout
    assert "validation.final_validation_passed" in stdout
    assert "Exit status 0: completed" in stdout


def test_output_to_a_pipe_has_no_control_sequences(demo_dir: Path) -> None:
    """Not a terminal: no colour or cursor codes in the output."""
    assert "\x1b" not in (demo_dir.parent / "stdout.txt").read_text()


def test_demo_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    """An existing non-empty directory is left alone, with a one-line error and exit 2."""
    target = tmp_path / "busy"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    result = ralph("demo", str(target), cwd=tmp_path)
    assert result.returncode == 2
    assert "exists and is not empty" in result.stderr
    assert (target / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]


def test_replay_against_passes_in_another_process(demo_dir: Path) -> None:
    """``replay LOG --against STATE`` in a fresh process (another hash seed) matches."""
    result = ralph(
        "replay", ".ralph/event-log.jsonl", "--against", ".ralph/state.json", cwd=demo_dir
    )
    assert result.returncode == 0, result.stderr
    assert "verified" in result.stdout


def test_replay_verify_checks_every_stored_checkpoint(demo_dir: Path) -> None:
    """In the demo's workspace, ``ralph replay --verify`` reads the default store."""
    result = ralph("replay", "--verify", cwd=demo_dir)
    assert result.returncode == 0, result.stderr
    checked = int(result.stdout.split("all ")[1].split()[0])
    state = decode_state((demo_dir / ".ralph" / "state.json").read_bytes())
    assert checked == state.checkpoints.count > 5


def test_replay_verify_reports_a_corrupted_checkpoint(demo_dir: Path, tmp_path: Path) -> None:
    """A flipped byte in a stored checkpoint: reported with its sequence, exit 1."""
    import shutil
    import sqlite3

    copy = tmp_path / "pipeline.db"
    shutil.copy(WorkspaceLayout(root=demo_dir).store, copy)
    db = sqlite3.connect(copy)
    sequence, body = db.execute("SELECT sequence, body FROM checkpoints LIMIT 1").fetchone()
    damaged = bytearray(body)
    damaged[10] ^= 0x20
    db.execute("UPDATE checkpoints SET body = ? WHERE sequence = ?", (bytes(damaged), sequence))
    db.commit()
    db.close()
    result = ralph("replay", str(copy), "--verify", cwd=tmp_path)
    assert result.returncode == 1
    assert f"checkpoint {sequence}: checksum mismatch" in result.stderr


def test_runs_lists_the_demo_run(demo_dir: Path) -> None:
    """``ralph runs`` shows the run with its number of events."""
    result = ralph("runs", cwd=demo_dir)
    assert result.returncode == 0, result.stderr
    state = decode_state((demo_dir / ".ralph" / "state.json").read_bytes())
    assert state.run is not None
    assert state.run.run_id in result.stdout
    assert str(state.sequence) in result.stdout


def test_an_unknown_run_is_named_with_the_runs_there_are(demo_dir: Path) -> None:
    """``--run`` with a wrong id: exit 2, listing the store's runs."""
    result = ralph("events", "--run", "nope", cwd=demo_dir)
    assert result.returncode == 2
    assert "no run 'nope'" in result.stderr


def test_replay_without_a_store_creates_none(tmp_path: Path) -> None:
    """No store in the workspace: a clear error, and no empty store is left behind."""
    result = ralph("replay", cwd=tmp_path)
    assert result.returncode == 2
    assert "no event store at .ralph/pipeline.db" in result.stderr
    assert not (tmp_path / ".ralph").exists()


def test_replay_against_fails_on_a_different_state(demo_dir: Path, tmp_path: Path) -> None:
    """A state file that is not the fold of the log is reported, exit 1."""
    partial = ralph(
        "replay",
        str(demo_dir / ".ralph" / "event-log.jsonl"),
        "--until",
        "10",
        "--json",
        cwd=tmp_path,
    )
    assert partial.returncode == 0
    (tmp_path / "other.json").write_text(partial.stdout)
    result = ralph(
        "replay",
        str(demo_dir / ".ralph" / "event-log.jsonl"),
        "--against",
        "other.json",
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert "differs" in result.stderr


def test_replay_until_folds_a_prefix(demo_dir: Path) -> None:
    """``--until N`` folds exactly the first N events."""
    result = ralph("replay", ".ralph/event-log.jsonl", "--until", "5", "--json", cwd=demo_dir)
    assert result.returncode == 0
    assert orjson.loads(result.stdout)["sequence"] == 5


def test_replay_of_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    """A missing log: one line naming the file, exit 2."""
    result = ralph("replay", "nope.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert "cannot read the event log nope.jsonl" in result.stderr
    assert "Traceback" not in result.stderr


def test_replay_of_a_bad_line_names_the_file_and_line(demo_dir: Path, tmp_path: Path) -> None:
    """A line that is not an event is reported with its file and line number, exit 2."""
    log = tmp_path / "broken.jsonl"
    good = (demo_dir / ".ralph" / "event-log.jsonl").read_bytes().splitlines()
    log.write_bytes(b"\n".join([good[0], good[1], b'{"type": "agent.nope"}']) + b"\n")
    result = ralph("replay", str(log), cwd=tmp_path)
    assert result.returncode == 2
    assert "broken.jsonl:3: unknown type tag 'agent.nope'" in result.stderr


def test_events_jsonl_prints_every_event_with_its_tag(demo_dir: Path) -> None:
    """``events --format jsonl`` prints one decodable event per line of the log."""
    result = ralph("events", ".ralph/event-log.jsonl", "--format", "jsonl", cwd=demo_dir)
    assert result.returncode == 0
    printed = result.stdout.splitlines()
    stored = (demo_dir / ".ralph" / "event-log.jsonl").read_bytes().splitlines()
    assert len(printed) == len(stored)
    assert [decode_event(p) for p in printed] == [decode_event(s) for s in stored]


def test_topics_lists_what_the_demo_agents_published_and_what_was_rejected(
    demo_dir: Path,
) -> None:
    """The demo's scripted agents publish topics and write one broken line: ``topics`` shows
    them in file order, the broken one as event.malformed, the refused early completion with
    its task.resume notice, and the reviewer's out-of-scope topic as its scope violation."""
    table = ralph("topics", cwd=demo_dir)
    assert table.returncode == 0, table.stderr
    shown = [line.split()[2] for line in table.stdout.splitlines()]
    assert shown == [
        "plan.ready",
        "event.malformed",
        "build.progress",
        "LOOP_COMPLETE",
        "task.resume",
        "reviewer.scope_violation",
        "review.fixed",
        "review.clean",
    ]
    as_json = ralph("topics", "--format", "jsonl", cwd=demo_dir)
    entries = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [e["line_number"] for e in entries] == [1, 2, 3, 4, 4, 5, 6, 7]
    assert entries[5]["payload"] == (
        "Attempted to publish 'build.done': \"marking the build done myself\""
    )
    assert entries[1]["payload"]["content"] == '{"topic": "build.progress", half a line'
    assert entries[0]["payload"] == "2 steps"


def test_topics_of_a_missing_log_is_a_usage_error(tmp_path: Path) -> None:
    """A log that does not exist: a clear message and exit 2."""
    result = ralph("topics", str(tmp_path / "nope.jsonl"), cwd=tmp_path)
    assert result.returncode == 2
    assert "nope.jsonl" in result.stderr


def test_events_with_an_unknown_format_is_a_usage_error(demo_dir: Path) -> None:
    """A bad option value exits 2 with typer's message."""
    result = ralph("events", ".ralph/event-log.jsonl", "--format", "xml", cwd=demo_dir)
    assert result.returncode == 2
    assert "xml" in result.stderr


@pytest.mark.slow
def _start_run(db: Path, delay: float, gate: str | None = None) -> subprocess.Popen[str]:
    """A crash worker running a simulated pipeline into ``db`` in another process, ``delay``
    seconds per handler step (``gate``: ``PATH:N``, stop after N facts until PATH exists);
    returned once it is ready."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ) if gate is None else {**os.environ, "CRASH_GATE": gate}
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.crash_worker", str(db), "7", str(delay)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "ready"
    return worker


def _wait_for_events(db: Path, more_than: int) -> int:
    """Wait (60 s at most: a loaded machine is slow) until the run in ``db`` holds more than
    ``more_than`` events; how many it holds then (0 if it never did)."""
    for _ in range(1200):
        if db.exists():
            with SqliteEventStore(db) as store:
                runs = store.runs()
            if runs and runs[0].events > more_than:
                return runs[0].events
        time.sleep(0.05)
    return 0


def test_events_and_replay_read_a_run_in_progress(tmp_path: Path) -> None:
    """While another process is still appending, ``ralph events`` and ``replay`` read it."""
    db = tmp_path / "pipeline.db"
    # Held after its 21st fact until ``go`` exists: in progress for as long as the reading
    # takes, which on a loaded machine may outlast the rest of a run paced by its delay.
    go = tmp_path / "go"
    worker = _start_run(db, 0.01, gate=f"{go}:21")
    try:
        assert _wait_for_events(db, 20) > 20
        shown = ralph("events", str(db), "--format", "jsonl", cwd=tmp_path)
        folded = ralph("replay", str(db), "--json", cwd=tmp_path)
        assert worker.poll() is None, "the run finished before it could be read in progress"
        go.touch()  # the run goes on: its appends follow the reading
        assert _wait_for_events(db, 21) > 21
    finally:
        worker.kill()
        worker.wait()
    assert shown.returncode == 0, shown.stderr
    assert folded.returncode == 0, folded.stderr
    assert len(shown.stdout.splitlines()) >= 1
    assert orjson.loads(folded.stdout)["sequence"] >= len(shown.stdout.splitlines())


def test_an_event_from_a_newer_schema_is_a_clear_error(demo_dir: Path, tmp_path: Path) -> None:
    """A stored event of a schema this release cannot read: one line, exit 2, no traceback."""
    import shutil
    import sqlite3

    copy = tmp_path / "pipeline.db"
    shutil.copy(WorkspaceLayout(root=demo_dir).store, copy)
    db = sqlite3.connect(copy)
    newer = SCHEMA_VERSION + 1
    db.execute("UPDATE events SET schema_version = ? WHERE sequence = 3", (newer,))
    db.commit()
    db.close()
    result = ralph("replay", str(copy), cwd=tmp_path)
    assert result.returncode == 2
    assert f"schema version {newer}, by a newer release" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("reason", list(TerminationReason), ids=lambda r: r.value)
def test_the_cli_exits_with_each_reasons_code_and_says_when_exit_0_is_no_success(
    reason: TerminationReason, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary `ralph run` prints ends in the reason's exit code (the table in
    termination.md, checked against the code in tests/architecture), and a zero exit that is
    no success (cancelled) says so."""
    import attrs
    import typer

    from pipeline.app.cli._driving import _finish
    from pipeline.app.cli._progress import Display
    from pipeline.app.workspace import Workspace
    from pipeline.core.config import RalphConfig
    from pipeline.core.state import PipelineState
    from pipeline.engine import DurableRun
    from pipeline.events import Digest, RunId
    from pipeline.handlers.runtime import WorkspaceLayout

    state = PipelineState()
    state = attrs.evolve(
        state, progress=attrs.evolve(state.progress, phase=Phase.COMPLETE, termination=reason)
    )
    workspace = Workspace(
        layout=WorkspaceLayout(root=tmp_path),
        config=RalphConfig(),
        config_digest=Digest("d"),
        schemas={},
    )
    exit_ = _finish(
        workspace,
        DurableRun(run_id=RunId("r"), state=state, resumed_from=None, effects=0),
        Display.PLAIN,
        "s.db",
    )
    assert isinstance(exit_, typer.Exit)
    assert exit_.exit_code == reason.exit_code
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"Exit status {reason.exit_code}: {reason.value}")
    assert last.endswith("(not a success)") is (reason.exit_code == 0 and not reason.is_success)


def test_the_demo_tells_each_hat_what_concerns_it_in_its_next_prompt(demo_dir: Path) -> None:
    """The developer's refused completion reaches the developer's next prompt (the review
    fix); the reviewer's scope violation reaches the reviewer's next one (the second pass)."""
    prompts = demo_dir / ".agent" / "prompts"
    fix, review = (prompts / "review_fix.md").read_text(), (prompts / "review.md").read_text()
    assert "- `task.resume`: Completion refused: required events not yet seen: review.clean" in fix
    assert "scope_violation" not in fix
    assert "- `reviewer.scope_violation`: Attempted to publish 'build.done'" in review
    assert "task.resume" not in review


def test_status_is_the_state_of_the_latest_run_from_its_checkpoint_and_tail(
    demo_dir: Path,
) -> None:
    """``status`` shows the phase, the termination and the counters; ``--json`` equals the
    full fold of the log (it reads the newest checkpoint and the events after it)."""
    shown = ralph("status", cwd=demo_dir)
    assert shown.returncode == 0, shown.stderr
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in _table(shown)}
    assert rows["phase"] == "complete"
    assert rows["termination"] == "completed"
    assert rows["commits"] == "3"
    assert int(rows["agent failures"]) >= 2
    as_json = ralph("status", "--json", cwd=demo_dir)
    assert decode_state(as_json.stdout.encode()) == decode_state(
        (demo_dir / ".ralph" / "state.json").read_bytes()
    )
    unknown = ralph("status", "--run", "nope", cwd=demo_dir)
    assert unknown.returncode == 2
    assert "no run 'nope'" in unknown.stderr
    nowhere = ralph("status", "-C", str(demo_dir / "src"), cwd=demo_dir)
    assert nowhere.returncode == 2
    assert "no event store" in nowhere.stderr


def _table(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The body rows of a rich table printed to a pipe."""
    return [line for line in result.stdout.splitlines() if line.count("│") == 3]


def test_events_category_keeps_the_named_categories_only(demo_dir: Path) -> None:
    """``--category`` (repeatable) filters by the wire tag's category; an unknown name is a
    usage error listing the categories."""
    everything = ralph("events", "--format", "jsonl", cwd=demo_dir).stdout.splitlines()
    chosen = ralph(
        "events", "--format", "jsonl", "--category", "agent", "--category", "commit", cwd=demo_dir
    )
    assert chosen.returncode == 0, chosen.stderr
    tags = [orjson.loads(line)["type"] for line in chosen.stdout.splitlines()]
    expected = [
        orjson.loads(line)["type"]
        for line in everything
        if orjson.loads(line)["type"].split(".")[0] in {"agent", "commit"}
    ]
    assert tags == expected
    assert {tag.split(".")[0] for tag in tags} == {"agent", "commit"}
    table = ralph("events", "--category", "review", cwd=demo_dir)
    assert table.returncode == 0
    assert table.stdout.splitlines()
    assert all(" review." in line for line in table.stdout.splitlines())
    wrong = ralph("events", "--category", "agents", cwd=demo_dir)
    assert wrong.returncode == 2
    assert "unknown category agents (known: lifecycle, planning" in wrong.stderr


def test_events_follow_reads_the_store_of_the_workspace_c_names(
    demo_dir: Path, tmp_path: Path
) -> None:
    """``events --follow -C DIR`` follows DIR's default store, as ``events -C DIR`` reads it,
    not the store of the folder it runs in (here a folder with none)."""

    def events(*more: str) -> subprocess.CompletedProcess[str]:
        argv = [*RALPH, "events", "-C", str(demo_dir), "--format", "jsonl", *more]
        return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    followed, read = events("--follow"), events()
    assert followed.returncode == 0, followed.stderr
    assert read.stdout
    assert followed.stdout == read.stdout


def test_events_follow_prints_a_run_in_progress_in_another_process_until_it_ends(
    tmp_path: Path,
) -> None:
    """``events --follow`` started while another process runs the pipeline prints the events
    appended after it started, as they come, and exits 0 when the run is complete; what it
    printed is the whole log. The run waits at a gate after 6 facts until the follower has
    printed its first line, so the order does not depend on the machine's load."""
    db = tmp_path / "pipeline.db"
    gate = tmp_path / "gate"
    worker = _start_run(db, 0.01, gate=f"{gate}:6")
    try:
        head_at_start = _wait_for_events(db, 5)
        errors = tmp_path / "follower.err"
        with errors.open("w") as err_file:
            follower = subprocess.Popen(
                [*RALPH, "events", str(db), "--follow", "--format", "jsonl"],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=err_file,
                text=True,
            )
        # Never communicate() after readline(): it reads the pipe's descriptor directly and
        # loses what readline() already buffered. A timer stands in for its timeout.
        watchdog = threading.Timer(120, follower.kill)
        watchdog.start()
        try:
            assert follower.stdout is not None
            first = follower.stdout.readline()
            still_running = worker.poll() is None
            gate.touch()  # the run goes on only now
            out = first + follower.stdout.read()
            follower.wait()
        finally:
            watchdog.cancel()
        assert worker.wait(timeout=120) == 0
    finally:
        worker.kill()
        worker.wait()
    assert follower.returncode == 0, errors.read_text()
    with SqliteEventStore(db) as store:
        (run,) = store.runs()
        stored = list(store.read(run.run_id))
    printed = [decode_event(line) for line in out.splitlines()]
    assert printed == stored
    assert 0 < head_at_start < len(stored) / 2, "the follower should start early in the run"
    assert still_running, "the run ended before the follower printed anything"
