"""The configuration of a run, as frozen classes (pure data).

Read from ``ralph.toml`` by :func:`pipeline.core.config.parse_config`. Field defaults are the
defaults a user gets; ``docs/architecture/configuration.md`` describes every key.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import final

from attrs import field, frozen

from pipeline.core.agents import PRESETS, PromptVia
from pipeline.core.config._escalation import ladders
from pipeline.core.config._gates import GateConfig, PostconditionConfig, TamperConfig
from pipeline.core.config._hooks import HookConfig, NotifyConfig, hook_specs
from pipeline.core.config._limits import LimitsConfig
from pipeline.core.config._loop import HatConfig, HatsConfig, LoopConfig
from pipeline.core.config._sandbox import AgentSandboxConfig, SandboxConfig
from pipeline.events import (
    Budget,
    ContextPolicy,
    Count,
    DurationMs,
    Json,
    LoopPolicy,
    Ordinal,
    Role,
    Topology,
    Usd,
)

__all__ = [
    "AgentConfig",
    "BudgetConfig",
    "ChainConfig",
    "ContextConfig",
    "Durability",
    "Invocation",
    "McpConfig",
    "Price",
    "RalphConfig",
    "StoreConfig",
]

# HatConfig, HatsConfig and LoopConfig live in _loop; re-exported by the package.


@final
@frozen(kw_only=True)
class BudgetConfig:
    """``[budgets]``: the limits a run works within."""

    max_iterations: int = 5
    max_review_passes: int = 2
    max_retries_per_agent: int = 2
    backoff_base_ms: int = 1_000
    backoff_cap_ms: int = 60_000
    max_consecutive_failures: int = 3
    max_consecutive_malformed: int = 3
    max_runtime_s: int | None = None
    max_cost_usd: float | None = None
    """The most the run may spend, in US dollars (known costs only); None: no limit."""
    max_tokens: int | None = None
    """The most tokens the run may use (input, cached or not, and output); None: no limit."""
    max_cost_without_progress_usd: float | None = None
    """The most the run may spend since its last commit with changes; None: no breaker."""
    role_max_cost_usd: dict[str, float] = field(factory=dict)
    """The most each role may spend (``{ developer = 2.0 }``)."""
    max_event_lines: int = 1_000
    """Lines of one invocation's events file kept as facts; the rest is summed up in one."""
    max_event_bytes: int = 1 << 20
    """Bytes of one invocation's events lines kept (1 MiB); the rest is summed up in one fact."""
    max_event_line_bytes: int = 64 << 10
    """The longest events line kept whole (64 KiB); a longer one keeps only its start."""

    def to_budget(self) -> Budget:
        """The ``Budget`` a run records in ``RunStarted`` (raises ValueError when out of range)."""
        unknown = sorted(set(self.role_max_cost_usd) - {r.value for r in Role})
        if unknown:
            roles = ", ".join(r.value for r in Role)
            raise ValueError(f"role_max_cost_usd names no role {unknown[0]!r} ({roles})")
        per_role = tuple(
            (role, Usd(self.role_max_cost_usd[role.value]))
            for role in Role
            if role.value in self.role_max_cost_usd
        )
        return Budget(
            max_iterations=Ordinal(self.max_iterations),
            max_review_passes=Count(self.max_review_passes),
            max_retries_per_agent=Count(self.max_retries_per_agent),
            backoff_base_ms=DurationMs(self.backoff_base_ms),
            backoff_cap_ms=DurationMs(self.backoff_cap_ms),
            max_consecutive_failures=Ordinal(self.max_consecutive_failures),
            max_consecutive_malformed=Ordinal(self.max_consecutive_malformed),
            max_cost_usd=None if self.max_cost_usd is None else Usd(self.max_cost_usd),
            max_tokens=None if self.max_tokens is None else Count(self.max_tokens),
            max_cost_without_progress_usd=(
                None
                if self.max_cost_without_progress_usd is None
                else Usd(self.max_cost_without_progress_usd)
            ),
            role_max_cost_usd=per_role,
        )


