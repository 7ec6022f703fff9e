"""Agent event intake end to end: real `ralph run`, real shell-script agents, real files."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from pipeline.core.serialization import decode_state
from pipeline.core.state import Phase, TerminationReason
from pipeline.events import (
    EventsFileRead,
    Json,
    OutputLineMalformed,
    RunCompleted,
    TopicPublished,
)
from pipeline.handlers.intake import read_marker
from pipeline.reducers import fold
from tests.runtime.workspace import (
    COUNT_CALLS,
    RALPH,
    ROOT,
    SHELL_REPORTS,
    events_of,
    make_workspace,
    ralph,
    run_here,
    stored_events,
    wait_for,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


def _agent(root: Path, body: str) -> list[str]:
    # Outside the repository: an untracked file in it would make `ralph run` refuse the tree.
    script = root.parent / "agent.sh"
    script.write_text("#!/bin/sh\nset -e\n" + body)
    script.chmod(0o755)
    return [str(script)]


def test_an_agent_that_emits_garbage_ends_the_run_with_validation_failure(
    tmp_path: Path,
) -> None:
    """Three malformed lines in a row: `ralph run` exits 1, says validation_failure, and the
    log holds every line whole and the reason the run ended."""
    root = tmp_path / "ws"
    root.mkdir()
    agent = _agent(
        root,
        'printf \'garbage one\\n{"topic": "bad topic!"}\\n[1, 2]\\n\' >> "$RALPH_EVENTS_FILE"\n'
        "exit 1\n",
    )
    make_workspace(root, scripts={}, agents={"main": agent}, budgets="max_retries_per_agent = 0")
    done = ralph("run", cwd=root)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "validation_failure" in done.stdout
    assert "Exit status 1: validation_failure" in done.stdout
    events = stored_events(root)
    malformed = [e for e in events if isinstance(e, OutputLineMalformed)]
    assert [(m.line_number, m.content) for m in malformed] == [
        (1, "garbage one"),
        (2, '{"topic": "bad topic!"}'),
        (3, "[1, 2]"),
    ]
    assert "letters, digits" in malformed[1].error
    assert malformed[2].error == "expected a JSON object, got list"
    completed = [e for e in events if isinstance(e, RunCompleted)]
    assert [c.reason for c in completed] == [TerminationReason.VALIDATION_FAILURE]


def test_the_next_prompt_tells_the_agent_which_lines_were_rejected(tmp_path: Path) -> None:
    """A first call writes a bad line and fails; the retry's prompt lists it (number, error,
    content); later prompts do not repeat it; `ralph emit` from the agent lands in the log with
    its JSON payload; and `ralph topics` shows both the topic and event.malformed."""
    root = tmp_path / "ws"
    root.mkdir()
    agent = _agent(
        root,
        COUNT_CALLS
        + 'if [ "$n" -eq 1 ]; then\n'
        + "  printf 'this is not json\\n' >> \"$RALPH_EVENTS_FILE\"\n"
        + "  exit 1\n"
        + "fi\n"
        + SHELL_REPORTS
        + "ralph emit build.done '{\"tests\": 3}' --json\n",
    )
    make_workspace(root, scripts={}, agents={"main": agent})
    done = ralph("run", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    first = (root / ".ralph" / "prompt-1.md").read_text()
    retry = (root / ".ralph" / "prompt-2.md").read_text()
    later = (root / ".ralph" / "prompt-3.md").read_text()
    assert "rejected" not in first
    assert "Lines of your events file that ralph rejected" in retry
    assert "- line 1: invalid JSON" in retry
    assert "`this is not json`" in retry
    assert "rejected" not in later
    events = stored_events(root)
    topics = [e for e in events if isinstance(e, TopicPublished)]
    assert topics
    assert all(t.topic == "build.done" and t.payload == Json.of({"tests": 3}) for t in topics)
    assert all(t.emitted_at is not None for t in topics)
    assert [t.line_number for t in topics] == list(range(2, 2 + len(topics)))
    shown = ralph("topics", cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert "event.malformed" in shown.stdout
    assert "this is not json" in shown.stdout
    assert 'build.done  {"tests":3}' in shown.stdout


def test_a_resumed_run_reads_on_from_the_logged_position_and_never_twice(
    tmp_path: Path,
) -> None:
    """Interrupted while an agent hangs after emitting: the resume reuses the marker's file,
    reads the line the dead invocation wrote exactly once, and numbers on from there."""
    root = tmp_path / "ws"
    root.mkdir()
    agent = _agent(
        root,
        COUNT_CALLS
        + 'ralph emit "call.$n" "$RALPH_ROLE"\n'
        + 'if [ "$n" -eq 2 ] && [ ! -e .ralph/resumed ]; then\n'
        + "  touch .ralph/hanging\n"
        + "  sleep 300\n"
        + "fi\n"
        + SHELL_REPORTS,
    )
    make_workspace(root, scripts={}, agents={"main": agent})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen(
        [*RALPH, "run"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        hanging = root / ".ralph" / "hanging"
        wait_for(hanging.exists, "the agent never got to hang", alive=run)
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 130
    marker_before = read_marker(root)
    (root / ".ralph" / "resumed").touch()
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert read_marker(root) == marker_before
    assert len(list((root / ".ralph").glob("events-*.jsonl"))) == 1
    events = stored_events(root)
    topics = [e for e in events if isinstance(e, TopicPublished)]
    calls = int((root / ".ralph" / "calls").read_text())
    assert [t.topic for t in topics] == [f"call.{n}" for n in range(1, calls + 1)]
    assert [t.line_number for t in topics] == list(range(1, calls + 1))
    reads = [e for e in events if isinstance(e, EventsFileRead)]
    assert [r.lines for r in reads] == sorted({r.lines for r in reads})
    final = decode_state(ralph("replay", "--json", cwd=root).stdout.splitlines()[0].encode())
    assert final.phase is Phase.COMPLETE
    assert final.intake.events_lines == calls
    assert final.intake.topics_published == calls


HOSTILE_AGENT = (
    "import os, pathlib; "
    "open(os.environ['RALPH_EVENTS_FILE'], 'ab').write("
    'b\'{"topic": "a", "payload": "\\xff"}\\n\' '
    '+ b\'{"topic": "a", "ts": "0001-01-01T00:00:00+14:00"}\\n\'); '
    "out = pathlib.Path('.agent/out'); out.mkdir(parents=True, exist_ok=True); "
    "[pathlib.Path(out, n).write_text(t) for n, t in [('plan.md', 'p'), "
    "('status', 'completed'), ('issues.md', ''), ('commit-message', 'm')]]"
)


def test_an_agent_writing_invalid_utf8_or_an_impossible_time_does_not_stop_the_run(
    tmp_path: Path,
) -> None:
    """A real agent process appends a line with a byte that is not UTF-8 and one whose time
    leaves the calendar in UTC: the run completes, each line a malformed-line fact (before,
    the first crashed ``ralph run`` and every resume)."""
    import sys

    from pipeline.events import OutputLineMalformed

    root = make_workspace(
        tmp_path / "ws", scripts={}, agents={"main": [sys.executable, "-c", HOSTILE_AGENT]}
    )
    result = run_here(root)
    assert result.state.phase is Phase.COMPLETE
    malformed = [e for e in events_of(root, result) if isinstance(e, OutputLineMalformed)]
    assert any("UTF-8" in e.error for e in malformed)
    assert any("out of range" in e.error for e in malformed)


def test_a_line_left_unfinished_is_its_own_turns_never_the_next(tmp_path: Path) -> None:
    """A commit message's turn writes a cancellation without its newline; once its agent has
    exited ralph ends the line and reads it as that turn's, where no topic is acted on. Before,
    the next turn's first ``ralph emit`` ended it and it was folded as the developer's: the
    run was cancelled."""
    root = tmp_path / "ws"
    body = (
        "kind=$RALPH_PROMPT_KIND\n"
        "n=$(cat .ralph/n-$kind 2>/dev/null || echo 0); n=$((n+1)); echo $n > .ralph/n-$kind\n"
        + SHELL_REPORTS.replace("completed\\ndone", "partial\\nnot yet")
        + 'if [ "$kind" = commit_message ] && [ "$n" = 1 ]; then\n'
        '  printf \'%s\' \'{"topic":"loop.cancel","payload":"x"}\' >> "$RALPH_EVENTS_FILE"\n'
        "fi\n"
        'if [ "$kind" = development ] && [ "$n" = 2 ]; then\n'
        f"  {' '.join(RALPH)} emit build.progress next\n"
        "fi\n"
    )
    make_workspace(
        root,
        scripts={},
        agents={"main": _agent(root, body)},
        budgets="max_iterations = 2\nmax_review_passes = 0",
        extra='[loop]\ncancellation_promise = "loop.cancel"\n',
    )
    done = ralph("run", "--plain", cwd=root)
    events = stored_events(root)
    (completed,) = [e for e in events if isinstance(e, RunCompleted)]
    assert completed.reason is not TerminationReason.CANCELLED, done.stdout[-2000:]
    topics = [e.topic for e in events if isinstance(e, TopicPublished)]
    assert topics == ["loop.cancel", "build.progress"]
    seen = fold(events).intake.seen_topics
    assert "loop.cancel" not in seen
    assert "build.progress" in seen
