"""``RunForked`` with an agent and a model (``ralph fork --agent/--model``): the fork's agent
goes first in every chain, its model is what every invocation asks for, and a fork naming
neither goes on exactly as its source would."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs

from pipeline.app.workspace import fork_point
from pipeline.core.effects import InvokeAgent, MaterializePrompt
from pipeline.core.state import PipelineState
from pipeline.core.state.hats import agents_for
from pipeline.events import (
    AgentName,
    Count,
    Digest,
    Instant,
    IterationStatus,
    PromptMaterialized,
    Role,
    RunForked,
    RunId,
)
from pipeline.orchestration import next_effect
from pipeline.reducers import fold, reduce
from tests.support import scripted_run

EVENTS = list(scripted_run({"iteration status": [IterationStatus.PARTIAL]}).events)
AT = fork_point(EVENTS, len(EVENTS) // 2)
NOW = Instant(datetime(2026, 11, 26, 12, 0, tzinfo=UTC))


def forked(agent: str | None = None, model: str | None = None) -> RunForked:
    """The fact a fork after :data:`AT` facts records."""
    return RunForked(
        source_run=RunId("source"),
        at_sequence=Count(AT),
        commit="0" * 40,
        branch="ralph/fork-x",
        at=NOW,
        agent=None if agent is None else AgentName(agent),
        model=model,
    )


def invocation_after(state: PipelineState) -> InvokeAgent:
    """The invocation the fork's next prompt is made for."""
    prompt = next_effect(state)
    assert isinstance(prompt, MaterializePrompt), prompt
    made = PromptMaterialized(
        kind=prompt.kind, path="p.md", content_digest=Digest("a" * 64), at=NOW
    )
    invoke = next_effect(reduce(state, made))
    assert isinstance(invoke, InvokeAgent), invoke
    return invoke


def test_the_forks_agent_goes_first_and_its_model_is_asked_for() -> None:
    assert AT > 0
    before = fold(EVENTS[:AT])
    state = reduce(before, forked("codex", "m-fork"))
    for role in (Role.PLANNER, Role.DEVELOPER, Role.REVIEWER, Role.COMMITTER):
        chain = agents_for(state, role)
        assert chain[0] == "codex"
        assert sorted(chain) == sorted(agents_for(before, role))  # the rest stay fallbacks
    invoke = invocation_after(state)
    assert (invoke.agent, invoke.model) == ("codex", "m-fork")
    # The source, at the same point, asked for its chain's first agent and no model.
    source = invocation_after(before)
    assert (source.agent, source.model) == ("claude", None)


def test_a_fork_naming_neither_goes_on_as_its_source() -> None:
    before = fold(EVENTS[:AT])
    state = reduce(before, forked())
    assert state.run == before.run
    assert attrs.evolve(state, sequence=before.sequence) == before
    assert invocation_after(state) == attrs.evolve(
        invocation_after(before), effect_id=invocation_after(state).effect_id
    )


def test_a_fork_of_a_fork_keeps_what_the_first_chose_unless_it_chooses_again() -> None:
    first = reduce(fold(EVENTS[:AT]), forked("codex", "m-fork"))
    again = reduce(first, forked())
    assert again.run is not None
    assert (again.run.agent, again.run.model) == ("codex", "m-fork")
    other = reduce(first, forked(model="m-strong"))
    assert other.run is not None
    assert (other.run.agent, other.run.model) == ("codex", "m-strong")


def test_a_fork_before_the_run_started_is_an_anomaly() -> None:
    state = reduce(PipelineState(), forked("codex"))
    assert state.run is None
    assert state.ledger.anomalies == 1


def test_a_forks_model_goes_only_to_its_agent_not_to_a_fallback() -> None:
    """With an agent named, a fallback runs its own model; with none, every agent asks for
    the fork's model."""
    named = reduce(fold(EVENTS[:AT]), forked("codex", "m-fork"))
    fallen = attrs.evolve(named, agent=attrs.evolve(named.agent, chain_position=1))
    invoke = invocation_after(fallen)
    assert (invoke.agent, invoke.model) == ("claude", None)
    unnamed = reduce(fold(EVENTS[:AT]), forked(model="m-fork"))
    fallen = attrs.evolve(unnamed, agent=attrs.evolve(unnamed.agent, chain_position=1))
    invoke = invocation_after(fallen)
    assert (invoke.agent, invoke.model) == ("codex", "m-fork")


def test_status_names_the_forks_agent_at_work() -> None:
    """``ralph status``'s active agent is the one the fork runs, not the chain's first."""
    from pipeline.app.cli._render import state_rows
    from pipeline.reducers.views import active_agent

    state = reduce(fold(EVENTS[:AT]), forked("codex", "m-fork"))
    working = active_agent(state)
    assert working is not None
    assert ": codex" in working
    assert ("fork's own", "agent codex first, model m-fork") in state_rows(state)