@final
@frozen(kw_only=True)
class AgentConfig:
    """``[agents.NAME]``: one agent backend, given as a preset or as a command."""

    preset: str | None = None
    command: tuple[str, ...] | None = None
    model: str | None = None
    prompt_via: PromptVia | None = None
    """None: the preset's way, or stdin for a command."""
    timeout_s: int = 3_600
    inactivity_timeout_s: int = 600
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(factory=dict)
    """Variables added to the agent's environment (``IS_SANDBOX = "1"``, an API base URL)."""
    sandbox: AgentSandboxConfig = field(factory=AgentSandboxConfig)
    """What it needs in the sandbox beside its preset's own folders and variables."""
    output_format: str | None = None
    """How the agent's output reports usage (one of ``OUTPUT_FORMATS``); None: the preset's,
    or none for a command."""

    def usage_format(self) -> str | None:
        """The output format its usage is read with (``output_format``, else the preset's)."""
        if self.output_format is not None:
            return self.output_format
        return PRESETS[self.preset].output_format if self.preset is not None else None

    def invocation(self, hat: HatConfig | None = None, model: str | None = None) -> Invocation:
        """The argv template and prompt channel this agent is run with, wearing ``hat``.

        A preset's arguments come first, then ``--model`` when a model is set (``model``, the
        rung of the hat's escalation ladder, before the hat's model, before the agent's), then
        ``args``, then the hat's ``args``. Only a validated configuration (exactly one of
        ``preset`` and ``command``) has one.
        """
        extra = () if hat is None else hat.args
        if self.preset is not None:
            preset = PRESETS[self.preset]
            chosen = model or self.model_for(hat)
            flag = (preset.model_flag, chosen) if chosen else ()
            via = self.prompt_via or preset.prompt_via
            return Invocation(argv=(*preset.argv, *flag, *self.args, *extra), prompt_via=via)
        assert self.command is not None, "a validated agent has a preset or a command"
        via = self.prompt_via or PromptVia.STDIN
        return Invocation(argv=(*self.command, *self.args, *extra), prompt_via=via)

    def model_for(self, hat: HatConfig | None) -> str | None:
        """The model this agent runs when wearing ``hat`` (the hat's model wins)."""
        return (hat.model if hat is not None else None) or self.model


@final
@frozen(kw_only=True)
class Price:
    """``[prices."MODEL"]``: what a model costs per million tokens, in US dollars, for
    estimating the cost of agents whose CLI reports only tokens."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cache_read_usd_per_mtok: float | None = None
    """None: the input price."""
    cache_write_usd_per_mtok: float | None = None
    """None: the input price."""

    def cost(
        self, input_tokens: int, output_tokens: int, cache_read: int, cache_write: int
    ) -> float:
        """The cost of these token counts, in US dollars."""
        read, write = self.cache_read_usd_per_mtok, self.cache_write_usd_per_mtok
        return (
            input_tokens * self.input_usd_per_mtok
            + output_tokens * self.output_usd_per_mtok
            + cache_read * (self.input_usd_per_mtok if read is None else read)
            + cache_write * (self.input_usd_per_mtok if write is None else write)
        ) / 1_000_000


@final
@frozen(kw_only=True)
class Invocation:
    """How to start an agent: ``argv`` (``{prompt_file}`` / ``{prompt}`` are placeholders)."""

    argv: tuple[str, ...]
    prompt_via: PromptVia


@final
@frozen(kw_only=True)
class ChainConfig:
    """``[chains]``: for each role, the agents it falls back through, preferred first."""

    planner: tuple[str, ...] = field(factory=tuple)
    developer: tuple[str, ...] = field(factory=tuple)
    reviewer: tuple[str, ...] = field(factory=tuple)
    committer: tuple[str, ...] = field(factory=tuple)
    fixer: tuple[str, ...] = field(factory=tuple)
    default: tuple[str, ...] = field(factory=tuple)
    """The chain of every role that names none of its own."""

    def for_role(self, role: Role) -> tuple[str, ...]:
        """The chain of ``role`` (the default chain when the role names none)."""
        chain: tuple[str, ...] = getattr(self, role.value)
        return chain or self.default


class Durability(enum.Enum):
    """How far a committed step's facts are protected (``[store] durability``)."""

    FULL = "full"
    """Every fact a handler acted on is synced to disk before the next effect: a power cut
    loses nothing that was acted on (facts of redoable effects are redone)."""
    PROCESS = "process"
    """Every fact is committed before the next effect, but not synced: the run survives its
    process being killed, and a power cut may lose the last steps (never corrupting the store).
    About twice the step rate; for disposable machines and benchmarks."""


