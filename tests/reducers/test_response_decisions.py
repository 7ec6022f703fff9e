"""Structured-response decisions for any sequence of answers (hypothesis, in memory)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.responses import AGENT_RESPONSE
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
    Count,
    HumanInterventionRequired,
    InvocationStarted,
    InvocationSucceeded,
    ResponseStatus,
    ResponseSubmitted,
    Role,
)
from pipeline.orchestration import step_bound
from pipeline.reducers.views import response_log
from tests.reducers.test_loop_control import HATS, policy
from tests.support import budget


@given(
    answers=st.lists(st.sampled_from(SIMULATED_RESPONSES), max_size=8),
    retries=st.integers(0, 3),
)
def test_calls_per_response_are_bounded_and_every_call_is_logged_once(
    answers: Sequence[str], retries: int
) -> None:
    """The developer must answer an agent-response. Whatever it answers: at most
    1 + max_formatting_retries calls per task, one ResponseSubmitted per successful call, and
    after 1 + max_formatting_retries bad answers in a row the run asks for a person."""
    hats = tuple(
        attrs.evolve(h, response_schema=AGENT_RESPONSE) if h.role is Role.DEVELOPER else h
        for h in HATS
    )
    loop = policy(hats=hats, max_formatting_retries=Count(retries), enforce_hat_scope=False)
    config = WorldConfig(
        budget=budget(max_iterations=1),
        chains=default_chains(("a",)),
        rebase_onto=None,
        run_id="r",
        loop=loop,
    )
    chooser = ScriptedChooser(answers={"structured response": list(answers)})
    world = SimulatedWorld(config=config, chooser=chooser, clock=fake_clock())
    result = run_in_memory(
        world, options=RunOptions(max_effects=step_bound(config.budget, config.chains, loop))
    )
    events = result.events
    developer = [i for i, e in enumerate(events) if getattr(e, "role", None) is Role.DEVELOPER]
    calls = [i for i in developer if isinstance(events[i], InvocationStarted)]
    successes = [i for i in developer if isinstance(events[i], InvocationSucceeded)]
    responses = [events[i] for i in developer if isinstance(events[i], ResponseSubmitted)]
    assert len(responses) == len(successes)
    assert len(list(response_log(events))) == len(successes), "one log row per call"
    assert 1 <= len(calls) <= 1 + retries
    valid = [r.status is ResponseStatus.VALID for r in responses]
    assert all(not v for v in valid[:-1]), "a valid response ends the corrections"
    needed = [e for e in events if isinstance(e, HumanInterventionRequired)]
    if not valid[-1]:
        assert len(calls) == 1 + retries
        assert [e.reason for e in needed] == ["FORMATTING_CORRECTION_EXHAUSTED"]
    else:
        assert needed == []
