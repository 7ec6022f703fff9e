"""The hat the current task is worked in, and what follows from it: its agent chain and the
structured response it answers with (pure).

A role wears its own hat in the built-in pipeline; in a user's topology the developer's work
is done in the topology hat the routing woke.
"""

from __future__ import annotations

from pipeline.core.state.model import PipelineState
from pipeline.events import AgentName, Json, Role, WorkHat

__all__ = ["agents_for", "response_schema_for", "working_hat"]


def working_hat(state: PipelineState, role: Role) -> WorkHat | None:
    """The topology hat ``role`` works in now (None: a role's own hat, the built-in way)."""
    run, hat = state.run, state.routing.hat
    if run is None or run.loop.topology is None or hat is None or role is not Role.DEVELOPER:
        return None
    return run.loop.topology.hat(hat)


def agents_for(state: PipelineState, role: Role) -> tuple[AgentName, ...]:
    """The agent chain of ``role``'s current task: a topology hat's own chain when it has one,
    else the role's; a fork's agent first (its chain's own agents stay its fallbacks)."""
    run = state.run
    if run is None:
        return ()
    working = working_hat(state, role)
    chain = working.chain if working is not None and working.chain else run.chain(role)
    if run.agent is None:
        return chain
    return (run.agent, *(agent for agent in chain if agent != run.agent))


def response_schema_for(state: PipelineState, role: Role) -> Json | None:
    """The schema ``role``'s current task answers with (None: it gives no structured one)."""
    working = working_hat(state, role)
    if working is not None:
        return working.response_schema
    hat = None if state.run is None else state.run.loop.hat(role)
    return None if hat is None else hat.response_schema
