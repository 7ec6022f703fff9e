"""Hypothesis strategies for events, effects, budgets and reachable states.

Importing this module registers strategies for the value ``NewType``s and for ``Budget``, so
``st.from_type(PipelineEvent)`` builds valid events of every variant, including variants added
later, with no edits here. Hypothesis does not read attrs validators, so every bounded type has
a registered strategy that stays inside its bounds.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, TypeVar, get_args

import attrs
from hypothesis import strategies as st

from pipeline.app.testing._policies import hook_spec, limit_policies, loop_policies
from pipeline.app.testing._sandbox import endpoints, sandbox_policies
from pipeline.app.testing._topics import ID_ALPHABET, agent_names
from pipeline.app.testing._topologies import gate_spec
from pipeline.core.effects import (
    BEGUN_PHASES,
    Begin,
    Effect,
    EffectId,
    InvokeAgent,
    MaterializePrompt,
    RestorePromptPermissions,
)
from pipeline.core.responses import AGENT_RESPONSE
from pipeline.core.sandbox import Endpoint, SandboxPolicy
from pipeline.core.state import PipelineState, ResponseCheck, SpendLine
from pipeline.engine import RunOptions, run_in_memory
from pipeline.engine.simulation import (
    SimulatedWorld,
    WorldConfig,
    fake_clock,
    simulated_policy,
)
from pipeline.events import (
    AgentName,
    Budget,
    CostSource,
    Count,
    Digest,
    DurationMs,
    ExitCode,
    GateSpec,
    HookSpec,
    Instant,
    Json,
    LimitPolicy,
    LogPosition,
    LoopPolicy,
    Ordinal,
    PipelineEvent,
    PromptFileProtected,
    QuestionId,
    ResponseStatus,
    ResponseSubmitted,
    Role,
    RoleChain,
    RunForked,
    RunId,
    UsageReported,
    UsageWindowReported,
    Usd,
)
from pipeline.events.values import MAX_COUNT, MAX_FILE_MODE
from pipeline.orchestration import step_bound
from pipeline.reducers import fold

__all__ = [
    "HypothesisChooser",
    "budgets",
    "chains",
    "effects",
    "events",
    "instants",
    "json_values",
    "reachable_states",
    "register_strategies",
    "response_facts",
    "simulated_runs",
    "spend_lines",
    "usage_facts",
    "usd",
    "window_reports",
    "world_configs",
]

T = TypeVar("T")


@functools.cache
def instants() -> st.SearchStrategy[Instant]:
    """Timezone-aware UTC times between 2000 and 2100."""
    return st.datetimes(
        min_value=datetime(2000, 1, 1),
        max_value=datetime(2100, 1, 1),
        timezones=st.just(UTC),
        # ``fold`` means nothing for UTC and ISO 8601 does not carry it.
    ).map(lambda moment: Instant(moment.replace(fold=0)))


@functools.cache
def budgets(
    max_iterations: int = 4, max_review_passes: int = 3, max_retries: int = 3
) -> st.SearchStrategy[Budget]:
    """Valid budgets, small enough that simulated runs end quickly."""

    @st.composite
    def build(draw: st.DrawFn) -> Budget:
        base = draw(st.integers(0, 2_000))
        return Budget(
            max_iterations=Ordinal(draw(st.integers(1, max_iterations))),
            max_review_passes=Count(draw(st.integers(0, max_review_passes))),
            max_retries_per_agent=Count(draw(st.integers(0, max_retries))),
            backoff_base_ms=DurationMs(base),
            backoff_cap_ms=DurationMs(draw(st.integers(base, base + 60_000))),
            max_consecutive_failures=Ordinal(draw(st.integers(1, 4))),
            max_consecutive_malformed=Ordinal(draw(st.integers(1, 5))),
            max_cost_usd=draw(st.none() | limits(5.0)),
            max_tokens=draw(st.none() | st.integers(1, 200_000).map(Count)),
            max_cost_without_progress_usd=draw(st.none() | limits(3.0)),
            role_max_cost_usd=tuple(
                (role, draw(limits(3.0)))
                for role in Role
                if draw(st.integers(0, 7), label=f"limit the {role.value}") == 0
            ),
        )

    return build()


@functools.cache
def limits(max_value: float) -> st.SearchStrategy[Usd]:
    """Spend limits: amounts above 0 up to ``max_value``."""
    return usd(max_value).filter(lambda amount: amount > 0)


@functools.cache
def usd(max_value: float = 1_000.0) -> st.SearchStrategy[Usd]:
    """Amounts of US dollars from 0 to ``max_value`` (finite)."""
    return st.floats(0.0, max_value, allow_nan=False, allow_infinity=False).map(Usd)


@functools.cache
def usage_facts() -> st.SearchStrategy[UsageReported]:
    """``UsageReported`` facts whose cost and cost source agree."""

    def build(source: CostSource, cost: Usd) -> st.SearchStrategy[UsageReported]:
        maybe = st.none() | st.from_type(Count)
        return st.builds(
            UsageReported,
            role=st.sampled_from(Role),
            agent=agent_names(),
            model=st.none() | st.text(max_size=20),
            input_tokens=maybe,
            output_tokens=maybe,
            cache_read_tokens=maybe,
            cache_write_tokens=maybe,
            turns=maybe,
            session_id=st.none() | st.text(max_size=20),
            api_duration_ms=st.none() | st.from_type(DurationMs),
            cost_usd=st.none() if source is CostSource.UNKNOWN else st.just(cost),
            cost_source=st.just(source),
            note=st.text(max_size=40),
            at=instants(),
        )

    return st.tuples(st.sampled_from(CostSource), usd()).flatmap(lambda pair: build(*pair))


@functools.cache
def chains(max_agents: int = 3) -> st.SearchStrategy[tuple[RoleChain, ...]]:
    """A chain of 1 to ``max_agents`` distinct agents for every role."""
    agents = st.lists(agent_names(), min_size=1, max_size=max_agents, unique=True).map(tuple)

    def chain_of(role: Role) -> st.SearchStrategy[RoleChain]:
        return st.builds(RoleChain, role=st.just(role), agents=agents)

    return st.tuples(*(chain_of(role) for role in Role))


@functools.cache
def json_values() -> st.SearchStrategy[Json]:
    """Any JSON value an agent could publish: scalars, and arrays and objects of them."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-(2**63), 2**64 - 1)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=20)
    )
    values = st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=12,
    )
    return values.map(Json.of)


