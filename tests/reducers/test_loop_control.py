"""Hats and loop control, as readable examples and hypothesis laws: topic patterns, scope
enforcement, the completion gate, cancellation, the stale and thrash detectors, and questions
to a person."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from attrs import evolve
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.testing import topics
from pipeline.core.effects import Begin, Effect, InvokeAgent, MaterializePrompt, WaitForHuman
from pipeline.core.serialization import decode_state, encode_state
from pipeline.core.state import Phase, PipelineState, TerminationReason
from pipeline.engine import RunOptions, run_in_memory
from pipeline.engine.simulation import (
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
)
from pipeline.events import (
    Count,
    Digest,
    EventsFileRead,
    FinalValidationPassed,
    Hat,
    HumanResponseReceived,
    HumanTimedOut,
    Instant,
    InvocationSucceeded,
    IterationStatus,
    Json,
    LoopPolicy,
    Ordinal,
    PatternError,
    PipelineEvent,
    PlanningStarted,
    Role,
    RunId,
    RunStarted,
    TopicPublished,
    check_pattern,
    topic_matches,
)
from pipeline.orchestration import next_effect
from pipeline.reducers import fold, reduce, steps
from tests.support import budget

T = Instant(datetime(2026, 3, 1, tzinfo=UTC))

HATS = (
    Hat(role=Role.PLANNER, name="planner", publishes=("plan.*",)),
    Hat(role=Role.DEVELOPER, name="builder", publishes=("build.*", "human.interact")),
    Hat(role=Role.REVIEWER, name="reviewer", publishes=("review.**",)),
    Hat(role=Role.COMMITTER, name="committer", publishes=("commit.*",)),
    Hat(role=Role.FIXER, name="fixer", publishes=("fix.*",)),
)


def policy(**changes: object) -> LoopPolicy:
    """Every control on, with thresholds of 3; ``changes`` override fields."""
    base = LoopPolicy(
        hats=HATS,
        enforce_hat_scope=True,
        completion_promise="LOOP_COMPLETE",
        cancellation_promise="loop.cancel",
        required_events=("review.passed", "build.done"),
        stale_repeats=Count(3),
        max_task_blocks=Count(3),
        max_abandoned_tasks=Count(2),
        human_timeout_s=Count(30),
    )
    return attrs.evolve(base, **changes)  # type: ignore[misc]


def started(loop: LoopPolicy, publisher: Role | None = Role.DEVELOPER) -> PipelineState:
    """A run just started with ``loop``, whose events-file lines come from ``publisher``."""
    event = RunStarted(
        run_id=RunId("r"),
        config_digest=Digest("c"),
        prompt_digest=Digest("p"),
        budget=budget(),
        chains=default_chains(("a",)),
        rebase_onto=None,
        loop=loop,
        at=T,
    )
    state = reduce(PipelineState(), event)
    return attrs.evolve(state, intake=evolve(state.intake, publisher=publisher))


_lines = iter(range(1, 10**9))


def topic(name: str, payload: object = "", at: Instant = T) -> TopicPublished:
    """A well-formed line publishing ``name``."""
    return TopicPublished(
        topic=name,
        payload=Json.of(payload),
        line_number=Ordinal(next(_lines)),
        emitted_at=None,
        at=at,
    )


def appended_topic(effect: InvokeAgent, name: str) -> list[PipelineEvent]:
    """What reading the events file finds after ``effect`` when its agent published ``name``
    (a line of 30 bytes after what was read before)."""
    line = effect.events_lines + 1
    return [
        TopicPublished(
            topic=name, payload=Json.of(""), line_number=Ordinal(line), emitted_at=None, at=T
        ),
        EventsFileRead(offset=Count(effect.events_offset + 30), lines=Count(line), at=T),
    ]


# Patterns


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        ("*", "anything.at.all", True),
        ("build.*", "build.done", True),
        ("build.*", "build.x.done", False),
        ("build.*", "build", False),
        ("build.done", "build.done", True),
        ("build.done", "build.doner", False),
        ("*.done", "review.done", True),
        ("build.**", "build", True),
        ("build.**", "build.x.done", True),
        ("**.done", "a.b.done", True),
        ("**.done", "a.b.undone", False),
    ],
)
def test_pattern_semantics(pattern: str, name: str, matches: bool) -> None:
    """`*` alone matches all; segments must line up; `*` is one segment, `**` any number."""
    assert topic_matches(pattern, name) is matches


@pytest.mark.parametrize("pattern", ["", "build..done", "build*", ".build", "bu ild", "b.*x"])
def test_malformed_patterns_are_refused(pattern: str) -> None:
    """Empty segments, partial wildcards and bad characters are errors naming the pattern."""
    with pytest.raises(PatternError):
        check_pattern(pattern)


# Scope


def test_an_in_scope_topic_is_acted_on() -> None:
    """The builder may publish build.*: the topic is seen and nothing is noticed."""
    state = reduce(started(policy()), topic("build.done"))
    assert "build.done" in state.intake.seen_topics
    assert state.intake.scope_violations == 0
    assert state.intake.notices == ()


def test_an_out_of_scope_topic_is_dropped_and_reported() -> None:
    """Not seen, not acted on: recorded as <hat>.scope_violation and owed to the next prompt."""
    state = reduce(started(policy(), Role.PLANNER), topic("review.passed", {"ok": True}))
    assert "review.passed" not in state.intake.seen_topics
    assert state.intake.scope_violations == 1
    (notice,) = state.intake.notices
    assert notice.topic == "planner.scope_violation"
    assert notice.text == """Attempted to publish 'review.passed': {"ok":true}"""
    planning = reduce(state, PlanningStarted(at=T))
    undue = attrs.evolve(planning.checkpoints, due=None)
    effect = next_effect(attrs.evolve(planning, checkpoints=undue))
    assert isinstance(effect, MaterializePrompt)
    assert effect.notices == (notice,)


def test_an_out_of_scope_question_is_not_asked() -> None:
    """Scope comes before every other judgement: a reviewer's human.interact is dropped."""
    state = reduce(started(policy(), Role.REVIEWER), topic("human.interact", "why?"))
    assert state.ledger.pending_question is None
    assert state.intake.notices[0].topic == "reviewer.scope_violation"


