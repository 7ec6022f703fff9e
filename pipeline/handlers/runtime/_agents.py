"""The ``InvokeAgent`` handler: run the configured agent program and report facts (I/O).

The agent is started from its configuration (a preset or a command; argv only, never a shell),
in its own process group, with the run's environment. Its output is stored under the run's
folder. What happened is reported as facts: the start, then success plus the role's report, or
a failure with its kind and whether the same agent may succeed later. Whether to retry, fall
back or give up is the reducer's decision, never this handler's. An invocation that ended on
its provider's limit is told from its log (:func:`limit_of`, reading the machine's time zone
for a reset said as a time of day), and how full its usage windows are (:func:`window_of`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path

import attrs
from attrs import frozen
from returns.methods import unwrap_or_failure

from pipeline.core.config import AgentConfig, HatConfig, HatsConfig, Price, PromptVia
from pipeline.core.effects import InvokeAgent
from pipeline.events import (
    AgentName,
    CostSource,
    Count,
    Digest,
    DurationMs,
    ErrorKind,
    ExitCode,
    GitMetadataRestored,
    Instant,
    InvocationStarted,
    InvocationSucceeded,
    InvocationTimedOut,
    Ordinal,
    PipelineEvent,
    PromptKind,
    ProviderLimited,
    Role,
    UsageReported,
    UsageWindowReported,
    Usd,
)
from pipeline.events.values import MAX_COUNT
from pipeline.handlers.agents import ProcessResult, ProcessSpec
from pipeline.handlers.agents.limits import read_limit, read_window, text_limit
from pipeline.handlers.agents.mcp import wired_for
from pipeline.handlers.agents.usage import UsageFigures, read_usage
from pipeline.handlers.intake._files import card_path
from pipeline.handlers.responses import judged
from pipeline.handlers.runtime._failures import (
    configuration_error,
    is_rate_limited,
    last_line,
    strip_ansi,
)
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._ownfiles import empty_folder, read_own, remove_own
from pipeline.handlers.runtime._prompts import render_tools
from pipeline.handlers.runtime._reports import invocation_failed, read_report
from pipeline.handlers.runtime._sandbox_outcome import in_sandbox, model_reached
from pipeline.handlers.runtime._sandboxing import SandboxChoice, run_in
from pipeline.handlers.runtime._tail import last_bytes
from pipeline.handlers.sandbox import AgentNeeds, Sandbox

__all__ = ["MAX_ARGUMENT_BYTES", "AgentInvoker", "limit_of", "window_of"]


MAX_ARGUMENT_BYTES = 100_000
"""The longest prompt passed as one argument (Linux refuses arguments over 128 KiB)."""

_TAIL_BYTES = 65_536
"""How much of the end of a failed agent's output is read for what it said."""


def _no_price(_model: str | None) -> Price | None:
    return None