@final
@frozen(kw_only=True)
class StoreConfig:
    """``[store]``: where and how durably events are kept."""

    durability: Durability = Durability.FULL
    url: str | None = None
    """Where the events go: a SQLite path or ``sqlite:///PATH``, or ``postgresql://...``;
    None: the workspace's default store (``.git/ralph/pipeline.db``). ``--store`` on the
    command line wins."""


@final
@frozen(kw_only=True)
class RedactionConfig:
    """``[redaction]``: which secrets are masked in every fact before it is stored."""

    variables: tuple[str, ...] = ()
    """More names of environment variables (shell patterns, any case: ``"*_DSN"``) whose values
    are masked, beside the built-in ``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, ..."""


@final
@frozen(kw_only=True)
class GitConfig:
    """``[git]``: what of the repository's own code ralph's git commands may run. Off by
    default: an agent can plant hooks, filters and signing programs in the repository."""

    run_hooks: bool = False
    """Run the repository's hooks (not pre-commit and commit-msg: ralph commits ``--no-verify``)."""
    sign: bool = False
    """Sign ralph's commits and rebases with the configured signing program."""
    run_filters: bool = False
    """Run the attribute filters (``filter.X.clean``...) and merge drivers of the repository's
    own config; off, a path that needs one makes the commit fail rather than go in unfiltered."""


@final
@frozen(kw_only=True)
class RunConfig:
    """``[run]``: how ``ralph run`` starts a run."""

    worktree: bool = False
    """Each run in a git worktree of its own, on a branch of its own, beside the workspace
    (``ralph run --worktree``): many runs of one repository at once."""
    merge: bool = False
    """A run that completes in its worktree lands at once on the workspace's branch through
    the merge queue (``ralph run --merge``; a queue worker's ticket too); implies
    ``worktree``."""


@final
@frozen(kw_only=True)
class MergeConfig:
    """``[merge]``: how ``ralph worktrees merge`` lands a run's branch."""

    resolvers: tuple[str, ...] = ()
    """The agents (from ``[agents]``) that, in turn, resolve the conflicts a replay meets
    (the ``merger`` hat's chain); empty: a conflict stops for a person."""


@final
@frozen(kw_only=True)
class ContextConfig:
    """``[context]``: how runs use the workspace's memories and tasks."""

    memory_chars: int = 4000
    """The most characters of memories a prompt carries (0: none)."""
    finish_tasks: bool = False
    """Refuse the completion promise while a task is not done."""

    def policy(self) -> ContextPolicy:
        """The policy a run records for these settings."""
        return ContextPolicy(memory_chars=Count(self.memory_chars), finish_tasks=self.finish_tasks)


@final
@frozen(kw_only=True)
class McpConfig:
    """``[mcp]``: ralph's MCP server for agents (``docs/research/mcp-design.md``)."""

    agents: bool = True
    """Give each agent whose CLI has an MCP client ralph's server (``ralph mcp``), and name its
    tools in the prompt; off, agents publish with the shell command alone."""