def test_coordination_publishes_unrestricted() -> None:
    """With no active hat (no invocation yet) every topic is acted on."""
    state = reduce(started(policy(), publisher=None), topic("review.passed"))
    assert "review.passed" in state.intake.seen_topics
    assert state.intake.scope_violations == 0


def test_enforcement_is_off_unless_asked_for() -> None:
    """With enforce_hat_scope false, a hat may publish anything."""
    from pipeline.core.config import parse_config

    assert parse_config("", "ralph.toml").loop_policy().enforce_hat_scope is False
    state = reduce(started(policy(enforce_hat_scope=False)), topic("review.passed"))
    assert "review.passed" in state.intake.seen_topics


# The completion gate


def test_completion_with_missing_events_is_refused_with_the_list() -> None:
    """The refusal is a task.resume notice listing what is missing and naming the cancel topic."""
    state = fold([topic("build.done"), topic("LOOP_COMPLETE")], started(policy()))
    assert not state.intake.completion_claimed
    assert state.intake.completion_refusals == 1
    (notice,) = state.intake.notices
    assert notice.topic == "task.resume"
    assert "review.passed" in notice.text
    assert "build.done" not in notice.text
    assert "'loop.cancel'" in notice.text


def test_completion_with_every_required_event_is_accepted_in_any_order() -> None:
    """A flat presence check: order does not matter, repeats do not matter."""
    for order in (["build.done", "review.passed"], ["review.passed", "build.done"]):
        state = started(policy(enforce_hat_scope=False))
        state = fold([*(topic(t) for t in order), topic("LOOP_COMPLETE")], state)
        assert state.intake.completion_claimed
        assert state.phase is Phase.FINAL_VALIDATION


def test_seen_topics_survive_a_checkpoint_and_resume() -> None:
    """seen_topics is state: a checkpointed run that resumes still counts what it saw."""
    state = fold([topic("build.done"), topic("review.passed")], started(policy(), None))
    resumed = decode_state(encode_state(state))
    assert resumed == state
    after = reduce(resumed, topic("LOOP_COMPLETE"))
    assert after.intake.completion_claimed