@frozen(kw_only=True)
class AgentInvoker:
    """Runs agents for one run of one workspace."""

    layout: WorkspaceLayout
    run_id: str
    agents: Mapping[str, AgentConfig]
    hats: HatsConfig
    """Each role's hat: its model and agent arguments apply to whichever agent runs it."""
    environment: Mapping[str, str]
    """The run's environment for agents (``RALPH_*`` and ``PATH`` already set)."""
    clock: Callable[[], Instant]
    grace_s: float = 5.0
    price_for: Callable[[str | None], Price | None] = _no_price
    """The configured price of a model (``[prices]``), for agents that report only tokens."""
    sandbox: Sandbox | None = None
    """Where agents run (None: directly)."""
    choice: SandboxChoice | None = None
    """The sandbox chosen when the run started, with what each agent needs in it (its model
    endpoints, which its network lets it reach, its folders and variables)."""
    mcp: bool = True
    """``[mcp] agents``: give an agent whose CLI takes it ralph's MCP server."""

    def __call__(self, effect: InvokeAgent) -> Iterator[tuple[PipelineEvent, ...]]:
        """Run the agent ``effect`` names, in two steps: the fact that it starts (recorded
        before its process does, so a reader of the log sees an agent at work, and a crash
        leaves a trace of the attempt), then what happened."""
        config = self.agents.get(effect.agent)
        model = None if config is None else effect.model or config.model_for(self._hat(effect))
        yield (
            InvocationStarted(
                role=effect.role,
                agent=effect.agent,
                model=model,
                attempt=Ordinal(effect.attempt),
                at=self.clock(),
            ),
        )
        yield self._run(effect, config, model)

    def _hat(self, effect: InvokeAgent) -> HatConfig:
        """The hat the agent wears: a topology's hat by name, else its role's."""
        if effect.hat is not None:
            return self.hats.work.get(effect.hat, HatConfig())
        return self.hats.for_role(effect.role)

    def _run(
        self, effect: InvokeAgent, config: AgentConfig | None, model: str | None
    ) -> tuple[PipelineEvent, ...]:
        """Run the agent and report what happened after its start."""
        now = self.clock
        role, name = effect.role, effect.agent
        hat = self._hat(effect)
        if config is None:
            message = f"agent {name!r} is not configured in ralph.toml"
            return invocation_failed(effect, ErrorKind.NOT_FOUND, message, now(), retriable=False)
        prompt_path = self.layout.prompt(effect.prompt_kind)
        try:
            prompt = prompt_path.read_bytes()
            if effect.prompt_kind is PromptKind.FORMAT_CORRECTION:
                # A correction rewrites only the response: the role's report stays for later.
                remove_own(self.layout.output("response"))
            else:
                # Every invocation starts with an empty report folder: no stale report counts.
                empty_folder(self.layout.output_dir)
        except OSError as error:
            message = f"cannot prepare the prompt {prompt_path} or the report folder: {error}"
            return invocation_failed(effect, ErrorKind.OTHER, message, now(), retriable=True)
        invocation = config.invocation(hat, effect.model)
        env = {
            **self.environment,
            **config.env,
            "RALPH_ROLE": role.value,
            "RALPH_PROMPT_KIND": effect.prompt_kind.value,
            "RALPH_PROMPT_FILE": str(prompt_path),
            "RALPH_OUTPUT_DIR": str(self.layout.output_dir),
            "RALPH_ITERATION": str(effect.iteration),
            "RALPH_REVIEW_PASS": str(effect.review_pass),
            "RALPH_ATTEMPT": str(effect.attempt),
            "RALPH_AGENT": name,
            # The hat of a topology the agent works as ("" in the built-in pipeline).
            "RALPH_HAT": effect.hat or "",
            # The model it runs: the escalation rung's, the hat's or its own ("" : the CLI's).
            "RALPH_MODEL": model or "",
        }
        needs = AgentNeeds() if self.choice is None else self.choice.needs(name)
        template = invocation.argv
        card = card_path(self.layout.root, self.run_id)
        sandboxed = self.sandbox is not None
        wired = self.mcp and wired_for(config.preset, effect.prompt_kind, card, env, sandboxed)
        if wired:
            template += wired.argv
            env |= wired.env
            # the agent's own ``env`` is set as given in the sandbox: the merged value wins
            needs = attrs.evolve(
                needs, set_env={**needs.set_env, **wired.env}, home_files=wired.home_files
            )
            if invocation.prompt_via is not PromptVia.FILE:  # the file is every agent's
                prompt += render_tools(wired.tool).encode()
        argv, stdin = _argv(template, invocation.prompt_via, prompt, prompt_path)
        if argv is None:
            message = (
                f"the prompt is {len(prompt)} bytes, too long to pass as an argument; "
                f'set prompt_via = "file" for agent {name!r}'
            )
            return invocation_failed(effect, ErrorKind.OTHER, message, now(), retriable=False)
        log = self.layout.agent_log(self.run_id, _log_name(effect))
        log.parent.mkdir(parents=True, exist_ok=True)
        spec = ProcessSpec(
            argv=argv,
            cwd=self.layout.root,
            env=env,
            output_path=log,
            stdin=stdin,
            total_timeout_s=float(config.timeout_s),
            inactivity_timeout_s=float(config.inactivity_timeout_s),
            grace_s=self.grace_s,
            group_file=self.layout.agent_group,
        )
        result, seen = run_in(self.sandbox, spec, needs)
        put_back = self._links_put_back()
        if result.exit_code is None and result.timed_out is None:
            return (*self._outcome(effect, result, log), *put_back)  # it never ran: no usage
        usage, reported = self._usage(effect, config, model, log)
        reached_model = model_reached(self.sandbox, needs, reported, seen.asked)
        outcome = self._outcome(effect, result, log, reached_model)
        who = (role, name, now())
        said = in_sandbox(self.sandbox, needs, outcome, reached_model, seen.refused, who)
        windows = window_of(role, name, config.usage_format(), log, now())
        return (usage, *said, *windows, *put_back)

    def _links_put_back(self) -> tuple[PipelineEvent, ...]:
        """``GitMetadataRestored`` naming the person's links in a CLI's folder (absolute
        paths) that a sandboxed agent replaced and the sandbox put back, else nothing."""
        paths = () if self.sandbox is None else self.sandbox.take_restored()
        return (GitMetadataRestored(paths=paths, at=self.clock()),) if paths else ()

    def _usage(
        self, effect: InvokeAgent, config: AgentConfig, model: str | None, log: Path
    ) -> tuple[UsageReported, bool]:
        """What the invocation used, read from its log by its output format's parser, and
        whether it reached its model (as far as the output tells: an agent whose format
        reports usage but reported none did not)."""
        output_format = config.usage_format()
        figures = read_usage(output_format, log)
        reported_model = figures.model or model
        price = self.price_for(reported_model)
        cost, source, note = _cost(figures, price, output_format, reported_model)
        if output_format is not None and not figures.reported_anything:
            note = f"the {output_format} output reported no usage" + (f"; {note}" if note else "")
        note = "; ".join(part for part in (note, figures.retries_note) if part)
        fact = UsageReported(
            role=effect.role,
            agent=effect.agent,
            model=reported_model,
            input_tokens=_count(figures.input_tokens),
            output_tokens=_count(figures.output_tokens),
            cache_read_tokens=_count(figures.cache_read_tokens),
            cache_write_tokens=_count(figures.cache_write_tokens),
            turns=_count(figures.turns),
            session_id=figures.session_id,
            api_duration_ms=None
            if figures.api_duration_ms is None
            else DurationMs(figures.api_duration_ms),
            cost_usd=cost,
            cost_source=source,
            note=note,
            at=self.clock(),
        )
        return fact, output_format is None or figures.reported_anything

    def _outcome(
        self,
        effect: InvokeAgent,
        result: ProcessResult,
        log: Path,
        reached_model: bool = True,
    ) -> tuple[PipelineEvent, ...]:
        now = self.clock
        role, name = effect.role, effect.agent
        if result.timed_out is not None:
            return (
                InvocationTimedOut(
                    role=role,
                    agent=name,
                    kind=result.timed_out,
                    after_ms=DurationMs(result.duration_ms),
                    at=now(),
                ),
            )
        if result.exit_code is None:
            kind = ErrorKind.NOT_FOUND if result.not_found else ErrorKind.OTHER
            message = result.start_error or "the agent could not be started"
            return invocation_failed(effect, kind, message, now(), retriable=False)
        if result.exit_code != 0:
            tail = strip_ansi(last_bytes(log, _TAIL_BYTES)[0])
            where = self.layout.relative(log)
            refused = configuration_error(tail)
            if refused is not None:
                message = f"exit status {result.exit_code}: {refused} (see {where})"
                return invocation_failed(
                    effect, ErrorKind.CONFIGURATION, message, now(), retriable=False
                )
            agent = self.agents.get(name)
            output_format = None if agent is None else agent.usage_format()
            limited = limit_of(role, name, output_format, log, tail, now())
            if limited is not None:
                return (limited,)
            kind = ErrorKind.KILLED if result.exit_code < 0 else ErrorKind.NON_ZERO_EXIT
            message = f"exit status {result.exit_code}: {last_line(tail)} (see {where})"
            # An agent whose output format reports usage but that reported none never reached
            # its model: what stopped it will stop it again.
            retriable = kind is ErrorKind.KILLED or reached_model
            if not retriable:
                message += "; it failed before any model request"
            return invocation_failed(effect, kind, message, now(), retriable=retriable)
        succeeded = InvocationSucceeded(
            role=role,
            agent=name,
            exit_code=ExitCode(0),
            duration_ms=DurationMs(result.duration_ms),
            output_digest=Digest(result.output_digest),
            at=now(),
        )
        if effect.response_schema is not None:
            # Judged here, acted on by the reducer: the role's report is collected once the
            # response is accepted.
            response = _read_response(self.layout.output("response"))
            return (succeeded, judged(role, response, effect.response_schema, now()))

        def accepted(facts: tuple[PipelineEvent, ...]) -> tuple[PipelineEvent, ...]:
            return (succeeded, *facts)

        def rejected(why: str) -> tuple[PipelineEvent, ...]:
            why = f"{why} (its output: {self.layout.relative(log)})"
            return invocation_failed(effect, ErrorKind.OUTPUT_REJECTED, why, now(), retriable=True)

        return unwrap_or_failure(read_report(effect, self.layout, now).map(accepted).alt(rejected))


