"""The reducer's decisions, as readable examples driven through the real loop.

Each test scripts a simulated world (only the choices that differ from a smooth run) and checks
what the pipeline decided: retry, fall back, hand over to dev-fix, commit, review, finish.
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest

from pipeline.core.effects import (
    BackOff,
    Begin,
    CreateCommit,
    InvokeAgent,
    SaveCheckpoint,
    Terminate,
)
from pipeline.core.state import Phase, PipelineState, Progress, Step, TerminationReason
from pipeline.engine.simulation import AgentOutcome, Always, default_chains
from pipeline.events import (
    AgentName,
    CheckpointSaved,
    CheckpointTrigger,
    Digest,
    DurationMs,
    ExitCode,
    Instant,
    InvocationStarted,
    InvocationSucceeded,
    IterationStatus,
    Json,
    LogPosition,
    LoopPolicy,
    Ordinal,
    OutputLineMalformed,
    PlanningStarted,
    PromptKind,
    PromptMaterialized,
    Role,
    RunCompleted,
    RunId,
    RunInterrupted,
    RunResumed,
    RunStarted,
    SandboxChecked,
    SandboxMode,
    TopicPublished,
)
from pipeline.orchestration import next_effect
from pipeline.reducers import fold, reduce
from tests.support import budget, names, scripted_run

T = Instant(datetime(2026, 3, 1, tzinfo=UTC))
R, F, TO, OK = (
    AgentOutcome.RETRIABLE_FAILURE,
    AgentOutcome.FATAL_FAILURE,
    AgentOutcome.TIMEOUT,
    AgentOutcome.SUCCESS,
)


def _invocations(result: object, role: Role) -> list[str]:
    return [
        e.agent
        for e in result.events  # type: ignore[attr-defined]
        if isinstance(e, InvocationStarted) and e.role is role
    ]


def test_a_smooth_run_plans_develops_commits_reviews_and_completes() -> None:
    """With every choice the happy one, the run goes through every phase and exits 0."""
    result = scripted_run()
    state = result.state
    assert state.phase is Phase.COMPLETE
    assert state.termination is TerminationReason.COMPLETED
    assert state.termination.exit_code == 0
    assert state.ledger.commits == 1
    assert state.ledger.anomalies == 0
    assert isinstance(next_effect(state), Terminate)


def test_retriable_failure_with_retries_left_backs_off_and_retries_the_same_agent() -> None:
    """Exit 1 twice, then success: three attempts of the first agent with backoff between."""
    result = scripted_run({"planner outcome": [R, R, OK]})
    assert _invocations(result, Role.PLANNER) == ["claude", "claude", "claude"]
    backoffs = [e for e in result.effects if isinstance(e, BackOff)]
    assert [b.ceiling_ms for b in backoffs] == [100, 200]
    assert result.state.phase is Phase.COMPLETE


def test_retries_exhausted_falls_back_to_the_next_agent_with_retries_reset() -> None:
    """Three retriable failures (2 retries) move the role to the next agent in its chain."""
    result = scripted_run({"planner outcome": [R, R, R, R, OK]})
    assert _invocations(result, Role.PLANNER) == ["claude"] * 3 + ["codex"] * 2


def test_the_next_task_starts_again_with_the_preferred_agent() -> None:
    """A fallback lasts for its task: the next iteration tries the first agent again."""
    result = scripted_run(
        {"developer outcome": [F, OK, OK], "iteration status": [IterationStatus.PARTIAL]},
        budget_=budget(max_review_passes=0),
    )
    assert _invocations(result, Role.DEVELOPER) == ["claude", "codex", "claude"]


def test_a_fatal_failure_falls_back_at_once() -> None:
    """A non-retriable failure (agent not installed) skips the remaining retries."""
    result = scripted_run({"developer outcome": [F, OK]})
    assert _invocations(result, Role.DEVELOPER) == ["claude", "codex"]


def test_a_timeout_is_a_retriable_failure() -> None:
    """An invocation that times out is retried like a retriable failure."""
    result = scripted_run({"reviewer outcome": [TO, OK]})
    assert _invocations(result, Role.REVIEWER) == ["claude", "claude"]


def test_chain_exhausted_hands_over_to_dev_fix_and_interrupts_resumably() -> None:
    """Every agent fails: checkpoint, dev-fix, marker, interrupted with exit 1, checkpoint."""
    result = scripted_run({"developer outcome": [F, F]})
    state = result.state
    assert state.phase is Phase.INTERRUPTED
    assert state.termination is TerminationReason.AGENT_CHAIN_EXHAUSTED
    assert state.termination.exit_code == 1
    assert state.progress.resume is not None
    assert state.progress.resume.phase is Phase.DEVELOPMENT
    assert names(result.events)[-14:] == [
        "InvocationStarted",
        "InvocationFailed",
        "InvocationStarted",
        "InvocationFailed",
        "CheckpointSaved",
        "AgentChainExhausted",
        "DevFixTriggered",
        "PromptMaterialized",
        "InvocationStarted",
        "InvocationSucceeded",
        "DevFixCompleted",
        "CheckpointSaved",
        "CompletionMarkerEmitted",
        "CheckpointSaved",
    ]
    triggers = [e.trigger for e in result.effects if isinstance(e, SaveCheckpoint)]
    assert triggers[-3:] == [
        CheckpointTrigger.BEFORE_DEV_FIX,
        CheckpointTrigger.AFTER_DEV_FIX,
        CheckpointTrigger.INTERRUPTION,
    ]


def test_resume_after_dev_fix_retries_the_failed_task_from_the_start_of_its_chain() -> None:
    """RunResumed takes the run back to the failed phase's prompt, chain reset; it can finish."""
    interrupted = scripted_run({"developer outcome": [F, F]}).state
    resumed = reduce(interrupted, RunResumed(checkpoint_sequence=None, at=T))
    assert resumed.phase is Phase.DEVELOPMENT
    assert resumed.progress.step is Step.PROMPT
    assert resumed.termination is None
    assert resumed.agent.chain_position == 0
    effect = next_effect(resumed)
    assert effect.__class__.__name__ == "MaterializePrompt"