@given(st.lists(topics() | st.just("LOOP_COMPLETE"), max_size=30))
def test_completion_is_never_accepted_while_a_required_event_is_missing(
    names: Sequence[str],
) -> None:
    """For any topic sequence the claim implies every required event was seen, and seen_topics
    only grows."""
    loop = policy(required_events=("build.done", "review.x"), stale_repeats=Count(0))
    state = started(loop, publisher=None)
    for name in names:
        before = state.intake.seen_topics
        state = reduce(state, topic(name))
        assert state.intake.seen_topics >= before
        if state.intake.completion_claimed:
            assert {"build.done", "review.x"} <= state.intake.seen_topics


def _last_iteration_claims_completion(
    status: IterationStatus,
) -> tuple[PipelineState, list[Effect]]:
    """A real loop with 2 iterations; the developer of iteration 2 reports ``status`` and
    publishes LOOP_COMPLETE."""
    chooser = ScriptedChooser(answers={"iteration status": [status, status]})
    config = WorldConfig(
        budget=budget(max_iterations=2, max_consecutive_failures=3),
        chains=default_chains(("a",)),
        rebase_onto=None,
        run_id="r",
        loop=policy(required_events=()),
    )
    world = SimulatedWorld(config=config, chooser=chooser, clock=fake_clock())
    effects: list[Effect] = []

    def handler(effect: Effect) -> Sequence[PipelineEvent]:
        effects.append(effect)
        facts = list(world(effect))
        developer_done = any(
            isinstance(f, InvocationSucceeded) and f.role is Role.DEVELOPER for f in facts
        )
        if isinstance(effect, InvokeAgent) and effect.iteration == 2 and developer_done:
            facts += appended_topic(effect, "LOOP_COMPLETE")
        return facts

    result = run_in_memory(handler, options=RunOptions(max_effects=500))
    return result.state, effects


@pytest.mark.parametrize("status", [IterationStatus.PARTIAL, IterationStatus.FAILED])
def test_completion_on_the_last_iteration_completes_the_run(status: IterationStatus) -> None:
    """The known defect fixed: a claim on the last allowed iteration is validated and
    completes the run; it is not reported as max_iterations. (Failed iterations commit
    nothing, so that run validates to ``no_changes``: nothing was done.)"""
    state, effects = _last_iteration_claims_completion(status)
    done = TerminationReason.COMPLETED if state.ledger.commits else TerminationReason.NO_CHANGES
    assert state.ledger.commits == (0 if status is IterationStatus.FAILED else 2)
    assert state.termination is done
    assert any(type(e).__name__ == "ValidateFinalState" for e in effects)


def _claim_on_first_iteration(
    loop: LoopPolicy, max_review_passes: int = 1
) -> tuple[PipelineState, list[Effect]]:
    """A real loop in which the developer of iteration 1 reports partial progress and
    publishes LOOP_COMPLETE (the prompt asks it to, when the task is done)."""
    chooser = ScriptedChooser(answers={"iteration status": [IterationStatus.PARTIAL]})
    config = WorldConfig(
        budget=budget(max_iterations=3, max_review_passes=max_review_passes),
        chains=default_chains(("a",)),
        rebase_onto=None,
        run_id="r",
        loop=loop,
    )
    world = SimulatedWorld(config=config, chooser=chooser, clock=fake_clock())
    effects: list[Effect] = []

    def handler(effect: Effect) -> Sequence[PipelineEvent]:
        effects.append(effect)
        facts = list(world(effect))
        developer_done = any(
            isinstance(f, InvocationSucceeded) and f.role is Role.DEVELOPER for f in facts
        )
        if isinstance(effect, InvokeAgent) and effect.iteration == 1 and developer_done:
            facts += appended_topic(effect, "LOOP_COMPLETE")
        return facts

    result = run_in_memory(handler, options=RunOptions(max_effects=500))
    return result.state, effects


_BEGUN = {(Phase.DEVELOPMENT, False): "BeginIteration", (Phase.REVIEW, False): "BeginReviewPass"}


def _kinds(effects: list[Effect]) -> list[str]:
    """The names of the phase steps among ``effects``, in order: an iteration or a review
    pass begun (by the names their effects had before ``Begin``), and the final check."""
    kinds = (
        _BEGUN.get((e.phase, e.fixing)) if isinstance(e, Begin) else type(e).__name__
        for e in effects
    )
    return [k for k in kinds if k in {*_BEGUN.values(), "ValidateFinalState"}]