def _count(value: int | None) -> Count | None:
    """A figure an agent printed, as a count (a negative or absurd one is not kept)."""
    return Count(value) if value is not None and 0 <= value <= MAX_COUNT else None


def _cost(
    figures: UsageFigures, price: Price | None, output_format: str | None, model: str | None
) -> tuple[Usd | None, CostSource, str]:
    """The invocation's cost, where it comes from, and a note when it is unknown."""
    reported = figures.cost_usd
    if reported is not None and math.isfinite(reported) and 0 <= reported <= 1e9:
        return Usd(reported), CostSource.REPORTED, ""
    tokens = (figures.input_tokens, figures.output_tokens)
    if price is not None and all(t is not None for t in tokens):
        cost = price.cost(
            figures.input_tokens or 0,
            figures.output_tokens or 0,
            figures.cache_read_tokens or 0,
            figures.cache_write_tokens or 0,
        )
        return Usd(cost), CostSource.ESTIMATED, ""
    if output_format is None:
        return None, CostSource.UNKNOWN, "no output_format: ralph cannot read this agent's usage"
    if model is None:
        return None, CostSource.UNKNOWN, "no cost reported and the model is unknown"
    if price is None:
        return None, CostSource.UNKNOWN, f'no cost reported and no [prices."{model}"] entry'
    return None, CostSource.UNKNOWN, "no cost reported and no token counts to price"