@functools.cache
def window_reports() -> st.SearchStrategy[UsageWindowReported]:
    """``UsageWindowReported`` facts: a window's share from empty to over full."""
    return st.builds(UsageWindowReported, utilization=st.floats(0.0, 1.5))


@functools.cache
def spend_lines() -> st.SearchStrategy[SpendLine]:
    """What a set of invocations used, as the ledger folds it: counts, and a finite known
    cost (a fold of validated ``Usd`` values is never infinite)."""
    counts = st.integers(0, MAX_COUNT)
    return st.builds(
        SpendLine,
        invocations=counts,
        cost_usd=st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False),
        unknown_cost=counts,
        input_tokens=counts,
        output_tokens=counts,
        cache_read_tokens=counts,
        cache_write_tokens=counts,
    )


@functools.cache
def response_facts() -> st.SearchStrategy[ResponseSubmitted]:
    """A structured response with a verdict that agrees with itself: a valid one with no
    problems, an invalid one with at least one."""
    valid = st.builds(ResponseSubmitted, status=st.just(ResponseStatus.VALID), problems=st.just(()))
    wrong = st.sampled_from([ResponseStatus.INVALID_JSON, ResponseStatus.SCHEMA_VIOLATION])
    problems = st.lists(st.text(max_size=40), min_size=1, max_size=3).map(tuple)
    return valid | st.builds(ResponseSubmitted, status=wrong, problems=problems)


def _resolve_annotations(*roots: object) -> None:
    """Resolve the string annotations of every attrs class reachable from ``roots``:
    hypothesis reads a field's ``type``, which ``from __future__ import annotations`` leaves a
    string until ``attrs.resolve_types`` runs (the converter makes its hooks lazily, so it no
    longer does it for every class at import)."""
    seen: set[object] = set()
    pending = list(roots)
    while pending:
        kind = pending.pop()
        if kind in seen:
            continue
        seen.add(kind)
        pending.extend(get_args(kind))
        if isinstance(kind, type) and attrs.has(kind):
            attrs.resolve_types(kind)
            pending.extend(field.type for field in attrs.fields(kind))


_resolve_annotations(PipelineEvent, Effect, PipelineState)