def test_a_partial_iteration_commits_and_starts_the_next_iteration() -> None:
    """Partial work is committed, then development goes on with iteration 2."""
    result = scripted_run({"iteration status": [IterationStatus.PARTIAL]})
    iterations = [
        e.iteration for e in result.effects if isinstance(e, Begin) and e.phase is Phase.DEVELOPMENT
    ]
    assert iterations == [1, 2]
    assert result.state.ledger.commits == 2
    assert result.state.phase is Phase.COMPLETE


def test_partial_on_the_last_iteration_ends_with_max_iterations() -> None:
    """When the iteration budget is spent the run finalizes with max_iterations (exit 2)."""
    result = scripted_run(
        {"iteration status": [IterationStatus.PARTIAL] * 2}, budget_=budget(max_iterations=2)
    )
    assert result.state.termination is TerminationReason.MAX_ITERATIONS
    assert result.state.termination.exit_code == 2
    assert result.state.phase is Phase.COMPLETE


def test_failed_iterations_in_a_row_end_with_consecutive_failures() -> None:
    """Two failed iterations in a row (the budget) end the run with consecutive_failures."""
    result = scripted_run({"iteration status": [IterationStatus.FAILED] * 2})
    assert result.state.termination is TerminationReason.CONSECUTIVE_FAILURES


def test_review_issues_are_fixed_committed_and_reviewed_again() -> None:
    """Issues found: fix attempt, commit, next pass; a clean pass leads to validation."""
    result = scripted_run({"review issues": [2, 0]}, budget_=budget(max_review_passes=2))
    kinds = names(result.events)
    assert kinds.count("ReviewPassStarted") == 2
    assert kinds.count("FixAttemptStarted") == 1
    assert result.state.ledger.commits == 2
    assert result.state.termination is TerminationReason.COMPLETED


def test_failed_validation_asks_for_another_iteration() -> None:
    """A failed final validation sends the run back to development."""
    result = scripted_run({"validation passes": [False]})
    iterations = [
        e.iteration for e in result.effects if isinstance(e, Begin) and e.phase is Phase.DEVELOPMENT
    ]
    assert iterations == [1, 2]
    assert result.state.termination is TerminationReason.COMPLETED


def test_a_rebase_conflict_is_aborted_and_the_run_goes_on() -> None:
    """A conflicted rebase is aborted (a fact) and the run continues to review."""
    result = scripted_run({"rebase clean": [False]}, rebase_onto="main")
    kinds = names(result.events)
    assert kinds.index("RebaseConflicted") < kinds.index("RebaseAborted")
    assert result.state.termination is TerminationReason.COMPLETED


