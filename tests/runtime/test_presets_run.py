"""``ralph run --preset`` end to end: real ``ralph`` processes, the scripted agent stepping
through each shipped preset's hats by the topics they emit, real git. Each topology preset
completes with its hats woken in the workflow's order and commits exactly when it commits;
the run records the preset's policy; a chain runs its next workflow only after the one
before completed, with a handoff in its prompt; a resume follows the preset's workflow
again."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.app.workflows import load_preset
from pipeline.events import (
    CommitCreated,
    HatActivated,
    InvocationStarted,
    PipelineEvent,
    PlanProduced,
    RunCompleted,
    RunStarted,
    TerminationReason,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from pipeline.reducers import fold
from tests.runtime.test_topology import events_so_far, hat_took_its_step
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    make_workspace,
    ralph,
    scripted,
    start_ralph,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

COMMIT = '[[commit_message]]\nwrite.".agent/out/commit-message" = "Work of a hat"\n'

OWN_TOPOLOGY = """
[loop]
starting_event = "go"

[hats.solo]
triggers = ["go"]
publishes = ["LOOP_COMPLETE"]
"""
"""The workspace's own workflow, which a preset replaces for its run."""


def step(hat: str, emit: list[tuple[str, str]], write: dict[str, str] | None = None) -> str:
    """One scripted step of ``hat``: the files it writes and the topics it emits."""
    lines = [f"[[hats.{hat}]]"]
    for path, content in (write or {}).items():
        lines.append(f'write."{path}" = "{content}"')
    topics = ", ".join(f'["{topic}", "{payload}"]' for topic, payload in emit)
    lines.append(f"emit = [{topics}]")
    return "\n".join(lines) + "\n"


TDD = (
    step("test-writer", [("test.red", "test_add fails")], {"tests/test_add.py": "add(1, 2)"})
    + 'save_prompt = ".ralph/test-writer.md"\n'
    + step("test-writer", [("test.red", "test_sub fails")], {"tests/test_sub.py": "sub(2, 1)"})
    + step("implementer", [("test.green", "add passes")], {"calc.py": "add"})
    + step("implementer", [("test.green", "sub passes")], {"calc.py": "add sub"})
    + step("refactorer", [("refactor.done", "sub is left")])
    + step("refactorer", [("LOOP_COMPLETE", "add and sub")], {"calc.py": "add, sub"})
    + COMMIT
)

DEBUG = (
    step("reproducer", [("bug.reproduced", "test_bug fails")], {"tests/test_bug.py": "bug"})
    + step("reproducer", [("LOOP_COMPLETE", "off by one in slice")])
    + step("investigator", [("hypothesis.rejected", "not the cache")])
    + step("investigator", [("hypothesis.confirmed", "off by one")])
    + step("bug-fixer", [("fix.applied", "first try")], {"lib.py": "v1"})
    + step("bug-fixer", [("fix.applied", "second try")], {"lib.py": "v2"})
    + step("verifier", [("fix.failed", "empty input still fails")])
    + step("verifier", [("fix.verified", "all green")])
    + COMMIT
)

SPEC = (
    step("spec-writer", [("spec.ready", "1. adds")], {"SPEC.md": "spec"})
    + step("plan-writer", [("plan.ready", "2 steps")], {"PLAN.md": "- [ ] a\\n- [ ] b"})
    + step("builder", [("build.ready", "step a")], {"a.py": "a"})
    + step("builder", [("build.ready", "step a again")], {"a.py": "a fixed"})
    + step("builder", [("build.ready", "step b")], {"b.py": "b"})
    + step("critic", [("review.rejected", "a.py: wrong")])
    + step("critic", [("build.next", "a is good")])
    + step("critic", [("LOOP_COMPLETE", "a and b")])
    + COMMIT
)

REVIEW_ONLY = (
    step("correctness-reviewer", [("review.correctness", "1 major")], {"REVIEW.md": "bugs"})
    + step("test-reviewer", [("review.tests", "2 minor")], {"REVIEW.md": "bugs, tests"})
    + step("reporter", [("LOOP_COMPLETE", "needs changes")], {"REVIEW.md": "report"})
)

