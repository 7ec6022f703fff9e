"""The sweep's gate checks bite: ``gate_problems`` passes a gated run's log as it should be
and names each way a resume could get a round wrong (logs made by hand, no run)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pipeline.events import (
    ChangesScreened,
    CommitCreated,
    Count,
    Digest,
    DurationMs,
    ExitCode,
    GateBoundary,
    GateFinished,
    GateStarted,
    GateStatus,
    Instant,
    PipelineEvent,
    ScreenHit,
    ScreenKind,
    ScreenScope,
)
from tests.faults.gated import gate_problems

AT = Instant(datetime(2025, 1, 1, tzinfo=UTC))
ITERATION = GateBoundary.ITERATION


def started(boundary: GateBoundary = ITERATION) -> GateStarted:
    return GateStarted(gate="check", boundary=boundary, at=AT)


def finished(status: GateStatus, boundary: GateBoundary = ITERATION) -> GateFinished:
    return GateFinished(
        gate="check",
        boundary=boundary,
        argv=("python",),
        status=status,
        exit_code=ExitCode(0),
        duration_ms=DurationMs(1),
        output_digest=Digest("d"),
        log_path="log",
        tail="",
        at=AT,
    )


def screened(*hits: ScreenHit) -> ChangesScreened:
    return ChangesScreened(
        scope=ScreenScope.ITERATION, base="abc", files=Count(1), hits=hits, at=AT
    )


COMMIT = CommitCreated(sha="0" * 40, branch="main", at=AT)
PASSED = GateStatus.PASSED
FAILED = GateStatus.FAILED
RESUMED_RUN: list[PipelineEvent] = [
    screened(),
    started(),
    started(),  # cut short by a kill -9, run again whole by the resume
    finished(PASSED),
    COMMIT,
    started(GateBoundary.FINAL),
    finished(PASSED, GateBoundary.FINAL),
]


def test_a_resumed_gated_run_shows_no_problem(tmp_path: Path) -> None:
    """A gate cut short and run again, then passing before the commit, is as it should be."""
    assert gate_problems(tmp_path, RESUMED_RUN) == []


def test_each_broken_round_is_named(tmp_path: Path) -> None:
    """Blocked work committed, a cut-short gate skipped, a log ending in a gate, a screen
    hit, an unexpected failure: each is one problem naming it."""
    hit = ScreenHit(
        kind=ScreenKind.TEST_FILE_DELETED, path="tests/test_a.py", line=Count(0), detail="gone"
    )
    cases: list[tuple[list[PipelineEvent], str]] = [
        ([started(), finished(FAILED), COMMIT], "took work a task round blocked"),
        ([started(), started(GateBoundary.FINAL)], "cut short and not run again"),
        ([started()], "the log ends inside gate check"),
        ([screened(hit), started(), finished(PASSED)], "screen hit: test_file_deleted"),
    ]
    for events, named in cases:
        problems = gate_problems(tmp_path, events)
        assert any(named in problem for problem in problems), (named, problems)


def test_a_block_must_reach_the_developer(tmp_path: Path) -> None:
    """With the stubborn gate's marker, one failure is expected and the developer's second
    prompt must carry its notice; without the marker, a failure is one too many."""
    blocked: list[PipelineEvent] = [started(), finished(FAILED), started(), finished(PASSED)]
    assert "1 gate failures, not 0" in gate_problems(tmp_path, blocked)
    (tmp_path / ".ralph").mkdir()
    (tmp_path / ".ralph" / "gate-failed-once").touch()
    assert gate_problems(tmp_path, blocked) == ["the developer was never told of the block"]
    (tmp_path / ".ralph" / "dev-2.md").write_text("`build.blocked`: Gate 'check' failed: ...")
    assert gate_problems(tmp_path, blocked) == []