def test_an_accepted_claim_is_reviewed_before_the_final_check() -> None:
    """review_completion: a claim ends development, and a review pass runs before
    validation (the starter's promise: plan, develop, commit, review, validate)."""
    state, effects = _claim_on_first_iteration(policy(required_events=(), review_completion=True))
    assert _kinds(effects) == ["BeginIteration", "BeginReviewPass", "ValidateFinalState"]
    assert state.termination is TerminationReason.COMPLETED
    assert state.progress.review_pass == 1


@pytest.mark.parametrize(
    ("review_completion", "passes"), [(False, 1), (True, 0)], ids=["asked-not-to", "review-off"]
)
def test_a_claim_goes_straight_to_the_final_check_when_asked_or_without_review(
    review_completion: bool, passes: int
) -> None:
    """review_completion = false (and every run recorded before it existed), or
    max_review_passes = 0: an accepted claim is validated with no review pass."""
    loop = policy(required_events=(), review_completion=review_completion)
    state, effects = _claim_on_first_iteration(loop, max_review_passes=passes)
    assert _kinds(effects) == ["BeginIteration", "ValidateFinalState"]
    assert state.termination is TerminationReason.COMPLETED


def test_a_claim_on_the_last_iteration_is_reviewed_then_completes_the_run() -> None:
    """The last allowed iteration's claim is still no max_iterations, and still reviewed."""
    config = policy(required_events=(), review_completion=True)
    chooser = ScriptedChooser(answers={"iteration status": [IterationStatus.PARTIAL] * 2})
    world = SimulatedWorld(
        config=WorldConfig(
            budget=budget(max_iterations=2),
            chains=default_chains(("a",)),
            rebase_onto=None,
            run_id="r",
            loop=config,
        ),
        chooser=chooser,
        clock=fake_clock(),
    )
    effects: list[Effect] = []

    def handler(effect: Effect) -> Sequence[PipelineEvent]:
        effects.append(effect)
        facts = list(world(effect))
        if (
            isinstance(effect, InvokeAgent)
            and effect.iteration == 2
            and effect.role is Role.DEVELOPER
        ):
            facts += appended_topic(effect, "LOOP_COMPLETE")
        return facts

    state = run_in_memory(handler, options=RunOptions(max_effects=500)).state
    assert _kinds(effects)[-2:] == ["BeginReviewPass", "ValidateFinalState"]
    assert state.termination is TerminationReason.COMPLETED


def _smooth_run(loop: LoopPolicy) -> tuple[PipelineState, list[PipelineEvent]]:
    """A smooth simulated run (every agent succeeds, the developer reports completed, the
    review is clean, validation passes) under ``loop``; nobody publishes a topic."""
    config = WorldConfig(
        budget=budget(max_iterations=2, max_consecutive_failures=3),
        chains=default_chains(("a",)),
        rebase_onto=None,
        run_id="r",
        loop=loop,
    )
    world = SimulatedWorld(config=config, chooser=ScriptedChooser(), clock=fake_clock())
    result = run_in_memory(world, options=RunOptions(max_effects=500))
    return result.state, list(result.events)


def test_a_run_that_never_saw_a_required_event_does_not_complete_by_any_path() -> None:
    """required_events = ["human.response"] and nobody asked: the developer reporting
    completed, a clean review and a passing validation do not end the run completed; each
    pass is refused with a notice to the developer, and the budget ends the run."""
    state, events = _smooth_run(policy(required_events=("human.response",)))
    passed = [e for e in events if isinstance(e, FinalValidationPassed)]
    assert passed, "the run must have reached final validation"
    assert state.termination is not TerminationReason.COMPLETED
    assert state.termination is TerminationReason.MAX_ITERATIONS
    assert state.intake.completion_refusals == len(passed)
    assert "required events not seen: human.response" in (state.ledger.last_error or "")


def test_a_run_that_saw_every_required_event_completes_by_the_same_path() -> None:
    """The same smooth run with nothing required completes at its first validation."""
    state, events = _smooth_run(policy(required_events=()))
    assert state.termination is TerminationReason.COMPLETED
    assert len([e for e in events if isinstance(e, FinalValidationPassed)]) == 1


