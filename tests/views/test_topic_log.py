"""The topic log shows what agents published and what ralph judged of it."""

from __future__ import annotations

from pipeline.engine.simulation import default_chains
from pipeline.events import (
    AgentName,
    Digest,
    HumanResponseReceived,
    InvocationStarted,
    Json,
    LoopPolicy,
    Ordinal,
    PlanningStarted,
    PromptKind,
    PromptMaterialized,
    Role,
    RunId,
    RunStarted,
    TopicPublished,
)
from pipeline.reducers.views import topic_log
from tests.reducers.test_loop_control import T, policy
from tests.support import budget


def _planner_at_work(loop: LoopPolicy | None = None) -> list[object]:
    """A run whose planner has been invoked: its lines are judged by the planner's hat."""
    chains = default_chains(("a",))
    loop = policy() if loop is None else loop
    return [
        RunStarted(
            run_id=RunId("r"),
            config_digest=Digest("c"),
            prompt_digest=Digest("p"),
            budget=budget(),
            chains=chains,
            rebase_onto=None,
            loop=loop,
            at=T,
        ),
        PlanningStarted(at=T),
        PromptMaterialized(
            kind=PromptKind.PLANNING,
            path=".agent/prompts/planning.md",
            content_digest=Digest("d"),
            at=T,
        ),
        InvocationStarted(
            role=Role.PLANNER, agent=AgentName("a"), model=None, attempt=Ordinal(1), at=T
        ),
    ]


def test_an_out_of_scope_topic_shows_only_as_its_hats_scope_violation() -> None:
    """The planner may publish plan.*: its build.done is shown as planner.scope_violation."""
    log = [
        *_planner_at_work(),
        TopicPublished(
            topic="plan.ready", payload=Json.of("v1"), line_number=Ordinal(1), emitted_at=None, at=T
        ),
        TopicPublished(
            topic="build.done",
            payload=Json.of({"files": 2}),
            line_number=Ordinal(2),
            emitted_at=None,
            at=T,
        ),
    ]
    entries = list(topic_log(log))  # type: ignore[arg-type]
    assert [(e.line_number, e.topic) for e in entries] == [
        (1, "plan.ready"),
        (2, "planner.scope_violation"),
    ]
    assert entries[1].payload.value == """Attempted to publish 'build.done': {"files":2}"""


def test_a_question_and_its_answer_are_both_in_the_topic_log() -> None:
    """human.interact is published by the agent; human.response is the person's answer."""
    question = TopicPublished(
        topic="human.interact",
        payload=Json.of("Which DB?"),
        line_number=Ordinal(1),
        emitted_at=None,
        at=T,
    )
    log = [*_planner_at_work(policy(enforce_hat_scope=False)), question]
    log.append(HumanResponseReceived(question_id="line-1", text="Postgres", at=T))  # type: ignore[arg-type]
    entries = list(topic_log(log))  # type: ignore[arg-type]
    assert [(e.topic, e.payload.value) for e in entries] == [
        ("human.interact", "Which DB?"),
        ("human.response", "Postgres"),
    ]