def _started(**overrides: int) -> PipelineState:
    started = RunStarted(
        run_id=RunId("r"),
        config_digest=Digest("c"),
        prompt_digest=Digest("p"),
        budget=budget(**overrides),
        chains=default_chains(("a", "b")),
        rebase_onto=None,
        loop=LoopPolicy.off(),
        at=T,
    )
    return reduce(PipelineState(), started)


def test_three_malformed_lines_in_a_row_end_with_validation_failure() -> None:
    """Malformed lines count up, a valid line resets the count, and the limit ends the run."""
    line = OutputLineMalformed(line_number=Ordinal(1), content="{", error="JSON syntax error", at=T)
    topic = TopicPublished(
        topic="build.done", payload=Json.of(""), line_number=Ordinal(2), emitted_at=None, at=T
    )
    state = fold([line, line, topic, line, line], _started())
    assert state.intake.consecutive_malformed == 2
    assert state.intake.malformed_lines == 4
    state = reduce(state, line)
    assert state.phase is Phase.FINALIZING
    assert state.termination is TerminationReason.VALIDATION_FAILURE


def test_an_event_that_does_not_fit_is_recorded_as_an_anomaly() -> None:
    """A success with no invocation under way changes nothing but the anomaly record."""
    state = _started()
    stray = InvocationSucceeded(
        role=Role.REVIEWER,
        agent=AgentName("a"),
        exit_code=ExitCode(0),
        duration_ms=DurationMs(10),
        output_digest=Digest("d"),
        at=T,
    )
    after = reduce(state, stray)
    assert after.progress == state.progress
    assert after.ledger.anomalies == 1
    assert after.ledger.last_anomaly is not None
    assert "agent.invocation_succeeded in planning" in after.ledger.last_anomaly


def test_a_checkpoint_due_at_completion_can_still_be_recorded() -> None:
    """RunCompleted reported before the final checkpoint: the checkpoint is saved afterwards."""
    done = scripted_run().state
    due = attrs.evolve(
        done, checkpoints=attrs.evolve(done.checkpoints, due=CheckpointTrigger.FINAL)
    )
    effect = next_effect(due)
    assert isinstance(effect, SaveCheckpoint)
    after = reduce(
        due,
        CheckpointSaved(trigger=CheckpointTrigger.FINAL, sequence=LogPosition(due.sequence), at=T),
    )
    assert after.phase is Phase.COMPLETE
    assert after.checkpoints.due is None
    assert isinstance(next_effect(after), Terminate)


def test_a_complete_run_absorbs_every_event() -> None:
    """No fact revives a finished run, a resume included."""
    done = scripted_run().state
    for event in (
        RunResumed(checkpoint_sequence=None, at=T),
        RunInterrupted(reason="SIGINT", at=T),
        TopicPublished(
            topic="x", payload=Json.of(""), line_number=Ordinal(1), emitted_at=None, at=T
        ),
    ):
        after = reduce(done, event)
        assert after.phase is Phase.COMPLETE
        assert after.ledger.anomalies == done.ledger.anomalies + 1


def test_an_interruption_is_resumed_where_it_stopped() -> None:
    """SIGINT mid-run: interrupted (exit 130) with a checkpoint; resume returns to that step."""
    state = _started()
    interrupted = reduce(state, RunInterrupted(reason="SIGINT", at=T))
    assert interrupted.termination is TerminationReason.INTERRUPTED
    assert interrupted.termination.exit_code == 130
    assert isinstance(next_effect(interrupted), SaveCheckpoint)
    resumed = reduce(interrupted, RunResumed(checkpoint_sequence=None, at=T))
    assert (resumed.phase, resumed.progress.step) == (Phase.PLANNING, Step.BEGIN)


def test_an_invocation_cut_off_by_a_crash_is_run_again_without_counting() -> None:
    """Started but never reported, then the process died: resume re-runs it, no retry used."""
    state = fold(
        [
            PlanningStarted(at=T),
            PromptMaterialized(
                kind=PromptKind.PLANNING, path="p.md", content_digest=Digest("d"), at=T
            ),
            InvocationStarted(
                role=Role.PLANNER, agent=AgentName("a"), model=None, attempt=Ordinal(1), at=T
            ),
        ],
        _started(),
    )
    assert state.agent.in_flight
    resumed = reduce(state, RunResumed(checkpoint_sequence=None, at=T))
    assert not resumed.agent.in_flight
    assert resumed.agent.retries == 0
    effect = next_effect(resumed)
    assert isinstance(effect, InvokeAgent)
    assert effect.agent == "a"


