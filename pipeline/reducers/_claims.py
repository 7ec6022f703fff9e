"""Where an accepted completion claim takes the run (pure).

The completion gate (``_topics``) accepts a claim; this decides what follows. Development ends
at the next boundary, with the work in hand committed first. In the built-in pipeline a run
that reviews claims (``LoopPolicy.review_completion``, with review passes to spend) goes to
review: the passes run as after a developer reporting ``completed``, and a clean review, or the
last pass, goes to final validation. Otherwise validation comes instead of the next
iteration, review pass or fix.
"""

from __future__ import annotations

from attrs import evolve

from pipeline.core.state import (
    Intake,
    Phase,
    PipelineState,
    Step,
    TerminationReason,
    reviews_claims,
)
from pipeline.reducers._build import advance
from pipeline.reducers._transitions import start_review, start_validation

__all__ = ["claim_accepted"]

_WORK_PHASES = frozenset({Phase.PLANNING, Phase.DEVELOPMENT, Phase.REVIEW})


def claim_accepted(state: PipelineState, claimed: Intake) -> PipelineState:
    """``state`` once its completion claim is accepted (``claimed``: its intake, marked)."""
    progress = state.progress
    phase, step = progress.phase, progress.step
    reviewed = reviews_claims(state)
    if phase is Phase.COMMIT_MESSAGE:
        if reviewed:
            # The work in hand is committed first; where the commit goes on to (development
            # or review) honours the claim by reviewing it.
            return advance(state, intake=claimed)
        # The work in hand is committed first; validation comes instead of the next task.
        onward = evolve(progress, after_commit=Phase.FINAL_VALIDATION)
        return advance(state, progress=onward, intake=claimed)
    if reviewed and phase is Phase.REVIEW:
        # A review pass or its fix is under way or about to begin: the review decides.
        return advance(state, intake=claimed)
    between_tasks = step is Step.BEGIN or step is Step.PROMPT
    if (phase in _WORK_PHASES and between_tasks and not state.agent.in_flight) or (
        # The last allowed iteration claimed completion in the batch that spent the budget:
        # that is a completion to review and validate, not a run out of iterations.
        phase is Phase.FINALIZING
        and step is Step.BEGIN
        and progress.termination is TerminationReason.MAX_ITERATIONS
    ):
        onward = evolve(progress, termination=None)
        begin = start_review if reviewed else start_validation
        return begin(evolve(state, intake=claimed), onward)
    # An agent still at work, or validation under way: the next boundary honours the claim.
    return advance(state, intake=claimed)
