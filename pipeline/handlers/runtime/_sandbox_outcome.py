"""What an agent's outcome in the sandbox says (I/O-free, but of the handlers): whether it
may have reached its model, and its failure said with what the sandbox lets it reach, as
measured with the real CLIs (``docs/architecture/sandbox.md``, "The agent CLIs inside")."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from pipeline.core.sandbox import Endpoint, NetworkMode, SandboxPolicy
from pipeline.events import (
    AgentName,
    ConnectionRefused,
    Count,
    ErrorKind,
    Instant,
    InvocationFailed,
    InvocationTimedOut,
    PipelineEvent,
    ProviderLimited,
    Role,
)
from pipeline.events.values import MAX_COUNT
from pipeline.handlers.sandbox import AgentNeeds, Sandbox, reachable

__all__ = ["cut_off", "in_sandbox", "model_reached", "sandbox_hint"]


def model_reached(
    sandbox: Sandbox | None, needs: AgentNeeds, reported: bool, asked: frozenset[Endpoint]
) -> bool:
    """Whether an agent with ``needs`` may have reached its model. In ``sandbox``, an agent
    CLI (a preset) did when it asked the network gate for one of its model endpoints
    (``asked``: the allowed endpoints it asked for), answered or not, and never when the
    sandbox lets it reach nothing. Elsewhere, and for a CLI whose endpoints are not known,
    ``reported`` tells: its output reported usage, or its format reports none. (Some CLIs
    print usage figures, zeros, whether or not a request got out; others print none when
    their provider refused them.)"""
    if sandbox is None or needs.preset is None:
        return reported
    if not reachable(sandbox.policy, needs):
        return False
    models = set(needs.endpoints)
    return bool(models & asked) if models else reported


def cut_off(policy: SandboxPolicy, needs: AgentNeeds) -> str | None:
    """Why an agent CLI (a preset) with ``needs`` can reach nothing at all under ``policy``,
    so that no invocation of it can reach its model, or None (it may reach something, or it
    is a command of the person's, which may need no network)."""
    if needs.preset is None or reachable(policy, needs):
        return None
    if policy.network is NetworkMode.NONE:
        return "[sandbox] network is none"
    return "its CLI's settings name no model endpoint, and no allow entry applies"


def sandbox_hint(
    fact: PipelineEvent, reachable: tuple[Endpoint, ...], cut: str | None = None
) -> PipelineEvent:
    """``fact`` as said of an agent that failed in the sandbox before any model request: the
    failure names what the sandbox lets it reach, and is no rate limit whatever its output
    says (an agent that cannot connect retries with "overloaded" messages), nor retried.

    An agent CLI ``cut`` off from everything (:func:`cut_off`, the reason) failed because of
    the configuration: its failure, or its timeout (a CLI may wait for the network without end),
    is said as ``ErrorKind.CONFIGURATION``, so no dev-fix runs the same cut-off agents and
    the run stops for a person once no agent of the chain is left."""
    if isinstance(fact, ProviderLimited):
        # A limit told by an agent that never got a request out is its own words, no limit.
        fact = InvocationFailed(
            role=fact.role,
            agent=fact.agent,
            error=ErrorKind.NON_ZERO_EXIT,
            message=fact.message,
            retriable=True,
            at=fact.at,
        )
    if cut is not None and isinstance(fact, InvocationTimedOut):
        said = f"stopped by the {fact.kind.value} timeout after {fact.after_ms} ms"
        kind = ErrorKind.CONFIGURATION
        fact = InvocationFailed(
            role=fact.role, agent=fact.agent, error=kind, message=said, retriable=False, at=fact.at
        )
    if not isinstance(fact, InvocationFailed):
        return fact
    if cut is not None:
        hint = f"the sandbox lets this agent reach nothing ({cut}), so it cannot reach its model"
        kind = ErrorKind.CONFIGURATION
    else:
        hint = f"the sandbox lets this agent reach only {', '.join(map(str, reachable))}"
        kind = fact.error
    return attrs.evolve(fact, error=kind, message=f"{fact.message}; {hint}", retriable=False)


def in_sandbox(
    sandbox: Sandbox | None,
    needs: AgentNeeds,
    outcome: tuple[PipelineEvent, ...],
    reached_model: bool,
    refused: Mapping[Endpoint, int],
    who: tuple[Role, AgentName, Instant],
) -> tuple[PipelineEvent, ...]:
    """The ``outcome`` of an invocation (``who``: its role, agent and the time now) as run in
    ``sandbox``: a failure before any model request names what the sandbox lets the agent
    reach (:func:`sandbox_hint`), and one ``ConnectionRefused`` follows per endpoint the
    network gate ``refused``."""
    if sandbox is None:
        return outcome
    if not reached_model:
        allowed, cut = reachable(sandbox.policy, needs), cut_off(sandbox.policy, needs)
        outcome = tuple(sandbox_hint(fact, allowed, cut) for fact in outcome)
    role, agent, at = who
    refusals = tuple(
        ConnectionRefused(
            role=role,
            agent=agent,
            endpoint=str(endpoint),
            count=Count(min(times, MAX_COUNT)),
            at=at,
        )
        for endpoint, times in sorted(refused.items(), key=str)
    )
    return (*outcome, *refusals)