def test_a_refused_validation_tells_the_developer_what_is_missing() -> None:
    """The refusal is a task.resume notice addressed to the developer's next prompt."""
    from pipeline.core.state import Progress, Step

    state = started(policy(required_events=("human.response", "build.done")))
    state = reduce(state, topic("build.done"))
    # A run that committed work: one with none ends no_changes, gate or not.
    worked = attrs.evolve(state, ledger=attrs.evolve(state.ledger, commits=1))
    validating = attrs.evolve(
        worked, progress=Progress(phase=Phase.FINAL_VALIDATION, step=Step.VALIDATE)
    )
    refused = reduce(validating, FinalValidationPassed(at=T))
    assert refused.phase is Phase.DEVELOPMENT
    notice = refused.intake.notices[-1]
    assert notice.topic == "task.resume"
    assert notice.role is Role.DEVELOPER
    assert "required events were not seen: human.response." in notice.text
    assert "publish 'loop.cancel' to cancel" in notice.text
    # Published with no hat at work (a person's answer is seen the same way).
    unscoped = attrs.evolve(validating, intake=evolve(validating.intake, publisher=None))
    seen = reduce(unscoped, topic("human.response"))
    assert reduce(seen, FinalValidationPassed(at=T)).termination is TerminationReason.COMPLETED


# Cancellation


def test_cancellation_ends_the_run_cleanly_and_is_no_success() -> None:
    """loop.cancel finalizes with cancelled: exit 0, but not a success."""
    state = reduce(started(policy()), topic("loop.cancel"))
    assert state.phase is Phase.FINALIZING
    assert state.termination is TerminationReason.CANCELLED
    assert state.termination.exit_code == 0
    assert not state.termination.is_success


def test_cancellation_bypasses_the_gate_and_any_hat_scope() -> None:
    """Required events missing and a committer publishing: cancellation still ends the run."""
    state = reduce(started(policy(), Role.COMMITTER), topic("loop.cancel"))
    assert state.termination is TerminationReason.CANCELLED


def test_cancellation_is_checked_before_completion() -> None:
    """Configured as the same family of signals, cancellation wins over a pending completion."""
    loop = policy(required_events=(), enforce_hat_scope=False)
    state = fold([topic("loop.cancel"), topic("LOOP_COMPLETE")], started(loop))
    assert state.termination is TerminationReason.CANCELLED


@given(st.lists(topics(), max_size=10))
def test_cancellation_always_terminates_the_run_within_one_step(names: Sequence[str]) -> None:
    """Whatever came before, the cancel topic leaves the run finalizing as cancelled."""
    state = fold([topic(n) for n in names], started(policy(stale_repeats=Count(0))))
    if state.phase in (Phase.COMPLETE, Phase.INTERRUPTED):
        return
    state = reduce(state, topic("loop.cancel"))
    assert state.phase is Phase.FINALIZING
    assert state.termination is TerminationReason.CANCELLED


# Stale loops and thrashing


def test_the_same_topic_three_times_in_a_row_ends_the_run_stale() -> None:
    """Same (topic, hat, payload) N times in a row: loop_stale."""
    state = fold([topic("build.step", "same")] * 3, started(policy()))
    assert state.termination is TerminationReason.LOOP_STALE
    assert "3 times in a row" in (state.ledger.last_error or "")


def test_a_stale_loop_after_a_failed_final_check_names_the_check_s_failure() -> None:
    """The completion claimed again and again while the final check fails (its test runner
    not installed, say): the stale loop's reason carries the check's failure, the thing to
    act on, not only the repeated topic."""
    failed = "final validation: `python3 -m pytest -q` exited with status 1: No module named pytest"
    state = started(policy())
    state = evolve(state, ledger=evolve(state.ledger, last_error=failed))
    state = fold([topic("build.step", "same")] * 3, state)
    assert state.termination is TerminationReason.LOOP_STALE
    why = state.ledger.last_error or ""
    assert "3 times in a row" in why
    assert why.endswith(f"; the last {failed}")


def test_a_different_payload_or_topic_resets_the_stale_count() -> None:
    """Only repeats in a row count."""
    seq = [topic("build.step", "a"), topic("build.step", "a"), topic("build.step", "b")]
    seq += [topic("build.step", "a"), topic("build.other", "a"), topic("build.step", "a")]
    state = fold(seq, started(policy()))
    assert state.termination is None