def register_strategies() -> None:
    """Register strategies for every bounded value type (idempotent)."""
    register = st.register_type_strategy
    register(RunId, st.text(ID_ALPHABET, min_size=1, max_size=24).map(RunId))
    register(AgentName, agent_names())
    register(QuestionId, st.text(ID_ALPHABET, min_size=1, max_size=16).map(QuestionId))
    register(EffectId, st.text(ID_ALPHABET, min_size=1, max_size=32).map(EffectId))
    register(Digest, st.text("0123456789abcdef", min_size=64, max_size=64).map(Digest))
    register(Instant, instants())
    register(Count, st.integers(0, MAX_COUNT).map(Count))
    register(Ordinal, st.integers(1, MAX_COUNT).map(Ordinal))
    register(LogPosition, st.integers(0, MAX_COUNT).map(LogPosition))
    register(DurationMs, st.integers(0, MAX_COUNT).map(DurationMs))
    register(ExitCode, st.integers(-64, 255).map(ExitCode))
    # File modes are Counts bounded to chmod's bits: the type alone cannot say so.
    modes = st.integers(0, MAX_FILE_MODE).map(Count)
    register(PromptFileProtected, st.builds(PromptFileProtected, original_mode=modes))
    register(ResponseCheck, st.builds(ResponseCheck, failures=st.integers(0, MAX_COUNT)))
    # A begin's phase is one whose task starts with a fact: the type alone cannot say so.
    register(Begin, st.builds(Begin, phase=st.sampled_from(sorted(BEGUN_PHASES))))
    # A response schema is a JSON object (or boolean): a top-level null would read back as
    # "no schema", so a prompt's schema is drawn as the hats' are.
    schemas = st.none() | st.just(AGENT_RESPONSE)
    register(MaterializePrompt, st.builds(MaterializePrompt, response_schema=schemas))
    register(InvokeAgent, st.builds(InvokeAgent, response_schema=schemas))
    register(ResponseSubmitted, response_facts())
    # A fork's model is a model name (printable, no blanks, no leading dash).
    models = st.none() | st.sampled_from(["m-fork", "m-strong", "m-opus-4"])
    register(RunForked, st.builds(RunForked, model=models))
    register(
        RestorePromptPermissions,
        st.builds(RestorePromptPermissions, mode=st.none() | modes),
    )
    register(Budget, budgets())
    register(Usd, usd())
    register(UsageReported, usage_facts())
    register(UsageWindowReported, window_reports())
    register(LimitPolicy, limit_policies())
    register(SpendLine, spend_lines())
    register(Json, json_values())
    register(LoopPolicy, loop_policies())
    register(GateSpec, gate_spec())
    register(HookSpec, hook_spec())
    register(Endpoint, endpoints())
    register(SandboxPolicy, sandbox_policies())
    register(
        RoleChain,
        st.builds(
            RoleChain,
            role=st.sampled_from(Role),
            agents=st.lists(agent_names(), max_size=3, unique=True).map(tuple),
        ),
    )


register_strategies()


def events() -> st.SearchStrategy[PipelineEvent]:
    """Any event of any variant, with valid field values."""
    return st.from_type(PipelineEvent)  # type: ignore[arg-type]  # a union alias is a valid type form


def effects() -> st.SearchStrategy[Effect]:
    """Any effect of any variant."""
    return st.from_type(Effect)  # type: ignore[arg-type]  # a union alias is a valid type form


@functools.cache
def world_configs() -> st.SearchStrategy[WorldConfig]:
    """Configurations for a simulated run: budget, chains, maybe a rebase target. Built once:
    a strategy is immutable, and building (and validating) this tree for every simulated
    run drawn cost about a quarter of drawing it."""
    return st.builds(
        WorldConfig,
        budget=budgets(),
        chains=chains(),
        rebase_onto=st.one_of(st.none(), st.just("main")),
        loop=st.just(simulated_policy()) | loop_policies(),
    )


_ONE_IN_FOUR: Final = st.integers(0, 3)


class HypothesisChooser:
    """Lets hypothesis make the simulated world's choices, so it can explore and shrink them."""

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw

    def pick(self, options: Sequence[T], what: str) -> T:
        """One of ``options``, chosen by hypothesis: the first (the happy outcome) three times
        in four, any of them otherwise, so that runs reach the late phases often while every
        outcome stays possible (and examples shrink towards the happy path)."""
        if self._draw(_ONE_IN_FOUR, label=f"{what}: take the first") < 3:
            return options[0]
        return self._draw(st.sampled_from(options), label=what)

    def number(self, low: int, high: int, what: str) -> int:
        """A whole number from ``low`` to ``high``, chosen by hypothesis."""
        return self._draw(st.integers(low, high), label=what)


@st.composite
def simulated_runs(
    draw: st.DrawFn, configs: st.SearchStrategy[WorldConfig] | None = None
) -> tuple[WorldConfig, tuple[PipelineEvent, ...], PipelineState]:
    """A whole run in a simulated world whose every outcome hypothesis chooses.

    Returns the configuration, the event log and the final state.
    """
    config = draw(configs if configs is not None else world_configs())
    clock = fake_clock(step=timedelta(seconds=1))
    world = SimulatedWorld(config=config, chooser=HypothesisChooser(draw), clock=clock)
    bound = step_bound(config.budget, config.chains, config.loop)
    result = run_in_memory(world, options=RunOptions(max_effects=bound, clock=clock))
    return config, result.events, result.state


@st.composite
def reachable_states(draw: st.DrawFn) -> PipelineState:
    """A state some simulated run passes through (from not started to terminal)."""
    _config, log, _final = draw(simulated_runs())
    cut = draw(st.integers(0, len(log)), label="prefix length")
    return fold(log[:cut])
