"""Semantic invariants of a run, checked at every step of simulations and the state machine."""

from __future__ import annotations

from pipeline.core.effects import Effect, RunHook, SaveCheckpoint
from pipeline.core.state import AFTER_POINTS, Phase, PipelineState, TerminationReason
from pipeline.events import HookPoint
from pipeline.orchestration import next_effect

P = Phase
_RUNNING_EXITS = {P.FINALIZING, P.INTERRUPTED, P.AWAITING_DEV_FIX}

ALLOWED_TRANSITIONS: dict[Phase, set[Phase]] = {
    # A topology of the user's own has no planning: its starting event wakes a hat, or
    # nothing, and the run finalizes as stalled.
    P.NOT_STARTED: {P.PLANNING, P.DEVELOPMENT, P.FINALIZING},
    # An accepted completion promise goes to final validation at the next boundary, or to
    # review first when the run reviews claims.
    P.PLANNING: {P.DEVELOPMENT, P.REVIEW, P.FINAL_VALIDATION} | _RUNNING_EXITS,
    P.DEVELOPMENT: {P.DEVELOPMENT, P.COMMIT_MESSAGE, P.REVIEW, P.FINAL_VALIDATION, *_RUNNING_EXITS},
    P.COMMIT_MESSAGE: {P.DEVELOPMENT, P.REVIEW, P.FINAL_VALIDATION} | _RUNNING_EXITS,
    # A gate or the screen that blocks a review's fix sends the work back to development.
    P.REVIEW: {P.REVIEW, P.DEVELOPMENT, P.COMMIT_MESSAGE, P.FINAL_VALIDATION} | _RUNNING_EXITS,
    P.FINAL_VALIDATION: {P.DEVELOPMENT, P.FINALIZING, P.INTERRUPTED},
    P.AWAITING_DEV_FIX: {P.INTERRUPTED, P.FINALIZING},
    # Completion claimed in the batch that spent the iteration budget: validated (reviewed
    # first when the run reviews claims), not failed.
    P.FINALIZING: {P.COMPLETE, P.INTERRUPTED, P.REVIEW, P.FINAL_VALIDATION},
    P.INTERRUPTED: {
        P.PLANNING,
        P.DEVELOPMENT,
        P.COMMIT_MESSAGE,
        P.REVIEW,
        P.FINAL_VALIDATION,
        P.AWAITING_DEV_FIX,
        P.FINALIZING,
    },
    P.COMPLETE: set(),
}
"""Every phase change a run may make (staying in a phase is always allowed)."""


def check_step(before: PipelineState, after: PipelineState) -> None:
    """Assert the invariants that relate a state to the next one."""
    assert after.sequence == before.sequence + 1
    if before.phase is not after.phase:
        allowed = ALLOWED_TRANSITIONS[before.phase]
        assert after.phase in allowed, f"{before.phase} -> {after.phase} is not allowed"
    assert after.intake.seen_topics >= before.intake.seen_topics, "seen topics only grow"
    assert after.checkpoints.count >= before.checkpoints.count
    assert after.progress.iteration >= before.progress.iteration
    assert after.progress.review_pass >= before.progress.review_pass
    if after.run is not None:
        policy = after.run.loop
        if after.intake.completion_claimed and not before.intake.completion_claimed:
            missing = set(policy.required_events) - after.intake.seen_topics
            assert not missing, f"completion accepted while {missing} were never seen"
        cancelled = TerminationReason.CANCELLED
        if after.termination is cancelled and before.termination is not cancelled:
            assert after.phase in {P.FINALIZING, P.COMPLETE, P.INTERRUPTED}
    if before.phase is P.FINALIZING and after.phase in {P.REVIEW, P.FINAL_VALIDATION}:
        assert before.termination is TerminationReason.MAX_ITERATIONS
        assert after.intake.completion_claimed
    if after.phase is P.FINAL_VALIDATION and before.phase is not P.FINAL_VALIDATION:
        assert not _skips_review(before, after), "a completion claim skipped the review"


def _skips_review(before: PipelineState, after: PipelineState) -> bool:
    """Whether validation begins straight from development (or planning, or a commit, or the
    end of the iteration budget) although the run reviews claims and has review passes left:
    in the built-in pipeline only a claim leads there, and a claim is reviewed first."""
    run = after.run
    if run is None or not run.loop.review_completion or run.loop.topology is not None:
        return False
    left = after.progress.review_pass < run.budget.max_review_passes
    return left and before.phase in {P.PLANNING, P.DEVELOPMENT, P.COMMIT_MESSAGE, P.FINALIZING}


def watches(effect: Effect) -> bool:
    """Whether ``effect`` runs a hook that watches a step already done (an invocation, the
    run's end): the only hooks a stopped run still runs."""
    return isinstance(effect, RunHook) and (
        effect.hook.point in AFTER_POINTS or effect.hook.point is HookPoint.RUN_END
    )


def check_state(state: PipelineState) -> None:
    """Assert the invariants of a single state: counters stay within their budgets."""
    if state.run is None:
        assert state.phase in {P.NOT_STARTED}
        return
    budget = state.run.budget
    assert 0 <= state.agent.retries <= budget.max_retries_per_agent
    assert 0 <= state.progress.iteration <= budget.max_iterations
    assert 0 <= state.progress.review_pass <= budget.max_review_passes
    assert state.progress.consecutive_failed_iterations <= budget.max_consecutive_failures
    assert state.intake.consecutive_malformed <= state.intake.malformed_lines
    if state.phase in {P.COMPLETE, P.INTERRUPTED}:
        assert state.termination is not None
    if state.phase in {P.COMPLETE, P.INTERRUPTED} and state.checkpoints.due is not None:
        # Liveness: a due checkpoint in a terminal state is the next thing done (after the
        # hooks watching the step that stopped it).
        effect = next_effect(state)
        assert isinstance(effect, SaveCheckpoint) or watches(effect)