@final
@frozen(kw_only=True)
class RalphConfig:
    """The whole ``ralph.toml``."""

    prompt_file: str = "PROMPT.md"
    rebase_onto: str | None = None
    branch: str | None = None
    """The branch the run works on (switched to, created when missing); None: the current one."""
    validate: tuple[str, ...] = ()
    """The final check (argv, run in the workspace; exit 0 passes); empty: none."""
    gates: tuple[GateConfig, ...] = ()
    """``[[gates]]``: the commands a completion must pass, run before ``validate``."""
    tamper: TamperConfig = field(factory=TamperConfig)
    postconditions: PostconditionConfig = field(factory=PostconditionConfig)
    sandbox: SandboxConfig = field(factory=SandboxConfig)
    """``[sandbox]``: where agents run and what they may see, write and reach."""
    budgets: BudgetConfig = BudgetConfig()
    agents: dict[str, AgentConfig] = field(factory=dict)
    chains: ChainConfig = ChainConfig()
    hats: HatsConfig = field(factory=HatsConfig)
    loop: LoopConfig = field(factory=LoopConfig)
    store: StoreConfig = StoreConfig()
    run: RunConfig = RunConfig()
    merge: MergeConfig = MergeConfig()
    context: ContextConfig = ContextConfig()
    """``[context]``: the memories in prompts, and whether completion waits for the tasks."""
    mcp: McpConfig = McpConfig()
    hooks: tuple[HookConfig, ...] = ()
    """``[[hooks]]``: the person's scripts run at points of a run."""
    notify: NotifyConfig = field(factory=NotifyConfig)
    """``[notify]``: a command told when a run ends, asks a person or waits on a limit."""
    redaction: RedactionConfig = RedactionConfig()
    git: GitConfig = GitConfig()
    limits: LimitsConfig = field(factory=LimitsConfig)
    """``[limits]``: what a run does when an agent's provider limits it."""
    prices: dict[str, Price] = field(factory=dict)
    """Prices by model name or pattern (``sonnet-*``), first match in file order."""

    def price_for(self, model: str | None) -> Price | None:
        """The price of ``model``: an exact key first, then the first pattern that matches."""
        if model is None:
            return None
        exact = self.prices.get(model)
        if exact is not None:
            return exact
        return next((p for key, p in self.prices.items() if fnmatchcase(model, key)), None)

    def chain_for(self, role: Role) -> tuple[str, ...]:
        """The agents ``role`` falls back through: its hat's chain, else ``[chains]``."""
        return self.hats.for_role(role).chain or self.chains.for_role(role)

    def loop_policy(
        self,
        schemas: Mapping[Role, Json] | None = None,
        hat_schemas: Mapping[str, Json] | None = None,
    ) -> LoopPolicy:
        """The loop policy a run of this configuration records in ``RunStarted``, with the
        response schemas of the roles' hats and of a topology's hats as loaded from their
        ``response_schema`` (raises ValueError when a value is out of range)."""
        loop, hats, loaded, has_gates = self.loop, self.hats, schemas or {}, bool(self.gates)
        topology = None
        if hats.topology:
            work = hat_schemas or {}
            topology = Topology(
                hats=tuple(hat.work_hat(name, work.get(name)) for name, hat in hats.work.items()),
                starting_event=loop.starting_event,
                coordinator=loop.coordinator or None,
                commits=loop.commits,
            )
        return LoopPolicy(
            hats=tuple(hats.for_role(role).hat(role, loaded.get(role)) for role in Role),
            enforce_hat_scope=loop.enforce_hat_scope,
            completion_promise=loop.completion_promise or None,
            cancellation_promise=loop.cancellation_promise or None,
            required_events=loop.required_events,
            stale_repeats=Count(loop.stale_repeats),
            max_task_blocks=Count(loop.max_task_blocks),
            max_abandoned_tasks=Count(loop.max_abandoned_tasks),
            human_timeout_s=Count(loop.human_timeout_s) if loop.human_timeout_s else None,
            max_formatting_retries=Count(loop.max_formatting_retries),
            topology=topology,
            ladders=ladders(hats),
            review_completion=loop.review_completion,
            file_only_turns=True,
            gates=tuple(gate.spec() for gate in self.gates),
            tamper=self.tamper.policy(has_gates),
            postconditions=self.postconditions.policy(has_gates),
            limits=self.limits.policy(),
            context=self.context.policy(),
            hooks=hook_specs(self.hooks, self.notify),
            pin=self.tamper.pin,
        )