RESEARCH = (
    step("researcher", [("research.finding", "it is sqlite")], {"RESEARCH.md": "one"})
    + step("researcher", [("research.finding", "and wal mode")], {"RESEARCH.md": "two"})
    + step("synthesizer", [("research.followup", "which journal mode?")])
    + step("synthesizer", [("LOOP_COMPLETE", "sqlite in wal mode")])
)

EXPECTED = {
    "tdd": (
        TDD,
        [
            ("test-writer", "tdd.start"),
            ("implementer", "test.red"),
            ("refactorer", "test.green"),
            ("test-writer", "refactor.done"),
            ("implementer", "test.red"),
            ("refactorer", "test.green"),
        ],
        5,  # every activation but the first refactoring changed files
    ),
    "debug": (
        DEBUG,
        [
            ("reproducer", "debug.start"),
            ("investigator", "bug.reproduced"),
            ("investigator", "hypothesis.rejected"),
            ("bug-fixer", "hypothesis.confirmed"),
            ("verifier", "fix.applied"),
            ("bug-fixer", "fix.failed"),
            ("verifier", "fix.applied"),
            ("reproducer", "fix.verified"),
        ],
        3,
    ),
    "spec": (
        SPEC,
        [
            ("spec-writer", "spec.start"),
            ("plan-writer", "spec.ready"),
            ("builder", "plan.ready"),
            ("critic", "build.ready"),
            ("builder", "review.rejected"),
            ("critic", "build.ready"),
            ("builder", "build.next"),
            ("critic", "build.ready"),
        ],
        5,
    ),
    "review-only": (
        REVIEW_ONLY,
        [
            ("correctness-reviewer", "review.start"),
            ("test-reviewer", "review.correctness"),
            ("reporter", "review.tests"),
        ],
        0,
    ),
    "research": (
        RESEARCH,
        [
            ("researcher", "research.start"),
            ("synthesizer", "research.finding"),
            ("researcher", "research.followup"),
            ("synthesizer", "research.finding"),
        ],
        0,
    ),
}


def preset_workspace(tmp_path: Path, script: str, extra: str = OWN_TOPOLOGY) -> Path:
    """A repository whose one agent is the scripted agent following ``script``, with a
    topology of its own in ralph.toml (the preset replaces it)."""
    return make_workspace(
        tmp_path / "ws",
        scripts={"script.toml": script},
        agents={"main": scripted("script.toml")},
        budgets="max_iterations = 12\nbackoff_base_ms = 10\nbackoff_cap_ms = 20",
        extra=extra,
    )


def runs_of(root: Path) -> list[list[PipelineEvent]]:
    """The events of every run in ``root``'s store, oldest run first."""
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        return [list(store.read(run.run_id)) for run in store.runs()]


def woken(events: list[PipelineEvent]) -> list[tuple[str, str]]:
    """The hats a run activated, with the topics that woke them."""
    return [(e.hat, e.topic) for e in events if isinstance(e, HatActivated)]


def commits_on_head(root: Path) -> int:
    """How many commits the repository's HEAD has beyond the first."""
    log = subprocess.run(
        ["git", "log", "--oneline"], cwd=root, capture_output=True, text=True, check=True
    )
    return len(log.stdout.splitlines()) - 1


COMMITTING = ["debug", "spec", "tdd"]
READ_ONLY = ["research", "review-only"]


