"""Escalation ladders, decided by the reducer from ``LoopPolicy.ladders``: bounces of the
developer's work (review issues, blocked tasks, failed validation) move its hat up a rung, and
the orchestrator invokes the rung's model; a success clears the counts and, with
``step_down``, moves it back down. Driven through the real loop against a scripted world, and
as laws over arbitrary ladders and worlds."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.app.testing import ladders_of
from pipeline.core.effects import InvokeAgent
from pipeline.core.state import Bounce, TerminationReason
from pipeline.events import (
    Count,
    HatActivated,
    InvocationStarted,
    IterationStatus,
    Ladder,
    PipelineEvent,
    PromptKind,
    Role,
    TopicPublished,
)
from pipeline.reducers import fold
from tests.reducers.test_topologies import hat, policy, run_log
from tests.support import budget, scripted_run

LADDER = ("m-strong", "m-best")


def _ladder(**counts: int) -> Ladder:
    """The developer's ladder, counting only the kinds given."""
    kinds = {"review_issues": 0, "blocked": 0, "validation_failed": 0, **counts}
    return Ladder(hat="developer", models=LADDER, **{k: Count(v) for k, v in kinds.items()})


def _developer_models(result: object, kind: PromptKind | None = None) -> list[str | None]:
    effects = result.effects  # type: ignore[attr-defined]
    return [
        e.model
        for e in effects
        if isinstance(e, InvokeAgent)
        and e.role is Role.DEVELOPER
        and (kind is None or e.prompt_kind is kind)
    ]


def test_review_issues_found_twice_move_the_developer_up_a_rung() -> None:
    result = scripted_run(
        {"review issues": [2, 1, 3, 0]},
        budget_=budget(max_review_passes=4),
        ladders=(_ladder(review_issues=2),),
    )
    # Pass 1 bounces (1 of 2), pass 2 bounces (2 of 2: up), pass 3 bounces (1 of 2 again).
    assert _developer_models(result, PromptKind.REVIEW_FIX) == [None, "m-strong", "m-strong"]
    # The model the handler ran is recorded with each invocation.
    started = [e.model for e in result.events if isinstance(e, InvocationStarted)]
    assert started.count("m-strong") == 2
    # Only the developer's hat moves: the reviewer keeps its own model.
    reviewers = [
        e.model for e in result.effects if isinstance(e, InvokeAgent) and e.role is Role.REVIEWER
    ]
    assert set(reviewers) == {None}
    (rung,) = result.state.ladders
    assert (rung.hat, rung.rung, rung.moves, rung.moved_by) == (
        "developer",
        1,
        1,
        Bounce.REVIEW_ISSUES,
    )
    assert result.state.termination is TerminationReason.COMPLETED
    assert result.state.ledger.anomalies == 0


def test_each_rung_moves_up_once_more_and_the_top_rung_holds() -> None:
    result = scripted_run(
        {"review issues": [1, 1, 1, 1, 0]},
        budget_=budget(max_review_passes=5),
        ladders=(_ladder(review_issues=1),),
    )
    assert _developer_models(result, PromptKind.REVIEW_FIX) == [
        "m-strong",
        "m-best",
        "m-best",
        "m-best",
    ]
    (rung,) = result.state.ladders
    assert (rung.rung, rung.review_issues) == (2, 0), "the top rung counts nothing more"


def test_a_clean_review_moves_a_hat_down_only_with_step_down() -> None:
    for step_down, rung in ((False, 1), (True, 0)):
        ladder = Ladder(
            hat="developer",
            models=LADDER,
            review_issues=Count(1),
            blocked=Count(0),
            validation_failed=Count(0),
            step_down=step_down,
        )
        result = scripted_run(
            {"review issues": [1, 0]}, budget_=budget(max_review_passes=2), ladders=(ladder,)
        )
        assert _developer_models(result, PromptKind.REVIEW_FIX) == ["m-strong"]
        (state,) = result.state.ladders
        assert state.rung == rung, step_down
        assert (state.review_issues, state.blocked, state.validation_failed) == (0, 0, 0)


def test_a_failed_final_check_is_a_bounce_of_the_developers_work() -> None:
    result = scripted_run(
        {"validation passes": [False, False, True]},
        budget_=budget(max_iterations=6, max_consecutive_failures=5),
        ladders=(_ladder(validation_failed=1),),
    )
    models = _developer_models(result, PromptKind.DEVELOPMENT)
    # Every iteration before the first failed check runs the hat's own model; each failure
    # moves the next iterations up a rung.
    assert models[0] is None
    assert models[-1] == "m-best"
    assert models.index("m-best") > models.index("m-strong")
    assert result.state.termination is TerminationReason.COMPLETED


def test_a_task_the_developer_reports_blocked_is_a_bounce() -> None:
    # Iterations 1 and 2 each report build.blocked (one line each); the planner and the
    # committers write nothing.
    partial = IterationStatus.PARTIAL
    result = scripted_run(
        {
            "iteration status": [partial, partial, IterationStatus.COMPLETED],
            "lines written to the events file": [0, 1, 0, 1, 0],
            "a loop-control topic": [True, True],
            "which loop-control topic": [1, 1],
        },
        budget_=budget(max_iterations=3),
        ladders=(_ladder(blocked=2),),
    )
    assert _developer_models(result, PromptKind.DEVELOPMENT) == [None, None, "m-strong"]


