"""The simulated worlds the phase graph is explored in: what each one makes reachable."""

from __future__ import annotations

import attrs

from pipeline.core.responses import AGENT_RESPONSE
from pipeline.engine.simulation import USAGE_UNIT_USD, WorldConfig, default_chains, simulated_policy
from pipeline.events import (
    BLOCKABLE,
    Budget,
    Count,
    DurationMs,
    GateAction,
    GateBoundary,
    GateSpec,
    HookAction,
    HookPoint,
    HookSpec,
    Ordinal,
    PostconditionPolicy,
    TamperPolicy,
    Topology,
    Usd,
    WorkHat,
)

__all__ = ["worlds"]


def worlds() -> tuple[WorldConfig, ...]:
    """Small budgets (every limit within reach), a chain of two agents, every loop control on,
    with a rebase target (a rebase ends the commit phase: its own edges); a spend limit with
    every hat's responses checked (a correction turn is stopped by it too); a topology, a
    stalled one, gates, the screen alone, and lifecycle hooks that block or suspend."""
    # No retries: a retry stays in its phase, and the chain's second agent still falls back;
    # with one retry the exploration found the same edges in half again the time.
    budget = Budget(
        max_iterations=Ordinal(2),
        max_review_passes=Count(1),
        max_retries_per_agent=Count(0),
        backoff_base_ms=DurationMs(1),
        backoff_cap_ms=DurationMs(2),
        max_consecutive_failures=Ordinal(2),
        max_consecutive_malformed=Ordinal(2),
    )
    # Two invocations that report usage spend it: the max_cost edges are reachable.
    # Smaller otherwise: every other edge is found by the configurations without one. A
    # first failure or malformed line is already the last one allowed: two in a row are
    # explored without a spend limit, and this world took twice the time with them.
    spending = attrs.evolve(
        budget,
        max_iterations=Ordinal(1),
        max_retries_per_agent=Count(0),
        max_cost_usd=Usd(2 * USAGE_UNIT_USD),
        max_consecutive_failures=Ordinal(1),
        max_consecutive_malformed=Ordinal(1),
    )
    chains = default_chains(("a", "b"))
    # Every control on, each at the lowest threshold that still needs a repetition to trip.
    controls = attrs.evolve(
        simulated_policy(),
        stale_repeats=Count(2),
        max_task_blocks=Count(1),
        max_abandoned_tasks=Count(1),
        max_formatting_retries=Count(1),
    )
    # Every hat answering in a structured response, so that each role's responses can run out
    # of correction turns (in the simulated policy only the reviewer's are checked); and a
    # claim going straight to validation, as in runs recorded before review_completion.
    answering = attrs.evolve(
        controls,
        hats=tuple(attrs.evolve(hat, response_schema=AGENT_RESPONSE) for hat in controls.hats),
        review_completion=False,
    )
    # A topology of the user's own: a hat that hands on by default, once, and one that can
    # complete; and one whose starting event wakes no hat (it stalls at once). One iteration
    # and no retries keep them small: their other edges are the pipeline's development ones.
    small = attrs.evolve(
        spending,
        max_cost_usd=None,
        max_consecutive_failures=budget.max_consecutive_failures,
        max_consecutive_malformed=budget.max_consecutive_malformed,
    )
    topology = Topology(
        hats=(
            WorkHat(
                name="first",
                triggers=("task.start",),
                publishes=("build.done",),
                default_publishes="build.done",
                max_activations=Count(1),
            ),
            WorkHat(name="second", triggers=("build.done",), publishes=("LOOP_COMPLETE",)),
        )
    )
    routed = attrs.evolve(controls, topology=topology)
    # Gates: one that blocks (a task's work is not committed; a final round goes back to
    # development) and one that stops.
    gated = attrs.evolve(
        controls,
        gates=(
            GateSpec(
                name="tests",
                argv=("true",),
                timeout_s=Count(60),
                on=(GateBoundary.ITERATION, GateBoundary.FINAL),
            ),
            GateSpec(
                name="secrets",
                argv=("true",),
                timeout_s=Count(60),
                on_failure=GateAction.STOP,
            ),
        ),
    )
    # The screen alone: a task's round and the final one resolved by what it finds. On the
    # two-iteration budget: a screen that blocks a review's fix goes back to development, as
    # a gate does, which one iteration never reaches (a simulated run found the edge first).
    screened = attrs.evolve(controls, tamper=TamperPolicy(), postconditions=PostconditionPolicy())
    stalled = attrs.evolve(controls, topology=attrs.evolve(topology, starting_event="nobody"))
    # Hooks that block (before an invocation: the run stops; at a claim: it is refused) and
    # that suspend (after a failed invocation, at a question). Every point hooked at once found
    # no edge these four do not (checked when hooks became effects), in twice the time.
    hooked = attrs.evolve(
        controls,
        hooks=tuple(
            HookSpec(
                name=f"{point.value}-hook",
                point=point,
                argv=("true",),
                timeout_s=Count(60),
                on_error=HookAction.BLOCK if point in BLOCKABLE else HookAction.SUSPEND,
            )
            for point in (
                HookPoint.BEFORE_INVOCATION,
                HookPoint.COMPLETION_CLAIMED,
                HookPoint.ON_FAILURE,
                HookPoint.QUESTION_ASKED,
            )
        ),
    )
    # With every control off the graph is a part of this one (checked when this was written).
    # Without a rebase target, and every hat answering on the larger budget, found no edge
    # these do not (checked when the gates were added): left out, they saved half the time.
    return (
        WorldConfig(
            budget=budget, chains=chains, rebase_onto="main", run_id="graph", loop=controls
        ),
        WorldConfig(
            budget=spending, chains=chains, rebase_onto=None, run_id="graph", loop=answering
        ),
        WorldConfig(budget=small, chains=chains, rebase_onto=None, run_id="graph", loop=routed),
        WorldConfig(budget=small, chains=chains, rebase_onto=None, run_id="graph", loop=stalled),
        WorldConfig(budget=budget, chains=chains, rebase_onto=None, run_id="graph", loop=gated),
        WorldConfig(budget=budget, chains=chains, rebase_onto=None, run_id="graph", loop=screened),
        WorldConfig(budget=small, chains=chains, rebase_onto=None, run_id="graph", loop=hooked),
    )