def _read_response(path: Path) -> str:
    """The agent's structured response as text ("" when it wrote none), read as a report is
    (:func:`read_own`): a link to a secret the sandbox hides would put it in the log."""
    try:
        return read_own(path).decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    except (OSError, ValueError) as error:
        # ValueError: a link or no regular file (UnsafeFileError), or over 1 MiB
        return f"(the response could not be read: {error})"


def _argv(
    template: tuple[str, ...], via: PromptVia, prompt: bytes, prompt_path: Path
) -> tuple[tuple[str, ...] | None, bytes | None]:
    """The argv with placeholders filled, and what goes to stdin; ``None`` argv: impossible."""
    if via is PromptVia.STDIN:
        return tuple(a.replace("{prompt_file}", str(prompt_path)) for a in template), prompt
    if via is PromptVia.FILE:
        if any("{prompt_file}" in a for a in template):
            return tuple(a.replace("{prompt_file}", str(prompt_path)) for a in template), None
        return (*template, str(prompt_path)), None
    if len(prompt) > MAX_ARGUMENT_BYTES:
        return None, None
    text = prompt.decode("utf-8", "surrogateescape")
    if "{prompt}" in template:
        return tuple(text if a == "{prompt}" else a for a in template), None
    return (*template, text), None


def _log_name(effect: InvokeAgent) -> str:
    sequence = effect.effect_id.rpartition(":")[2]
    agent = re.sub(r"[^\w.-]", "_", effect.agent)
    return f"{sequence}-{effect.role.value}-{agent}-{effect.attempt}"


def limit_of(
    role: Role, agent: AgentName, output_format: str | None, log: Path, tail: bytes, at: Instant
) -> ProviderLimited | None:
    """``ProviderLimited`` when the invocation of ``agent`` in ``role`` (its output in
    ``log``, ending with ``tail``, colours removed) ended on its provider's limit: as its
    format's structured output says, or, for a format with none, as its last words do."""
    # A CLI names a reset as a time of day in the machine's zone ("try again at 9:21 PM").
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    signal = read_limit(output_format, log, at, zone)
    if signal is None and is_rate_limited(tail):
        signal = text_limit(output_format, last_line(tail))
    if signal is None:
        return None
    resets_at = None if signal.resets_at is None else Instant(signal.resets_at)
    return ProviderLimited(
        role=role,
        agent=agent,
        scope=signal.scope,
        resets_at=resets_at,
        window=signal.window,
        source=signal.source,
        message=signal.message or last_line(tail),
        at=at,
    )


def window_of(
    role: Role, agent: AgentName, output_format: str | None, log: Path, at: Instant
) -> tuple[UsageWindowReported, ...]:
    """``UsageWindowReported`` when the invocation's output told how full its provider's
    usage windows are (the fullest one), else nothing."""
    found = read_window(output_format, log)
    if found is None:
        return ()
    resets_at = None if found.resets_at is None else Instant(found.resets_at)
    return (
        UsageWindowReported(
            role=role,
            agent=agent,
            window=found.window,
            utilization=found.utilization,
            resets_at=resets_at,
            at=at,
        ),
    )
