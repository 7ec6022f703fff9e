"""A person's guidance folded by the reducer: a notice for the chosen hat (a role by its name
or its hat's, a topology's hat as the developer's work, or every hat), taken in once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from pipeline.events import (
    HUMAN_GUIDANCE_TOPIC,
    DevelopmentIterationStarted,
    GuidanceGiven,
    HatActivated,
    Instant,
    Ordinal,
    PipelineEvent,
    Role,
)
from pipeline.reducers import fold, reduce
from pipeline.state import PipelineState, notices_for
from tests.reducers.test_topologies import hat, policy, run_log
from tests.support import scripted_run

AT = Instant(datetime(2026, 11, 26, 12, 0, tzinfo=UTC))


def _midway(events: Sequence[PipelineEvent]) -> PipelineState:
    """The state once the first hat or iteration has begun (a run going on)."""
    begun = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, (DevelopmentIterationStarted, HatActivated))
    )
    return fold(events[: begun + 1])


def _guided(state: PipelineState, number: int, who: str | None) -> PipelineState:
    return reduce(state, GuidanceGiven(Ordinal(number), who, f"tip {number}", AT, AT))


def test_guidance_for_a_role_by_its_name_or_its_hats_name_is_that_roles_notice() -> None:
    state = _midway(scripted_run().events)  # its developer wears the hat called "builder"
    for number, who in enumerate(("reviewer", "builder", None), start=1):
        state = _guided(state, number, who)
    notices = [n for n in state.intake.notices if n.topic == HUMAN_GUIDANCE_TOPIC]
    assert [(n.text, n.role, n.hat) for n in notices] == [
        ("tip 1", Role.REVIEWER, None),
        ("tip 2", Role.DEVELOPER, None),
        ("tip 3", None, None),
    ]
    assert state.ledger.guidance_seen == 3
    assert [n.text for n in notices_for(state.intake.notices, Role.REVIEWER)] == [
        "tip 1",
        "tip 3",
    ]


def test_guidance_taken_in_already_is_an_anomaly_and_changes_nothing_else() -> None:
    once = _guided(_midway(scripted_run().events), 1, None)
    again = _guided(once, 1, None)
    assert again.ledger.anomalies == once.ledger.anomalies + 1
    assert again.intake.notices == once.intake.notices
    assert again.ledger.guidance_seen == 1


def test_guidance_for_a_topology_hat_waits_for_that_hat() -> None:
    builder = hat("builder", ["task.start"], ["review.ready"])
    critic = hat("critic", ["review.ready"], ["LOOP_COMPLETE"])
    loop = policy(builder, critic)
    log = run_log(loop, {"builder": [["review.ready"]], "critic": [["LOOP_COMPLETE"]]})
    state = _guided(_midway(log), 1, "critic")
    (notice,) = [n for n in state.intake.notices if n.topic == HUMAN_GUIDANCE_TOPIC]
    assert (notice.role, notice.hat) == (Role.DEVELOPER, "critic")
    assert notices_for(state.intake.notices, Role.DEVELOPER, "builder") == ()
    assert notices_for(state.intake.notices, Role.DEVELOPER, "critic") == (notice,)