def test_task_complete_is_exempt_from_stale_detection() -> None:
    """task.complete repeats by nature."""
    state = fold([topic("task.complete", "x")] * 5, started(policy(enforce_hat_scope=False)))
    assert state.termination is None


def test_a_task_blocked_too_often_is_abandoned_and_too_many_abandonments_thrash() -> None:
    """3 blocks abandon a task (build.task.abandoned notice); 2 abandonments: loop_thrashing."""
    blocked = [topic("build.blocked", {"task": "db", "n": n}) for n in range(3)]
    state = fold(blocked, started(policy()))
    assert state.intake.abandoned_tasks == 1
    assert state.intake.notices[-1].topic == "build.task.abandoned"
    assert "'db'" in state.intake.notices[-1].text
    assert state.termination is None
    state = fold([topic("build.blocked", {"task": "api", "n": n}) for n in range(3)], state)
    assert state.termination is TerminationReason.LOOP_THRASHING


def test_thresholds_of_zero_turn_the_detectors_off() -> None:
    """stale_repeats = 0 and max_task_blocks = 0: nothing fires."""
    loop = policy(stale_repeats=Count(0), max_task_blocks=Count(0))
    state = fold([topic("build.blocked", "db")] * 9, started(loop))
    assert state.termination is None
    assert state.intake.abandoned_tasks == 0


# Questions to a person


def test_a_question_waits_until_its_deadline_and_an_answer_reaches_the_next_prompt() -> None:
    """human.interact records the question with its deadline; the answer is a notice."""
    asked_at = Instant(T + timedelta(minutes=5))
    state = reduce(started(policy()), topic("human.interact", {"question": "Which DB?"}, asked_at))
    pending = state.ledger.pending_question
    assert pending is not None
    assert pending.question == "Which DB?"
    assert pending.deadline == asked_at + timedelta(seconds=30)
    due_done = attrs.evolve(state, checkpoints=attrs.evolve(state.checkpoints, due=None))
    effect = next_effect(due_done)
    assert isinstance(effect, WaitForHuman)
    assert effect.deadline == pending.deadline
    answered = reduce(
        state, HumanResponseReceived(question_id=pending.question_id, text="Postgres", at=T)
    )
    assert answered.ledger.pending_question is None
    assert answered.intake.notices[-1].topic == "human.response"
    assert answered.intake.notices[-1].text == "Postgres"
    assert "human.response" in answered.intake.seen_topics


def test_no_answer_by_the_deadline_is_a_timeout_notice_never_a_silent_continue() -> None:
    """The timeout notice says how long and repeats the question."""
    state = reduce(started(policy()), topic("human.interact", "Which DB?"))
    pending = state.ledger.pending_question
    assert pending is not None
    timed_out = reduce(state, HumanTimedOut(question_id=pending.question_id, at=pending.deadline))
    notice = timed_out.intake.notices[-1]
    assert notice.topic == "human.timeout"
    assert notice.text == "No response after 30s. Original question: Which DB?"


def test_a_notice_waits_for_the_prompt_of_the_hat_it_concerns() -> None:
    """A reviewer's scope violation is not shown to the developer (nor consumed by its
    prompt); unaddressed notices go to any working prompt but never a commit message."""
    from pipeline.core.state import Notice, Progress, Step, notices_for
    from pipeline.events import PromptKind, PromptMaterialized

    reviewer = Notice(
        topic="reviewer.scope_violation", text="x", line_number=Count(1), role=Role.REVIEWER
    )
    anyone = Notice(topic="human.response", text="y", line_number=Count(0), role=None)
    planner = Notice(
        topic="planner.scope_violation", text="z", line_number=Count(2), role=Role.PLANNER
    )
    assert notices_for((reviewer, anyone), Role.DEVELOPER) == (anyone,)
    assert notices_for((reviewer, anyone), Role.REVIEWER) == (reviewer, anyone)
    assert notices_for((reviewer, anyone, planner), Role.COMMITTER) == ()
    assert notices_for((planner,), Role.DEVELOPER) == (planner,)
    state = started(policy())
    state = attrs.evolve(
        state,
        progress=Progress(phase=Phase.DEVELOPMENT, step=Step.PROMPT, iteration=1),
        intake=evolve(state.intake, notices=(reviewer, anyone)),
    )
    prompted = reduce(
        state,
        PromptMaterialized(
            kind=PromptKind.DEVELOPMENT, path="p.md", content_digest=Digest("d"), at=T
        ),
    )
    assert prompted.intake.notices == (reviewer,)