def test_a_blocked_task_counts_even_when_blocked_tasks_are_never_abandoned() -> None:
    """``max_task_blocks = 0`` turns abandoning off, not the developer's ladder."""
    partial = IterationStatus.PARTIAL
    result = scripted_run(
        {
            "iteration status": [partial, IterationStatus.COMPLETED],
            "lines written to the events file": [0, 1, 0],
            "a loop-control topic": [True],
            "which loop-control topic": [1],
        },
        budget_=budget(max_iterations=2),
        ladders=(_ladder(blocked=1),),
        policy={"max_task_blocks": Count(0)},
    )
    assert _developer_models(result, PromptKind.DEVELOPMENT) == [None, "m-strong"]


def test_a_blocked_topic_from_another_role_is_no_bounce_of_the_developer() -> None:
    result = scripted_run(
        {
            "lines written to the events file": [0, 0, 1],
            "a loop-control topic": [True],
            "which loop-control topic": [1],
        },
        ladders=(_ladder(blocked=1),),
    )
    events = list(result.events)
    published = [e for e in events if isinstance(e, TopicPublished)]
    assert [t.topic for t in published] == ["build.blocked"]
    roles = [
        e.role for e in events[: events.index(published[0])] if isinstance(e, InvocationStarted)
    ]
    assert roles[-1] is Role.COMMITTER
    assert not [e for e in result.effects if isinstance(e, InvokeAgent) and e.model]
    assert result.state.ladders == ()


def test_a_ladder_counts_only_its_kinds() -> None:
    result = scripted_run(
        {"review issues": [1, 1, 0]},
        budget_=budget(max_review_passes=3),
        ladders=(_ladder(validation_failed=1),),
    )
    assert set(_developer_models(result)) == {None}
    assert result.state.ladders == ()


def test_a_topology_hat_woken_again_by_its_review_topic_moves_up() -> None:
    """The builder is sent back twice by review.rejected (up a rung), then woken for new work
    by plan.next: the counts start again and, with step_down, it goes back down."""
    builder = hat("builder", ["build.start", "review.rejected", "plan.next"], ["review.ready"])
    critic = hat("critic", ["review.ready"], ["review.rejected", "plan.next", "LOOP_COMPLETE"])
    ladder = Ladder(
        hat="builder",
        models=LADDER,
        review_issues=Count(2),
        review_topics=("review.rejected",),
        step_down=True,
    )
    loop = policy(builder, critic, starting_event="build.start", ladders=(ladder,))
    says = {
        "builder": [["review.ready"]] * 5,
        "critic": [["review.rejected"], ["review.rejected"], ["plan.next"], ["LOOP_COMPLETE"]],
    }
    log = run_log(loop, says, iterations=10)
    built = [e.model for e in log if isinstance(e, InvocationStarted) and e.role is Role.DEVELOPER]
    # builder, critic, builder (1 of 2), critic, builder (2 of 2: up), critic, builder (new
    # work: down), critic.
    assert built == [None, None, None, None, "m-strong", None, None, None]
    state = fold(log)
    assert state.termination is TerminationReason.COMPLETED
    (rung,) = state.ladders
    assert (rung.hat, rung.rung, rung.moves) == ("builder", 0, 2)


@settings(max_examples=60, deadline=None)
@given(ladder=ladders_of("developer"), issues=st.lists(st.integers(1, 3), max_size=6))
def test_a_hat_never_leaves_its_ladder_and_moves_only_on_what_it_counts(
    ladder: Ladder, issues: list[int]
) -> None:
    result = scripted_run(
        {"review issues": [*issues, 0]},
        budget_=budget(max_review_passes=len(issues) + 1),
        ladders=(ladder,),
    )
    models = _developer_models(result)
    assert set(models) <= {None, *ladder.models}
    for rung in result.state.ladders:
        assert 0 <= rung.rung <= len(ladder.models)
    if not ladder.review_issues:
        # Nothing but review findings bounced in this world: the hat stays on its own model.
        assert set(models) == {None}


def test_a_topology_hat_blocked_twice_moves_up_though_a_planner_hands_it_new_work() -> None:
    """The builder reports its task blocked; the planner re-plans and wakes it with new work.
    That wake is no success (the work before it bounced), so the second block moves it up."""
    builder = hat("builder", ["task.next"], ["build.blocked", "build.done"])
    planner = hat("planner", ["task.start", "build.blocked"], ["task.next"])
    critic = hat("critic", ["build.done"], ["LOOP_COMPLETE"])
    ladder = Ladder(hat="builder", models=LADDER, review_issues=Count(0), blocked=Count(2))
    loop = policy(builder, planner, critic, ladders=(ladder,))
    says = {
        "planner": [["task.next"]] * 3,
        "builder": [["build.blocked"], ["build.blocked"], ["build.done"]],
        "critic": [["LOOP_COMPLETE"]],
    }
    log = run_log(loop, says, iterations=10)
    assert _hat_models(log, "builder") == [None, None, "m-strong"]
    assert fold(log).termination is TerminationReason.COMPLETED


def _hat_models(log: Sequence[PipelineEvent], name: str) -> list[str | None]:
    """The model of each invocation of topology hat ``name``, in order."""
    models: list[str | None] = []
    woken: str | None = None
    for event in log:
        if isinstance(event, HatActivated):
            woken = event.hat
        elif isinstance(event, InvocationStarted) and event.role is Role.DEVELOPER:
            models += [event.model] if woken == name else []
    return models