def test_a_success_without_its_output_counts_as_a_failure_at_the_next_attempt() -> None:
    """No handler can keep a task alive forever by reporting success with no output."""
    state = fold(
        [
            PlanningStarted(at=T),
            PromptMaterialized(
                kind=PromptKind.PLANNING, path="p.md", content_digest=Digest("d"), at=T
            ),
        ],
        _started(),
    )
    start = InvocationStarted(
        role=Role.PLANNER, agent=AgentName("a"), model=None, attempt=Ordinal(1), at=T
    )
    success = InvocationSucceeded(
        role=Role.PLANNER,
        agent=AgentName("a"),
        exit_code=ExitCode(0),
        duration_ms=DurationMs(5),
        output_digest=Digest("d"),
        at=T,
    )
    state = fold([start, success, start], state)
    assert state.agent.retries == 1
    assert state.ledger.last_error == "previous attempt reported no output"


def test_a_commit_asked_for_right_after_a_resume_may_already_exist() -> None:
    """The process died at the commit step: the re-issued commit tells the handler to check."""
    state = PipelineState()
    for event in scripted_run().events:
        state = reduce(state, event)
        if state.progress.step is Step.COMMIT:
            break
    first = next_effect(state)
    assert isinstance(first, CreateCommit)
    assert first.may_exist is False
    resumed = reduce(state, RunResumed(checkpoint_sequence=None, at=T))
    again = next_effect(resumed)
    assert isinstance(again, CreateCommit)
    assert again.may_exist is True
    assert again.effect_id == first.effect_id, "the re-issued effect keeps its id"


@pytest.mark.parametrize("stopped", ["interrupted", "killed"])
def test_the_sandbox_a_resume_records_leaves_the_commit_to_be_found(stopped: str) -> None:
    """Stopped at the commit step (a signal's interruption, or a kill -9), the resume records
    ``SandboxChecked`` (and a checkpoint) before anything else: the re-issued commit keeps
    its id and still tells the handler to look for it; one at any other time counts."""
    state = PipelineState()
    for event in scripted_run().events:
        state = reduce(state, event)
        if state.progress.step is Step.COMMIT:
            break
    first = next_effect(state)
    assert isinstance(first, CreateCommit)
    checked = SandboxChecked(
        mode=SandboxMode.AUTO, on=True, said="bwrap", endpoints=(), withheld=(), at=T
    )
    unresumed = next_effect(reduce(state, checked))
    assert unresumed.effect_id != first.effect_id, "only a resume's own facts go uncounted"
    if stopped == "interrupted":
        state = fold([RunInterrupted(reason="SIGTERM", at=T)], state)
        saved = next_effect(state)
        assert isinstance(saved, SaveCheckpoint)
        state = reduce(state, CheckpointSaved(trigger=saved.trigger, sequence=saved.sequence, at=T))
    resumed = fold([RunResumed(checkpoint_sequence=None, at=T), checked], state)
    again = next_effect(resumed)
    assert isinstance(again, CreateCommit)
    assert again.may_exist is True
    assert again.effect_id == first.effect_id, "the re-issued effect keeps its id"
    assert resumed.ledger.resume_facts == 1


def test_a_run_that_validates_with_nothing_committed_is_no_success() -> None:
    """Validation passing after a run that committed no change ends ``no_changes`` (exit 1,
    not a success): an agent that only claims completion has done nothing."""
    result = scripted_run({"changes to commit": [Always(False)]})
    state = result.state
    assert state.phase is Phase.COMPLETE
    assert state.ledger.commits == 0
    assert state.termination is TerminationReason.NO_CHANGES
    assert state.termination.exit_code == 1
    assert not state.termination.is_success
    assert state.ledger.last_error == "validation passed, but the run committed no change"


def test_a_completion_reporting_another_reason_completes_and_is_noted_as_an_anomaly() -> None:
    """The fold decides how a run ends: a handler's ``RunCompleted`` echoing another reason
    completes the run all the same, and the mismatch is counted and described."""
    ending = Progress(
        phase=Phase.FINALIZING, step=Step.COMPLETE, termination=TerminationReason.COMPLETED
    )
    done = reduce(
        PipelineState(progress=ending), RunCompleted(reason=TerminationReason.MAX_COST, at=T)
    )
    assert done.phase is Phase.COMPLETE
    assert done.ledger.anomalies == 1
    assert done.ledger.last_anomaly == (
        "lifecycle.run_completed in finalizing: reports max_cost, but the run ends with completed"
    )