@pytest.mark.parametrize("name", [*COMMITTING, *READ_ONLY])
def test_each_topology_preset_runs_its_hats_in_order_and_completes(
    name: str, tmp_path: Path
) -> None:
    """Exit 0, completed; the hats woken in the workflow's order by the expected topics; a
    commit per activation that changed files when the preset commits, none otherwise (the
    read-only presets' reports stay in the work tree); RunStarted records the preset's
    policy, not the workspace's own topology."""
    script, order, commits = EXPECTED[name]
    root = preset_workspace(tmp_path, script)
    result = ralph("run", "--preset", name, "--plain", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Workflow {name}: " in result.stdout
    (events,) = runs_of(root)
    assert woken(events) == order
    (started,) = [e for e in events if isinstance(e, RunStarted)]
    assert started.loop.topology == load_preset(name).policy().topology
    assert started.loop.enforce_hat_scope
    (ended,) = [e for e in events if isinstance(e, RunCompleted)]
    assert ended.reason is TerminationReason.COMPLETED
    assert sum(isinstance(e, CommitCreated) for e in events) == commits
    assert commits_on_head(root) == commits
    if commits == 0:
        report = "REVIEW.md" if name == "review-only" else "RESEARCH.md"
        assert (root / report).is_file()
        roles = {e.role.value for e in events if isinstance(e, InvocationStarted)}
        assert roles == {"developer"}  # the committer never works


def test_the_tdd_test_writer_is_told_not_to_touch_source_files(tmp_path: Path) -> None:
    """The prompt the test writer gets carries its hat, its instructions (the rule about
    source files among them) and the topics it may publish."""
    root = preset_workspace(tmp_path, TDD)
    result = ralph("run", "--preset", "tdd", "--quiet", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    prompt = (root / ".ralph" / "test-writer.md").read_text()
    assert "# Hat: test-writer" in prompt
    assert "Do not touch source files." in prompt
    assert "`test.red`" in prompt
    assert "`tdd.covered`" in prompt


def test_debug_refuses_completion_before_a_verified_fix(tmp_path: Path) -> None:
    """The reproducer claims completion at once: refused (the required events are missing),
    nothing else waits, and the run stops as workflow_stalled (exit 1), never completed."""
    script = step("reproducer", [("LOOP_COMPLETE", "fixed, trust me")]) + COMMIT
    root = preset_workspace(tmp_path, script)
    result = ralph("run", "--preset", "debug", "--plain", cwd=root, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    (events,) = runs_of(root)
    state = fold(events)
    assert state.intake.completion_refusals == 1
    assert state.termination is TerminationReason.WORKFLOW_STALLED


def test_the_default_preset_runs_the_built_in_pipeline_over_a_topology(tmp_path: Path) -> None:
    """code-assist over a ralph.toml with a topology of its own: planning, development and
    review as without hats, no hat woken."""
    root = preset_workspace(tmp_path, FINISH_EVERYTHING)
    result = ralph("run", "--preset", "code-assist", "--plain", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (events,) = runs_of(root)
    assert woken(events) == []
    assert any(isinstance(e, PlanProduced) for e in events)
    (started,) = [e for e in events if isinstance(e, RunStarted)]
    assert started.loop.topology is None


def test_a_chain_runs_the_next_workflow_after_one_completes(tmp_path: Path) -> None:
    """debug,tdd: two runs; the second's prompt is the task plus a handoff naming the debug
    run, how it ended, its hats and its last topics; the second run's hats see the tdd
    instructions."""
    root = preset_workspace(tmp_path, DEBUG + TDD)
    result = ralph("run", "--preset", "debug,tdd", "--plain", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Workflow debug (1 of 2)" in result.stdout
    assert "Workflow tdd (2 of 2)" in result.stdout
    debug, tdd = runs_of(root)
    assert woken(debug) == EXPECTED["debug"][1]
    assert woken(tdd) == EXPECTED["tdd"][1]
    first, second = debug[0], tdd[0]
    assert isinstance(first, RunStarted)
    assert isinstance(second, RunStarted)
    assert second.loop.topology == load_preset("tdd").policy().topology
    prompt = WorkspaceLayout(root=root).saved_prompt(second.run_id).read_text()
    assert prompt.startswith("Make the tests pass.\n")
    assert "## Before this run: the workflow `debug`" in prompt
    assert f"(run {first.run_id}; it ended `completed`)" in prompt
    assert (
        "reproducer, investigator, bug-fixer, verifier, bug-fixer, verifier, reproducer." in prompt
    )
    assert "- `LOOP_COMPLETE`: off by one in slice" in prompt
    assert "Do not touch source files." in (root / ".ralph" / "test-writer.md").read_text()
    assert "off by one in slice" in (root / ".ralph" / "test-writer.md").read_text()


def test_a_read_only_workflows_report_stays_out_of_the_next_ones_commits(tmp_path: Path) -> None:
    """research,tdd: the research notes left uncommitted stay in the work tree, out of tdd's
    commits, and tdd commits its own work."""
    root = preset_workspace(tmp_path, RESEARCH + TDD)
    result = ralph("run", "--preset", "research,tdd", "--plain", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "RESEARCH.md" not in tracked
    assert "calc.py" in tracked
    assert (root / "RESEARCH.md").is_file()


def test_a_chain_stops_at_a_workflow_that_does_not_complete(tmp_path: Path) -> None:
    """debug,tdd where debug stalls: exit 1 (debug's), one run in the store, tdd never
    started, and the message says how to go on."""
    script = step("reproducer", [("LOOP_COMPLETE", "fixed, trust me")]) + TDD
    root = preset_workspace(tmp_path, script)
    result = ralph("run", "--preset", "debug,tdd", "--plain", cwd=root, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert len(runs_of(root)) == 1
    assert "The chain stops: debug did not complete, so tdd did not run." in result.stdout
    assert "ralph run --preset tdd" in result.stdout
    assert not (root / ".ralph" / "test-writer.md").exists()


def test_a_chain_with_a_bad_name_runs_nothing(tmp_path: Path) -> None:
    """An unknown preset anywhere in the chain: exit 2, one line, no run, no agent."""
    root = preset_workspace(tmp_path, TDD)
    result = ralph("run", "--preset", "tdd,nope", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: unknown preset 'nope' (known: code-assist")
    assert len(result.stderr.splitlines()) == 1
    assert not WorkspaceLayout(root=root).store.exists()


def test_a_preset_over_a_workspace_it_does_not_fit_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    """A workspace whose agents cannot serve the preset's workflow (no chain at all): exit 2,
    one line naming ralph.toml with the preset, before anything runs."""
    root = preset_workspace(tmp_path, TDD)
    config = root / "ralph.toml"
    config.write_text(config.read_text().replace('default = ["main"]', 'planner = ["main"]'))
    result = ralph("run", "--preset", "tdd", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "ralph.toml with the preset tdd: chains.developer" in result.stderr
    assert not WorkspaceLayout(root=root).store.exists()


def test_a_resumed_preset_run_follows_the_preset_again(tmp_path: Path) -> None:
    """kill -9 while the implementer works; `ralph resume` (no flag) finds the preset the run
    started with: it says so, the refactorer's prompt after the resume carries the preset's
    instructions, and the run completes in the workflow's order."""
    first = step("implementer", [("test.green", "add passes")], {"calc.py": "add"})
    # The killed attempt takes a slow step that does nothing; the resumed one does the work.
    hang = '[[hats.implementer]]\ndelay_s = 30\nspawn = ["sleep", "0"]\n'
    slow = TDD.replace(first, hang + first).replace(
        step("refactorer", [("refactor.done", "sub is left")]),
        step("refactorer", [("refactor.done", "sub is left")])
        + 'save_prompt = ".ralph/refactorer.md"\n',
    )
    root = preset_workspace(tmp_path, slow)
    process = start_ralph("run", "--preset", "tdd", "--plain", cwd=root)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        so_far = events_so_far(root)
        started = [e for e in so_far if isinstance(e, InvocationStarted)]
        activated = [e for e in so_far if isinstance(e, HatActivated)]
        # The kill comes after the implementer took its slow step, or the resumed one takes
        # it again and waits out its inactivity timeout (30 s) before the retry.
        implementing = hat_took_its_step(root, "implementer")
        if len(activated) == 2 and len(started) >= 3 and implementing:
            break
        time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("the implementer never started")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    resumed = ralph("resume", "--plain", cwd=root, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Workflow tdd: the preset run" in resumed.stdout
    (events,) = runs_of(root)
    assert woken(events) == EXPECTED["tdd"][1]
    assert "The suite is green." in (root / ".ralph" / "refactorer.md").read_text()