def _commit_turn_publishes(
    name: str, *, file_only: bool
) -> tuple[PipelineState, list[Effect], tuple[PipelineEvent, ...]]:
    """A real loop of two iterations whose first commit message's turn publishes ``name``
    under a policy with ``file_only_turns`` as given."""
    chooser = ScriptedChooser(answers={"iteration status": [IterationStatus.PARTIAL] * 2})
    config = WorldConfig(
        budget=budget(max_iterations=2, max_review_passes=0),
        chains=default_chains(("a",)),
        rebase_onto=None,
        run_id="r",
        loop=policy(required_events=(), enforce_hat_scope=False, file_only_turns=file_only),
    )
    world = SimulatedWorld(config=config, chooser=chooser, clock=fake_clock())
    effects: list[Effect] = []

    def handler(effect: Effect) -> Sequence[PipelineEvent]:
        effects.append(effect)
        facts = list(world(effect))
        committing = isinstance(effect, InvokeAgent) and effect.role is Role.COMMITTER
        if committing and effect.iteration == 1 and len(facts) > 1:
            facts += appended_topic(effect, name)
        return facts

    result = run_in_memory(handler, options=RunOptions(max_effects=500))
    return result.state, effects, result.events


@pytest.mark.parametrize("name", ["LOOP_COMPLETE", "loop.cancel", "build.done"])
def test_a_topic_from_a_commit_message_turn_is_noticed_never_acted_on(name: str) -> None:
    """A commit message's prompt asks for a file only (its MCP card says ralph acts on no
    topic from it): a topic its agent publishes from the shell anyway, even the completion or
    the cancellation promise, neither ends the run nor counts as seen; it is noticed."""
    state, effects, _ = _commit_turn_publishes(name, file_only=True)
    assert state.termination is TerminationReason.MAX_ITERATIONS
    assert name not in state.intake.seen_topics
    assert state.intake.topics_published == 1
    assert not state.intake.completion_claimed
    begun = [e.iteration for e in effects if isinstance(e, Begin) and e.phase is Phase.DEVELOPMENT]
    assert begun == [1, 2]
    notices = [e.notices for e in effects if isinstance(e, MaterializePrompt)]
    noticed = {n.topic for batch in notices for n in batch} | {
        n.topic for n in state.intake.notices
    }
    assert "ralph.topic_not_asked" in noticed


def test_a_run_recorded_before_schema_21_folds_a_commit_turns_topic_as_it_ran() -> None:
    """Without ``file_only_turns`` (every run recorded before schema 21) the commit message's
    cancellation is acted on, as it was when the run ran: its log folds to its checkpoints."""
    state, _, events = _commit_turn_publishes("loop.cancel", file_only=False)
    assert state.termination is TerminationReason.CANCELLED
    # Nor is a commit turn marked in its states: an old checkpoint (which has no mark) equals
    # the fold of its log.
    assert not any(after.intake.file_only for _, _, after in steps(events))


def test_every_run_started_now_judges_file_only_turns() -> None:
    """The configuration's policy turns the rule on for every new run."""
    from pipeline.core.config import parse_config

    assert parse_config("", "ralph.toml").loop_policy().file_only_turns is True


def test_a_memory_note_from_a_commit_message_turn_is_taken() -> None:
    """A memory or task note steers nothing: the committer keeps one as any hat does."""
    state = started(policy(file_only_turns=True))
    state = attrs.evolve(
        state, intake=evolve(state.intake, publisher=Role.COMMITTER, file_only=True)
    )
    kept = reduce(
        state, topic("ralph.memory.add", {"id": "m-1", "text": "Commit messages say why"})
    )
    assert [m.text for m in kept.context.memories] == ["Commit messages say why"]
    assert not [n for n in kept.intake.notices if n.topic == "ralph.topic_not_asked"]
    ignored = reduce(state, topic("LOOP_COMPLETE"))
    assert [n.topic for n in ignored.intake.notices] == ["ralph.topic_not_asked"]
