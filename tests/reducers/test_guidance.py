"""A person's guidance folded by the reducer: a notice for the chosen hat (a role by its name
or its hat's, a topology's hat as the developer's work, or every hat), taken in once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import attrs

from pipeline.core.effects import Effect, MaterializePrompt
from pipeline.core.responses import AGENT_RESPONSE
from pipeline.core.state import PipelineState, notices_for
from pipeline.engine import RunOptions, run_in_memory
from pipeline.engine.simulation import (
    SIMULATED_RESPONSES,
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
)
from pipeline.events import (
    HUMAN_GUIDANCE_TOPIC,
    Count,
    DevelopmentIterationStarted,
    GuidanceGiven,
    HatActivated,
    Instant,
    Ordinal,
    PipelineEvent,
    PromptKind,
    ResponseSubmitted,
    Role,
)
from pipeline.orchestration import step_bound
from pipeline.reducers import fold, reduce
from tests.reducers.test_loop_control import HATS
from tests.reducers.test_loop_control import policy as loop_policy
from tests.reducers.test_topologies import hat, policy, run_log
from tests.support import budget, scripted_run

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
    return reduce(
        state,
        GuidanceGiven(number=Ordinal(number), hat=who, text=f"tip {number}", given_at=AT, at=AT),
    )


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


def test_guidance_outlasts_any_number_of_ralphs_own_notices() -> None:
    """Past the cap, ralph's own oldest notices go first; a person's guidance never does."""
    state = _midway(scripted_run().events)
    for number in range(1, 13):
        state = _guided(state, number, None)
    guidance = [n.text for n in state.intake.notices if n.topic == HUMAN_GUIDANCE_TOPIC]
    assert guidance == [f"tip {n}" for n in range(1, 13)]


def test_a_formatting_correction_leaves_guidance_owed_to_the_next_real_prompt() -> None:
    """A correction prompt shows only the malformed response: guidance given just before it
    is neither shown nor spent there, and the next working prompt carries it."""
    hats = tuple(
        attrs.evolve(h, response_schema=AGENT_RESPONSE) if h.role is Role.DEVELOPER else h
        for h in HATS
    )
    loop = loop_policy(hats=hats, max_formatting_retries=Count(2), enforce_hat_scope=False)
    config = WorldConfig(
        budget=budget(max_iterations=1),
        chains=default_chains(("a",)),
        rebase_onto=None,
        run_id="r",
        loop=loop,
    )
    answers = {"structured response": [SIMULATED_RESPONSES[1], SIMULATED_RESPONSES[0]]}
    world = SimulatedWorld(
        config=config, chooser=ScriptedChooser(answers=answers), clock=fake_clock()
    )
    prompts: list[MaterializePrompt] = []

    def handler(effect: Effect) -> Sequence[PipelineEvent]:
        facts = list(world(effect))
        if isinstance(effect, MaterializePrompt):
            prompts.append(effect)
        first_answer = not any(p.kind is PromptKind.FORMAT_CORRECTION for p in prompts)
        if first_answer and any(isinstance(f, ResponseSubmitted) for f in facts):
            facts.append(
                GuidanceGiven(
                    number=Ordinal(1), hat=None, text="use the stdlib", given_at=AT, at=AT
                )
            )
        return facts

    result = run_in_memory(
        handler, options=RunOptions(max_effects=step_bound(config.budget, config.chains, loop))
    )
    kinds = [p.kind for p in prompts]
    assert PromptKind.FORMAT_CORRECTION in kinds
    correction = kinds.index(PromptKind.FORMAT_CORRECTION)
    assert prompts[correction].notices == ()
    later = [
        p for p in prompts[correction + 1 :] if any(n.text == "use the stdlib" for n in p.notices)
    ]
    assert later, "the next working prompt carries the guidance"
    assert result.state.ledger.anomalies == 0
