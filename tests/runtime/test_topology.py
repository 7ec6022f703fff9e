"""A topology of the user's own end to end: real `ralph` processes, the scripted agent per
hat, real git. Hats hand the work on by the topics they emit, each gets its own prompt, the
work is committed per activation, kill -9 mid-activation resumes on the same hat, and
`ralph replay --verify` routes again from the log alone."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from pipeline.events import (
    CommitCreated,
    HatActivated,
    InvocationStarted,
    PipelineEvent,
    RunCompleted,
    RunStarted,
    TerminationReason,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.runtime.workspace import make_workspace, ralph, scripted, start_ralph, stored_events

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

HATS = """
[loop]
starting_event = "build.start"
required_events = ["review.passed"]
enforce_hat_scope = true

[hats.builder]
description = "Implements the task."
triggers = ["build.start", "review.rejected"]
publishes = ["review.ready"]
instructions = "Write the failing test first."

[hats.critic]
triggers = ["review.ready"]
publishes = ["review.passed", "review.rejected", "LOOP_COMPLETE"]
"""

SCRIPT = """
[[hats.builder]]
save_prompt = ".ralph/builder-1.md"
write."app.txt" = "first try"
emit = [["review.ready", "first try"]]

[[hats.builder]]
save_prompt = ".ralph/builder-2.md"
write."app.txt" = "second try"
emit = [["review.ready", "second try"]]

[[hats.critic]]
emit = [["review.rejected", "the edge case fails"]]

[[hats.critic]]
emit = [["review.passed", "good"], ["LOOP_COMPLETE", "done"]]

[[commit_message]]
write.".agent/out/commit-message" = "Work of a hat"
"""


def events_so_far(root: Path) -> list[PipelineEvent]:
    """The events of the run in ``root``'s store, none before it starts."""
    if not WorkspaceLayout(root=root).store.exists():
        return []
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        runs = store.runs()
    return stored_events(root) if runs else []


def topology_workspace(tmp_path: Path, script: str = SCRIPT, hats: str = HATS) -> Path:
    """A repository whose agents are the scripted agent following ``script``, with ``hats``."""
    return make_workspace(
        tmp_path / "ws",
        scripts={"script.toml": script},
        agents={"main": scripted("script.toml")},
        budgets="max_iterations = 6\nbackoff_base_ms = 10\nbackoff_cap_ms = 20",
        extra=hats,
    )


def test_hats_hand_the_work_on_by_topics_and_the_run_completes(tmp_path: Path) -> None:
    """builder -> critic (rejects) -> builder (told why) -> critic (passes, completes): four
    activations, each committed, the builder's second prompt carrying the critic's payload."""
    root = topology_workspace(tmp_path)
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    events = stored_events(root)
    woken = [(e.hat, e.topic) for e in events if isinstance(e, HatActivated)]
    assert woken == [
        ("builder", "build.start"),
        ("critic", "review.ready"),
        ("builder", "review.rejected"),
        ("critic", "review.ready"),
    ]
    (ended,) = [e for e in events if isinstance(e, RunCompleted)]
    assert ended.reason is TerminationReason.COMPLETED
    assert sum(isinstance(e, CommitCreated) for e in events) == 2  # the builder's two changes
    first = (root / ".ralph" / "builder-1.md").read_text()
    second = (root / ".ralph" / "builder-2.md").read_text()
    assert "# Hat: builder" in first
    assert "Write the failing test first." in first
    assert "`build.start`" in first
    assert "`review.rejected`" in second
    assert "the edge case fails" in second
    assert "`review.ready`" in second  # what the builder may publish
    verified = ralph("replay", "--verify", cwd=root)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    (run_id,) = {e.run_id for e in events if isinstance(e, RunStarted)}
    drawn = ralph("graph", "--run", run_id, cwd=root)
    assert drawn.returncode == 0, drawn.stderr
    assert 'hat0["builder"]' in drawn.stdout
    assert 'hat0 -->|"review.ready"| hat1' in drawn.stdout
    assert "class start,hat0,hat1 visited" in drawn.stdout  # the hats the run woke
    configured = ralph("graph", "--topology", cwd=root)
    assert configured.stdout == drawn.stdout.split("    classDef")[0]
    status = ralph("status", cwd=root)
    assert "builder 2, critic 2" in status.stdout  # each hat's activations
    report = ralph("report", "--markdown", "-", cwd=root)
    assert "| developer (critic) |" in report.stdout  # who worked as which hat


def test_a_hat_that_hands_nothing_on_stalls_the_run_with_a_clear_reason(tmp_path: Path) -> None:
    """The builder emits nothing and has no default: exit 1, workflow_stalled, named."""
    script = (
        '[[hats.builder]]\nwrite."app.txt" = "x"\n'
        '[[commit_message]]\nwrite.".agent/out/commit-message" = "x"\n'
    )
    root = topology_workspace(tmp_path, script)
    result = ralph("run", cwd=root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "workflow_stalled" in result.stdout + result.stderr
    assert "builder" in result.stdout + result.stderr


def hat_took_its_step(root: Path, hat: str) -> bool:
    """Whether the scripted agent wearing ``hat`` has counted its first step: a kill meant
    to cut that step short must come after it, or the resumed hat takes the step again."""
    state = root / ".agent" / "scripted-agent-state.json"
    try:
        taken = json.loads(state.read_text("utf-8"))
    except (OSError, ValueError):
        return False  # not written yet, or caught half-written
    return any(key.endswith(f":{hat}") and count >= 1 for key, count in taken.items())


def test_a_kill_during_an_activation_resumes_with_the_same_hat(tmp_path: Path) -> None:
    """kill -9 while the critic works: the resume runs the critic's cut-short attempt again
    in the same activation (woken once, on the same topic, started twice), and the run
    completes."""
    script = SCRIPT.replace(
        '[[hats.critic]]\nemit = [["review.rejected"',
        '[[hats.critic]]\nspawn = ["sleep", "0"]\ndelay_s = 30\nemit = [["review.rejected"',
        1,
    )
    root = topology_workspace(tmp_path, script)
    process = start_ralph("run", cwd=root)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        so_far = events_so_far(root)
        started = [e for e in so_far if isinstance(e, InvocationStarted)]
        woken = [e for e in so_far if isinstance(e, HatActivated)]
        if len(woken) == 2 and len(started) >= 2 and hat_took_its_step(root, "critic"):
            break
        time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("the critic never started")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    # The killed critic's script step was taken: give it its fast version for the resume.
    (root / ".ralph" / "script.toml").write_text(SCRIPT)
    resumed = ralph("resume", cwd=root, timeout=180)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = stored_events(root)
    woken = [(e.hat, e.topic) for e in events if isinstance(e, HatActivated)]
    assert woken == [("builder", "build.start"), ("critic", "review.ready")]
    starts = [e for e in events if isinstance(e, InvocationStarted)]
    # the builder's, the critic's killed attempt, the critic's again (the committer's after)
    assert [e.attempt for e in starts[1:3]] == [1, 1]
    (ended,) = [e for e in events if isinstance(e, RunCompleted)]
    assert ended.reason is TerminationReason.COMPLETED


def test_a_bad_topology_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """A coordinator that names no hat: exit 2, one line naming the key, nothing stored."""
    root = topology_workspace(tmp_path)
    (root / "ralph.toml").write_text(
        (root / "ralph.toml")
        .read_text()
        .replace(
            'starting_event = "build.start"', 'starting_event = "build.start"\ncoordinator = "boss"'
        )
    )
    result = ralph("run", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "loop.coordinator" in result.stderr
    assert "Traceback" not in result.stderr
    assert events_so_far(root) == []
